package agenttest_test

import (
	"strings"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Noted is what the "note" step makes of an answer; it does not end the
// run, so a second answer finds the run open.
type Noted struct {
	event.ControlEvent
	Text string `json:"text"`
}

func init() { event.MustRegister[Noted]() }

// asker is a run that asks one question at its start and notes each answer
// step "note" is given.
func asker(t *testing.T, opts ...agenttest.Option) (*agenttest.Harness, *agenttest.Result, *event.HumanInTheLoopInputRequestEvent) {
	t.Helper()
	ask := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.HumanInTheLoopInputRequestEvent, error) {
		req := &event.HumanInTheLoopInputRequestEvent{}
		req.Question, req.HITLType = "Name?", event.HITLInput
		req.Topic = &event.Topic{EventType: event.Str(string(topic.Control)), EventName: event.Str("HumanInTheLoopInputResponseEvent")}
		return req, nil
	}, step.Name("ask"))
	note := step.New(func(ctx step.Context, r *event.HumanInTheLoopInputResponseEvent) (*Noted, error) {
		return &Noted{Text: r.Response}, nil
	}, step.Name("note"))
	h := agenttest.New(t, mustPartial(t, "Asker", ask, note), opts...)
	res := h.Start(&event.StartEvent{})
	reqs := res.Get("HumanInTheLoopInputRequestEvent")
	if len(reqs) != 1 {
		t.Fatalf("%d requests after the start, want 1", len(reqs))
	}
	return h, res, reqs[0].(*event.HumanInTheLoopInputRequestEvent)
}

func answerInput(req *event.HumanInTheLoopInputRequestEvent, text string) *event.HumanInTheLoopInputResponseEvent {
	return &event.HumanInTheLoopInputResponseEvent{Response: text, RequestEvent: req}
}

// refused checks that the run dead-lettered exactly want more messages,
// the last naming reason, and ran nothing beyond steps.
func refused(t *testing.T, res *agenttest.Result, want int, reason string, steps ...string) {
	t.Helper()
	dead := res.DeadLetters()
	if len(dead) != want {
		t.Fatalf("%d dead letters %+v, want %d", len(dead), dead, want)
	}
	if !strings.Contains(dead[want-1].Reason, reason) || !strings.Contains(dead[want-1].Reason, "refused") {
		t.Errorf("dead letter reason %q does not name %q", dead[want-1].Reason, reason)
	}
	agenttest.Equal(t, res.Steps(), steps)
}

// The probe's hijack: an answer naming another user's run, on a thread of
// the sender's own, is refused; nothing is published and the question stays
// open for its owner.
func TestHijackedAnswerIsRefused(t *testing.T) {
	h, res, req := asker(t)
	mallory := res.Topic()
	mallory.Thread = h.NewID()
	before := len(res.Events())
	hijack := answerInput(req, "Mallory")
	h.SendOn(mallory, hijack)
	refused(t, res, 1, "thread_id", "ask")
	for _, p := range res.Events()[before:] {
		if p.Event.EventBase().EventID != hijack.EventID {
			t.Fatalf("%s published after the hijacking answer", p.Topic)
		}
	}
	h.Send(res, answerInput(req, "Ada"))
	agenttest.Equal(t, res.Steps(), []string{"ask", "note"})
	if got := res.Get("Noted"); len(got) != 1 || got[0].(*Noted).Text != "Ada" {
		t.Fatalf("Noted %v, want the owner's answer", got)
	}
}

// A forged agent id in the subject, or a forged agent_class or agent_id in
// the answer's request topic, is refused.
func TestForgedIdentityIsRefused(t *testing.T) {
	h, res, req := asker(t)
	other := res.Topic()
	other.ID = "other-agent"
	h.SendOn(other, answerInput(req, "x"))
	refused(t, res, 1, "agent_id", "ask")

	for i, forge := range []func(*event.Topic){
		func(tp *event.Topic) { tp.AgentClass = event.Str("OtherClass") },
		func(tp *event.Topic) { tp.AgentID = event.Str("other-agent") },
		func(tp *event.Topic) { tp.ThreadID = event.Str(h.NewID()) },
	} {
		forged := *req
		tp := *req.Topic
		forge(&tp)
		forged.Topic = &tp
		h.Send(res, answerInput(&forged, "x"))
		refused(t, res, 2+i, "request_event.topic.", "ask")
	}
	if n := res.Count("Noted"); n != 0 {
		t.Fatalf("%d Noted published for forged answers", n)
	}
}

// Only an open question can be answered: not one the run never asked, and
// not one answered already. A redelivery of the accepted answer is the same
// answer and runs nothing again.
func TestAnswerNeedsAnOpenQuestion(t *testing.T) {
	h, res, req := asker(t)
	unasked := *req
	unasked.EventID = h.NewID()
	h.Send(res, answerInput(&unasked, "x"))
	refused(t, res, 1, "not a question run", "ask")

	first := answerInput(req, "Ada")
	h.Send(res, first)
	h.Send(res, answerInput(req, "Eve"))
	refused(t, res, 2, "answered already", "ask", "note")

	h.Redeliver(res, first.EventID)
	agenttest.Equal(t, res.Steps(), []string{"ask", "note"})
	agenttest.Equal(t, len(res.DeadLetters()), 2)
	if got := res.Get("Noted"); len(got) != 1 || got[0].(*Noted).Text != "Ada" {
		t.Fatalf("Noted %v, want the first answer only", got)
	}
}

// A start or stop event naming a live run from another thread is refused:
// the run neither restarts nor ends.
func TestStartAndStopFromAnotherThreadAreRefused(t *testing.T) {
	h, res, req := asker(t)
	mallory := res.Topic()
	mallory.Thread = h.NewID()
	h.SendOn(mallory, &event.StartEvent{})
	refused(t, res, 1, "thread_id", "ask")
	h.SendOn(mallory, &event.StopEvent{})
	refused(t, res, 2, "thread_id", "ask")
	if res.Ended() != "" || len(res.Teardowns()) != 0 {
		t.Fatalf("run ended %q, teardowns %v: a foreign stop tore it down", res.Ended(), res.Teardowns())
	}
	h.Send(res, answerInput(req, "Ada"))
	agenttest.Equal(t, res.Steps(), []string{"ask", "note"})
}

// The fence holds after the run's cache entry is evicted: the identity and
// the open question are read from the store.
func TestFenceAfterEviction(t *testing.T) {
	h, res, req := asker(t, agenttest.WithCacheSize(1))
	h.Start(&event.StartEvent{}) // another run takes the only cache slot
	if h.Cached(res.RunID()) {
		t.Fatal("the first run is still cached")
	}
	mallory := res.Topic()
	mallory.Thread = h.NewID()
	h.SendOn(mallory, answerInput(req, "Mallory"))
	refused(t, res, 1, "thread_id", "ask")
	h.Send(res, answerInput(req, "Ada"))
	agenttest.Equal(t, res.Steps(), []string{"ask", "note"})
}
