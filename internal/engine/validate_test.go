package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// A returned event the reference would refuse is never published: the run
// ends with an ExceptionEvent naming the step, the event and the field,
// even under continue-on-error.
func TestInvalidOutputEndsTheRun(t *testing.T) {
	for name, opts := range map[string][]step.Option{
		"stop on error":     {step.Name("decide")},
		"continue on error": {step.Name("decide"), step.ContinueOnError()},
	} {
		t.Run(name, func(t *testing.T) {
			s := step.New(func(ctx step.Context, in *In) (*event.RAGFailureStopEvent, error) {
				return &event.RAGFailureStopEvent{Reason: "no idea"}, nil
			}, opts...)
			h := agenttest.New(t, partial(t, "Invalid", s))
			res := h.Start(&In{})
			agenttest.Equal(t, res.Count("RAGFailureStopEvent"), 0)
			exc, ok := res.Terminal().(*event.ExceptionEvent)
			if !ok {
				t.Fatalf("terminal = %#v, want an ExceptionEvent", res.Terminal())
			}
			for _, want := range []string{"step decide", "RAGFailureStopEvent", "field reason", `"no idea"`} {
				if !strings.Contains(exc.Message, want) {
					t.Errorf("message %q does not say %s", exc.Message, want)
				}
			}
			agenttest.Equal(t, exc.HTTPStatusCode, 500)
		})
	}
}

// An emitted display event that fails validation is not published; Emit
// says why, and the run ends even though the step ignored the error.
func TestInvalidEmitEndsTheRun(t *testing.T) {
	var emitErr error
	s := step.New(func(ctx step.Context, in *In) (*Out, error) {
		if err := ctx.Emit(&event.ChunkEvent{Content: "ok"}); err != nil {
			return nil, err
		}
		emitErr = ctx.Emit(&event.RouteOptions{Name: "no event"})
		return &Out{}, nil
	}, step.Name("stream"))
	h := agenttest.New(t, partial(t, "InvalidEmit", s))
	res := h.Start(&In{})
	var ve *event.ValidationError
	if !errors.As(emitErr, &ve) || ve.Event != "RouteOptions" || ve.Field != "event" || !errors.Is(emitErr, event.ErrInvalid) {
		t.Fatalf("Emit = %v, want a ValidationError on RouteOptions.event", emitErr)
	}
	agenttest.Equal(t, res.Count("RouteOptions"), 0)
	agenttest.Equal(t, res.Count("Out"), 0)
	agenttest.Equal(t, len(res.Get("ChunkEvent")), 1)
	exc, ok := res.Terminal().(*event.ExceptionEvent)
	if !ok || !strings.Contains(exc.Message, "step stream") || !strings.Contains(exc.Message, "field event") {
		t.Fatalf("terminal = %#v, want an ExceptionEvent about RouteOptions.event", res.Terminal())
	}
}

// A request built as a bare struct literal goes out as the reference's
// factory builds it: hitl_type and the reply topic are filled.
func TestHITLRequestLiteralIsComplete(t *testing.T) {
	s := step.New(func(ctx step.Context, in *In) (*event.HumanInTheLoopChatRequestEvent, error) {
		req := &event.HumanInTheLoopChatRequestEvent{}
		req.Question = "which one?"
		return req, nil
	}, step.Name("ask"))
	h := agenttest.New(t, partial(t, "HitlLiteral", s))
	res := h.Start(&In{})
	if res.Terminal() != nil {
		t.Fatalf("the run ended: %#v", res.Terminal())
	}
	reqs := res.Get("HumanInTheLoopChatRequestEvent")
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	data, err := event.Marshal(reqs[0])
	if err != nil {
		t.Fatal(err)
	}
	back, err := event.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	req := back.(*event.HumanInTheLoopChatRequestEvent)
	if req.HITLType != event.HITLChat || req.Topic == nil || req.Topic.EventName == nil ||
		*req.Topic.EventName != "HumanInTheLoopChatResponseEvent" || *req.Topic.EventType != "control_event" ||
		req.Topic.RunID == nil || *req.Topic.RunID != res.RunID() {
		t.Errorf("request on the wire: %s", data)
	}
}
