package agenttest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Greeting ends the HITL run.
type Greeting struct {
	event.StopEvent
	Text string `json:"text"`
}

func init() { event.MustRegister[Greeting]() }

// A HITL round trip: the run asks, waits with nothing running, and the
// harness sends the human's answer into it.
func TestHITLRoundTrip(t *testing.T) {
	ask := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.HumanInTheLoopInputRequestEvent, error) {
		req := &event.HumanInTheLoopInputRequestEvent{}
		req.Question = "What is your name?"
		req.HITLType = "input"
		req.Topic = &event.Topic{EventType: event.Str(string(topic.Control)), EventName: event.Str("HumanInTheLoopInputResponseEvent")}
		return req, nil
	}, step.Name("ask"))
	greet := step.New(func(ctx step.Context, r *event.HumanInTheLoopInputResponseEvent) (*Greeting, error) {
		return &Greeting{Text: "Hello, " + r.Response}, nil
	}, step.Name("greet"))
	h := agenttest.New(t, mustWorkflow(t, "Greeter", ask, greet))
	res := h.Start(&event.StartEvent{})

	reqs := res.Get("HumanInTheLoopInputRequestEvent")
	if len(reqs) != 1 || res.Terminal() != nil {
		t.Fatalf("after the start: %d requests, terminal %v; want one request and a waiting run", len(reqs), res.Terminal())
	}
	req := reqs[0].(*event.HumanInTheLoopInputRequestEvent)
	if req.Topic.RunID == nil || *req.Topic.RunID != res.RunID() {
		t.Fatalf("request topic %+v does not name the run %s", req.Topic, res.RunID())
	}
	// The request is on both subjects: control (it is a control event) and display.
	if n := len(res.Display()); n != 2 { // the StartEvent and the request
		t.Fatalf("%d display messages, want 2", n)
	}

	h.Send(res, &event.HumanInTheLoopInputResponseEvent{Response: "Ada", RequestEvent: req})
	g, ok := res.Terminal().(*Greeting)
	if !ok || g.Text != "Hello, Ada" {
		t.Fatalf("terminal = %#v, want Greeting \"Hello, Ada\"", res.Terminal())
	}
	agenttest.Equal(t, res.Steps(), []string{"ask", "greet"})
	agenttest.Equal(t, res.Ended(), "completed")
}
