package agenttest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// Counts reports the counters a start step saw (scenario 33).
type Counts struct {
	event.ControlEvent
	Thread int64 `json:"thread"`
	Run    int64 `json:"run"`
}

func init() { event.MustRegister[Counts]() }

func TestScenario33_RunContextPerRunThreadContextPerThread(t *testing.T) {
	start := step.New(func(ctx step.Context, _ *event.StartEvent) ([]event.Event, error) {
		th, err := ctx.ThreadState().Incr(ctx, "count", 1)
		if err != nil {
			return nil, err
		}
		run, err := ctx.RunState().Incr(ctx, "count", 1)
		if err != nil {
			return nil, err
		}
		return []event.Event{&Counts{Thread: th, Run: run}, &event.StopEvent{}}, nil
	}, step.Name("start"), step.Emits(&Counts{}, &event.StopEvent{}))
	h := agenttest.New(t, mustWorkflow(t, "Context", start))
	thread := h.NewID()
	var got [][2]int64
	for range 2 {
		res := h.Start(&event.StartEvent{}, agenttest.Thread(thread))
		c := res.Get("Counts")[0].(*Counts)
		got = append(got, [2]int64{c.Thread, c.Run})
	}
	agenttest.Equal(t, got, [][2]int64{{1, 1}, {2, 1}})
}

func TestScenario37_ValidationRefusals(t *testing.T) {
	mk := func(name string) *step.Step {
		return step.New(func(ctx step.Context, _ *event.StartEvent) (*event.StopEvent, error) { return &event.StopEvent{}, nil },
			step.Name(name))
	}
	t.Run("two steps with the same name", func(t *testing.T) {
		_, err := step.NewWorkflow("Dup", mk("x"), mk("x"))
		var ve *step.ValidationError
		if !errors.As(err, &ve) || !ve.Has(step.CheckDuplicate) {
			t.Fatalf("NewWorkflow = %v, want a duplicate-name problem", err)
		}
		if !strings.Contains(err.Error(), "two steps are named 'x'") {
			t.Fatalf("error %q does not say \"two steps are named 'x'\"", err)
		}
	})
	t.Run("all problems at once, each with a hint", func(t *testing.T) {
		takesStop := step.New(func(ctx step.Context, s *event.StopEvent) error { return nil }, step.Name("y"))
		waits := step.New(func(ctx step.Context, x *X) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("z"))
		_, err := step.NewWorkflow("Many", mk("x"), mk("x"), takesStop, waits)
		var ve *step.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("NewWorkflow = %v, want a *step.ValidationError", err)
		}
		for _, c := range []step.Check{step.CheckDuplicate, step.CheckStopInput, step.CheckNoProducer} {
			if !ve.Has(c) {
				t.Errorf("problem %s missing from %v", c, err)
			}
		}
		for _, p := range ve.Problems {
			if p.Hint == "" {
				t.Errorf("problem %q has no hint", p.Message)
			}
		}
		if !strings.HasPrefix(err.Error(), "Many cannot run:\n- ") {
			t.Errorf("error starts %q, want \"Many cannot run:\\n- \"", err.Error()[:min(len(err.Error()), 30)])
		}
	})
}

func TestScenario38_RequiredInputNobodyProduces(t *testing.T) {
	start := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.StopEvent, error) { return &event.StopEvent{}, nil },
		step.Name("start"))
	required := step.New(func(ctx step.Context, x *X) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("s"))
	_, err := step.NewWorkflow("Stall", start, required)
	var ve *step.ValidationError
	if !errors.As(err, &ve) || !ve.Has(step.CheckNoProducer) {
		t.Fatalf("NewWorkflow = %v, want a no-producer problem", err)
	}
	want := "waits for 'arg1: X', but no step on Stall produces it, so the run would stall there"
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not contain %q", err, want)
	}

	optional := step.New(func(ctx step.Context, _ *event.StartEvent, x step.Maybe[*X]) (*event.StopEvent, error) {
		return &event.StopEvent{}, nil
	}, step.Name("s"))
	if _, err := step.NewWorkflow("Stall", optional); err != nil {
		t.Fatalf("with an optional X: %v, want accepted", err)
	}
}

func TestScenario41_UnregisteredSubclasses(t *testing.T) {
	raw := func(h *agenttest.Harness, name string, parents ...string) []byte {
		ps, _ := json.Marshal(parents)
		return fmt.Appendf(nil, `{"_event_name":%q,"_parent_event_names":%s,"event_id":%q,"created_at":%d,"extra":1}`,
			name, ps, h.NewID(), agenttest.Epoch.UnixNano())
	}
	t.Run("unknown stop subclass ends the run", func(t *testing.T) {
		s := step.New(func(ctx step.Context, a *A) (*X, error) { return &X{}, nil }, step.Name("s"))
		h := agenttest.New(t, mustPartial(t, "FooStopper", s))
		res := h.Start(&A{})
		h.SendRaw(res, raw(h, "FooStop", "FooStop", "StopEvent", "ControlAndDisplayEvent", "ControlEvent", "DisplayEvent"))
		agenttest.Equal(t, res.Ended(), "completed")
		if n := len(res.Teardowns()); n != 1 {
			t.Fatalf("%d teardowns, want 1", n)
		}
	})
	t.Run("unknown subclass of an input type never triggers", func(t *testing.T) {
		s := step.New(func(ctx step.Context, a *A) (*X, error) { return &X{}, nil }, step.Name("s"))
		h := agenttest.New(t, mustPartial(t, "FooA", s))
		res := h.Start(&B{})
		h.SendRaw(res, raw(h, "FooA", "FooA", "A", "ControlEvent"))
		agenttest.Equal(t, res.Executions(), []agenttest.Execution(nil))
		// It is in the run's history all the same, under its own name.
		foo := res.Get("FooA")
		if len(foo) != 1 || !event.IsFallback(foo[0]) || !event.Has(foo[0], "A") {
			t.Fatalf("published FooA = %v, want one fallback event with parent A", foo)
		}
	})
}
