package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// greeter asks the user's name and ends the run with the answer.
type greeter struct{ class string }

func (g *greeter) Class() string { return g.class }

func (g *greeter) Steps() []*step.Step {
	return []*step.Step{step.New(g.Ask), step.New(g.Greet)}
}

func (g *greeter) Ask(ctx step.Context, _ *event.UserMessageEvent) (*event.HumanInTheLoopInputRequestEvent, error) {
	req := &event.HumanInTheLoopInputRequestEvent{}
	req.Question, req.HITLType = "What is your name?", event.HITLInput
	req.Topic = &event.Topic{EventType: event.Str(string(topic.Control)), EventName: event.Str("HumanInTheLoopInputResponseEvent")}
	return req, nil
}

func (g *greeter) Greet(ctx step.Context, r *event.HumanInTheLoopInputResponseEvent) (*event.StopEvent, error) {
	return &event.StopEvent{}, nil
}

// TestHijackedAnswerIsDeadLettered: over JetStream, an answer to another
// user's question, posted on the sender's own thread with the other run's
// id, is dead-lettered with the reason and changes nothing; the owner's
// answer then ends the run.
func TestHijackedAnswerIsDeadLettered(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("Fence")
	w := watch(t, c, class)
	startRunner(t, &greeter{class: class}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))

	dl := bus.DefaultDeadLetters()
	letters := make(chan *bus.Msg, 4)
	sub, err := c.Subscribe(context.Background(), dl.Subject(">"), "", func(m *bus.Msg) { letters <- m })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	alice := newRun(class, "wiki")
	publish(t, c, alice, userMessage("hi"), nil)
	evs := w.until(t, alice.Run, "the question", func(evs []event.Event) bool {
		return count(evs, "HumanInTheLoopInputRequestEvent") == 1
	})
	var req *event.HumanInTheLoopInputRequestEvent
	for _, e := range evs {
		if r, ok := e.(*event.HumanInTheLoopInputRequestEvent); ok {
			req = r
		}
	}

	mallory := alice
	mallory.Thread = event.NewID()
	publish(t, c, mallory, &event.HumanInTheLoopInputResponseEvent{Response: "Mallory", RequestEvent: req}, nil)
	select {
	case m := <-letters:
		reason := m.Header.Get(bus.HeaderDeadLetterReason)
		if !strings.Contains(m.Subject, mallory.Thread) || !strings.Contains(reason, "thread_id") {
			t.Fatalf("dead letter %s with reason %q, want the hijacking answer refused for its thread_id", m.Subject, reason)
		}
	case <-time.After(waitLong):
		t.Fatal("the hijacking answer was not dead-lettered")
	}
	if term := findTerminal(w.of(alice.Run)); term != nil {
		t.Fatalf("the hijacking answer ended the run with %s", event.Name(term))
	}

	publish(t, c, alice, &event.HumanInTheLoopInputResponseEvent{Response: "Ada", RequestEvent: req}, nil)
	if !event.IsStop(w.terminal(t, alice.Run)) {
		t.Fatal("the owner's answer did not end the run")
	}
	select {
	case m := <-letters:
		t.Fatalf("unexpected dead letter %s: %s", m.Subject, m.Header.Get(bus.HeaderDeadLetterReason))
	default:
	}
}
