package engine_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Each stored output names the step that produced it and the event it ran
// on, also when two steps emit the same event type on one trigger: a
// reader of the stream cannot tell them apart from the workflow graph.
func TestOutputsCarryTheirOrigin(t *testing.T) {
	a := step.New(func(ctx step.Context, in *In) (*Out, error) { return &Out{}, nil }, step.Name("a"))
	b := step.New(func(ctx step.Context, in *In) (*Out, error) { return &Out{}, nil }, step.Name("b"))
	h := agenttest.New(t, partial(t, "Origin", a, b))
	res := h.Start(&In{})
	if n := res.Count("Out"); n != 2 {
		t.Fatalf("%d Out, want 2", n)
	}
	trigger := res.IDs("In")[0]
	filter, err := topic.AgentPattern{Class: "Origin", Run: res.RunID(), Type: topic.Control, Name: "Out"}.Subject()
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for seq := uint64(1); ; {
		m, err := h.Bus().NextMsg(t.Context(), topic.StreamName("Origin"), filter, seq)
		if errors.Is(err, bus.ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		seq = m.Seq + 1
		steps = append(steps, m.Header.Get(bus.HeaderStep))
		if got := m.Header.Get(bus.HeaderTrigger); got != trigger {
			t.Errorf("%s: trigger %q, want the In %s", m.Subject, got, trigger)
		}
		if m.Header.Get(bus.HeaderRerun) != "" {
			t.Errorf("%s: marked as a re-run; the step ran once", m.Subject)
		}
	}
	slices.Sort(steps)
	agenttest.Equal(t, steps, []string{"a", "b"})
}
