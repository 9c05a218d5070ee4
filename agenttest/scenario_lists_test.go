package agenttest_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

func TestScenario12_ListRetriggersOnEveryArrival(t *testing.T) {
	start := step.New(func(ctx step.Context, _ *event.StartEvent) ([]*R, error) {
		rs := []*R{{N: 1}, {N: 2}, {N: 3}}
		for i, r := range rs { // created_at runs backwards: only stream order may count
			r.CreatedAt = int64(1000 - i)
		}
		return rs, nil
	}, step.Name("start"))
	var seen [][]int
	agg := step.New(func(ctx step.Context, rs []*R) (*Y, error) {
		var ns []int
		for _, r := range rs {
			ns = append(ns, r.N)
		}
		seen = append(seen, ns)
		return &Y{Len: len(rs)}, nil
	}, step.Name("agg"))
	h := agenttest.New(t, mustPartial(t, "ListAgg", start, agg))
	res := h.Start(&event.StartEvent{})

	r := res.IDs("R")
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "start", Inputs: res.IDs("StartEvent")},
		{Step: "agg", Inputs: r[:1]},
		{Step: "agg", Inputs: r[:2]},
		{Step: "agg", Inputs: r[:3]},
	})
	var lens []int
	for _, y := range res.Get("Y") {
		lens = append(lens, y.(*Y).Len)
	}
	agenttest.Equal(t, lens, []int{1, 2, 3})
	// Each list in stream order, whatever created_at says.
	agenttest.Equal(t, seen, [][]int{{1}, {1, 2}, {1, 2, 3}})
}

func TestScenario13_ListNeedsOneElement(t *testing.T) {
	s := step.New(func(ctx step.Context, rs []*R, a *A) (*X, error) { return &X{}, nil }, step.Name("s"))
	h := agenttest.New(t, mustPartial(t, "ListRequired", s))
	res := h.Start(&A{})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution(nil))
	h.Send(res, &R{})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "s", Inputs: append(res.IDs("R"), res.IDs("A")...)},
	})
}

// barrierConfig is the agent configuration of scenario 14.
type barrierConfig struct {
	N int `json:"n"`
}

type barrierResolver struct{ calls int }

func (r *barrierResolver) Resolve(ctx context.Context, run step.Run) (json.RawMessage, error) {
	r.calls++
	return json.RawMessage(`{"n":5}`), nil
}

func (r *barrierResolver) Decode(raw json.RawMessage) (any, error) {
	var c barrierConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

func TestScenario14_PreconditionBarrierFromConfig(t *testing.T) {
	start := step.New(func(ctx step.Context, _ *event.StartEvent) ([]*P, error) {
		return []*P{{}, {}, {}, {}, {}}, nil
	}, step.Name("start"))
	var checks []int
	stop := step.New(func(ctx step.Context, ps []*P) (*event.StopEvent, error) { return &event.StopEvent{}, nil },
		step.Name("stop"),
		step.Precondition(func(ctx step.Context, ps []*P) (bool, error) {
			cfg, ok := step.Config[*barrierConfig](ctx)
			if !ok {
				return false, errors.New("no configuration")
			}
			checks = append(checks, len(ps))
			return len(ps) == cfg.N, nil
		}))
	h := agenttest.New(t, mustWorkflow(t, "Barrier", start, stop),
		agenttest.WithConfigResolver(&barrierResolver{}))
	res := h.Start(&event.StartEvent{})

	agenttest.Equal(t, checks, []int{1, 2, 3, 4, 5})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "start", Inputs: res.IDs("StartEvent")},
		{Step: "stop", Inputs: res.IDs("P")},
	})
	agenttest.Equal(t, res.Count("StopEvent"), 1)
	agenttest.Equal(t, res.Ended(), "completed")
}

func TestScenario15_FalsePreconditionLeavesNoTrace(t *testing.T) {
	s := sAB(step.Precondition(func(ctx step.Context, a *A, b step.Maybe[*B]) (bool, error) { return b.OK, nil }))
	h := agenttest.New(t, mustPartial(t, "FalsePre", s))
	res := h.Start(&A{})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution(nil))
	n, err := h.Store().Count(t.Context(), res.RunKey(), "s")
	if err != nil || n != 0 {
		t.Fatalf("after a false precondition: counter = %d, %v; want 0 (no record)", n, err)
	}
	h.Send(res, &B{})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "s", Inputs: append(res.IDs("A"), res.IDs("B")...)},
	})
}

func TestScenario16_PreconditionAfterAvailabilityAndMax(t *testing.T) {
	t.Run("not called while a required input is missing", func(t *testing.T) {
		calls := 0
		s := step.New(func(ctx step.Context, a *A, b *B) (*X, error) { return &X{}, nil }, step.Name("s"),
			step.Precondition(func(ctx step.Context, a *A, b *B) (bool, error) { calls++; return true, nil }))
		h := agenttest.New(t, mustPartial(t, "PreAfterR1", s))
		res := h.Start(&A{})
		agenttest.Equal(t, calls, 0)
		agenttest.Equal(t, res.Executions(), []agenttest.Execution(nil))
	})
	t.Run("not called once max executions is reached", func(t *testing.T) {
		calls := 0
		s := step.New(func(ctx step.Context, a *A) (*X, error) { return &X{}, nil }, step.Name("s"),
			step.MaxExecutions(1),
			step.Precondition(func(ctx step.Context, a *A) (bool, error) { calls++; return true, nil }))
		h := agenttest.New(t, mustPartial(t, "PreAfterMax", s))
		res := h.Start(&A{})
		agenttest.Equal(t, calls, 1)
		h.Send(res, &A{})
		agenttest.Equal(t, calls, 1)
		agenttest.Equal(t, res.Steps(), []string{"s"})
	})
}

// ToolLoop-like events of scenario 17.
type (
	Decision struct {
		event.ControlEvent
		Calls     []string `json:"calls"`
		Iteration int      `json:"iteration"`
	}
	ToolResult struct {
		event.ControlEvent
		CallID string `json:"call_id"`
	}
	Iteration struct {
		event.ControlEvent
		N int `json:"n"`
	}
	Joined struct {
		event.ControlEvent
		Results []string `json:"results"`
	}
)

func init() {
	event.MustRegister[Decision]()
	event.MustRegister[ToolResult]()
	event.MustRegister[Iteration]()
	event.MustRegister[Joined]()
}

func TestScenario17_JoinOncePerIteration(t *testing.T) {
	var preCalls int
	join := step.New(func(ctx step.Context, d *Decision, rs []*ToolResult) (*Joined, error) {
		j := &Joined{}
		for _, r := range rs {
			j.Results = append(j.Results, r.CallID)
		}
		return j, nil
	}, step.Name("join"),
		step.Precondition(func(ctx step.Context, d *Decision, rs []*ToolResult, its step.Maybe[[]*Iteration]) (bool, error) {
			preCalls++
			for _, it := range its.Value {
				if it.N > d.Iteration {
					return false, nil // a later iteration exists: D#1 is done
				}
			}
			for _, c := range d.Calls {
				if !slices.ContainsFunc(rs, func(r *ToolResult) bool { return r.CallID == c }) {
					return false, nil
				}
			}
			return true, nil
		}))
	if got := join.Triggers(); !slices.Equal(got, []string{"Decision", "ToolResult"}) {
		t.Fatalf("join triggers = %q: Iteration is for the precondition only", got)
	}
	h := agenttest.New(t, mustPartial(t, "ToolLoop", join))
	res := h.Start(&Decision{Calls: []string{"c1", "c2"}, Iteration: 0})
	agenttest.Equal(t, preCalls, 0) // no result yet: the list is required
	h.Send(res, &ToolResult{CallID: "c1"})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution(nil))
	h.Send(res, &ToolResult{CallID: "c2"})
	results := res.IDs("ToolResult")
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "join", Inputs: append(res.IDs("Decision"), results...)},
	})
	agenttest.Equal(t, res.Get("Joined")[0].(*Joined).Results, []string{"c1", "c2"})

	h.Send(res, &Iteration{N: 1})
	calls := preCalls
	h.Send(res, &ToolResult{CallID: "c1-late"})
	if preCalls != calls+1 {
		t.Fatalf("the precondition was called %d times for the late result, want 1", preCalls-calls)
	}
	agenttest.Equal(t, res.Count("Joined"), 1)
}

func TestScenario18_FixedListFanIn(t *testing.T) {
	start := step.New(func(ctx step.Context, _ *event.StartEvent) (*A, error) { return &A{}, nil }, step.Name("start"))
	fan := step.New(func(ctx step.Context, a *A) ([]*W, error) { return []*W{{N: 1}, {N: 2}}, nil }, step.Name("fan"))
	agg := step.New(func(ctx step.Context, ws [2]*W) (*event.StopEvent, error) {
		if ws[0].N != 1 || ws[1].N != 2 {
			return nil, errors.New("wrong order")
		}
		return &event.StopEvent{}, nil
	}, step.Name("agg"))
	h := agenttest.New(t, mustWorkflow(t, "FanOut", agg, fan, start))
	res := h.Start(&event.StartEvent{})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "start", Inputs: res.IDs("StartEvent")},
		{Step: "fan", Inputs: res.IDs("A")},
		{Step: "agg", Inputs: res.IDs("W")},
	})
	agenttest.Equal(t, res.Names(), []string{"StartEvent", "A", "W", "W", "StopEvent"})
	agenttest.Equal(t, res.Ended(), "completed")

	t.Run("surplus arrivals never rerun or crash", func(t *testing.T) {
		agg := step.New(func(ctx step.Context, ws [2]*W) (*X, error) { return &X{}, nil }, step.Name("agg"))
		h := agenttest.New(t, mustPartial(t, "FixedSurplus", agg))
		res := h.Start(&W{N: 1})
		h.Send(res, &W{N: 2})
		h.Send(res, &W{N: 3})
		h.Send(res, &W{N: 4})
		agenttest.Equal(t, res.Executions(), []agenttest.Execution{{Step: "agg", Inputs: res.IDs("W")[:2]}})
		if res.Terminal() != nil {
			t.Fatalf("terminal %s published: surplus must not crash the run", event.Name(res.Terminal()))
		}
	})
}

func TestScenario19_MaxExecutions(t *testing.T) {
	s := step.New(func(ctx step.Context, a *A) (*X, error) { return &X{}, nil }, step.Name("s"), step.MaxExecutions(1))
	h := agenttest.New(t, mustPartial(t, "Max", s))
	res := h.Start(&A{})
	h.Send(res, &A{})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{{Step: "s", Inputs: res.IDs("A")[:1]}})
	n, err := h.Store().Count(t.Context(), res.RunKey(), "s")
	if err != nil || n != 1 {
		t.Fatalf("counter = %d, %v; want 1", n, err)
	}
}

func TestScenario20_IdempotencyOnRedelivery(t *testing.T) {
	newHarness := func(t *testing.T) *agenttest.Harness {
		s := step.New(func(ctx step.Context, a *A) (*X, error) { return &X{}, nil }, step.Name("s"))
		all := step.New(func(ctx step.Context, as []*A) (*Y, error) { return &Y{Len: len(as)}, nil }, step.Name("t"))
		return agenttest.New(t, mustPartial(t, "Redelivery", s, all))
	}
	t.Run("same delivery again", func(t *testing.T) {
		h := newHarness(t)
		res := h.Start(&A{})
		a := res.IDs("A")[0]
		h.Redeliver(res, a)
		agenttest.Equal(t, res.Executions(), []agenttest.Execution{
			{Step: "s", Inputs: []string{a}},
			{Step: "t", Inputs: []string{a}},
		})
		agenttest.Equal(t, res.Count("X"), 1)
	})
	t.Run("a second copy in the stream", func(t *testing.T) {
		h := newHarness(t)
		res := h.Start(&A{})
		a := res.Get("A")[0]
		data, err := event.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		h.SendRaw(res, data) // same event_id, new stream sequence
		id := a.EventBase().EventID
		// The history holds A#1 once: the list step sees one A, so its
		// binding is the same and it does not run again.
		agenttest.Equal(t, res.Executions(), []agenttest.Execution{
			{Step: "s", Inputs: []string{id}},
			{Step: "t", Inputs: []string{id}},
		})
		agenttest.Equal(t, res.Count("X"), 1)
		agenttest.Equal(t, res.Count("Y"), 1)
	})
}
