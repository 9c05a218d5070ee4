package agenttest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// A cancelled run asks the delegate run it waits for to stop, once however
// often it is cancelled, with the caller's reason and requester, on the
// delegate run's own control subject.
func TestCancelReachesDelegate(t *testing.T) {
	ask := step.New(func(ctx step.Context, m *event.UserMessageEvent) (*event.AgentInTheLoopRequestEvent, error) {
		return hitl.Delegate("Helper", "h1", &event.UserMessageEvent{User: &event.UserIdentity{}})
	}, step.Name("ask"))
	done := step.New(func(ctx step.Context, r *event.AgentInTheLoopResponseEvent) (*event.StopEvent, error) {
		return &event.StopEvent{}, nil
	}, step.Name("done"))
	w, err := step.NewWorkflow("Boss", ask, done)
	if err != nil {
		t.Fatal(err)
	}
	h := agenttest.New(t, w)
	ctx := context.Background()
	if err := h.Bus().EnsureStream(ctx, bus.AgentStream("Helper")); err != nil {
		t.Fatal(err)
	}
	res := h.Start(&event.UserMessageEvent{User: &event.UserIdentity{}})
	reqs := res.Get("AgentInTheLoopRequestEvent")
	if len(reqs) != 1 {
		t.Fatalf("run published %v", res.Names())
	}
	dt, err := hitl.DelegateTopic(res.Topic(), reqs[0].(*event.AgentInTheLoopRequestEvent))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		h.Send(res, &event.RunCancelRequestedEvent{Reason: "stop it", RequestedBy: "u1"})
	}
	if term := res.Terminal(); term == nil || event.Name(term) != "RunCancelledEvent" {
		t.Fatalf("caller ended with %v", res.Names())
	}
	var got []*event.RunCancelRequestedEvent
	for seq := uint64(1); ; {
		m, err := h.Bus().NextMsg(ctx, topic.StreamName("Helper"), "agent.Helper.>", seq)
		if errors.Is(err, bus.ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seq = m.Seq + 1
		tp, err := topic.ParseAgent(m.Subject)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := event.Unmarshal(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		c, ok := ev.(*event.RunCancelRequestedEvent)
		if !ok {
			continue
		}
		if tp.ID != dt.ID || tp.Thread != dt.Thread || tp.Run != dt.Run || tp.Type != topic.Control {
			t.Errorf("cancel request on %s, want the delegate run %+v", m.Subject, dt)
		}
		got = append(got, c)
	}
	if len(got) != 1 || got[0].Reason != "stop it" || got[0].RequestedBy != "u1" {
		t.Fatalf("delegate got cancel requests %+v, want one with the caller's reason and requester", got)
	}
}
