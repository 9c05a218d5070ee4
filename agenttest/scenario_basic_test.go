package agenttest_test

import (
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

func TestScenario02_CustomStartAndStop(t *testing.T) {
	s := step.New(func(ctx step.Context, st *MyStart) (*MyStop, error) {
		return &MyStop{Payload: st.Payload}, nil
	}, step.Name("s"))
	h := agenttest.New(t, mustWorkflow(t, "Custom", s))
	res := h.Start(&MyStart{Payload: "p"})

	stops := res.Get("MyStop")
	if len(stops) != 1 {
		t.Fatalf("%d MyStop published, want 1", len(stops))
	}
	agenttest.Equal(t, stops[0].(*MyStop).Payload, "p")
	if res.Terminal() != stops[0] {
		t.Fatalf("terminal = %v, want the MyStop", res.Terminal())
	}
	agenttest.Equal(t, res.Ended(), "completed")
}

func TestScenario03_NoSubclassMatching(t *testing.T) {
	t.Run("StartEvent step ignores a UserMessageEvent", func(t *testing.T) {
		s := step.New(func(ctx step.Context, st *event.StartEvent) (*event.StopEvent, error) {
			return &event.StopEvent{}, nil
		}, step.Name("s"))
		h := agenttest.New(t, mustWorkflow(t, "NoSubclass", s))
		res := h.Start(&event.UserMessageEvent{})
		agenttest.Equal(t, res.Executions(), []agenttest.Execution(nil))
		if res.Terminal() != nil {
			t.Fatalf("terminal = %s, want none (the run stays open)", event.Name(res.Terminal()))
		}
		agenttest.Equal(t, res.Ended(), "")
	})
	t.Run("UserMessageEvent step runs", func(t *testing.T) {
		tt := step.New(func(ctx step.Context, m *event.UserMessageEvent) (*event.StopEvent, error) {
			return &event.StopEvent{}, nil
		}, step.Name("t"))
		h := agenttest.New(t, mustWorkflow(t, "Exact", tt))
		res := h.Start(&event.UserMessageEvent{})
		agenttest.Equal(t, res.Executions(), []agenttest.Execution{{Step: "t", Inputs: res.IDs("UserMessageEvent")}})
		agenttest.Equal(t, res.Ended(), "completed")
	})
}

func TestScenario04_UnionEitherBranch(t *testing.T) {
	for _, branch := range []string{"A", "B"} {
		t.Run(branch, func(t *testing.T) {
			s1 := step.New(func(ctx step.Context, _ *event.StartEvent) (step.Either[*A, *B], error) {
				if branch == "A" {
					return step.OneOf[*A, *B](&A{}), nil
				}
				return step.Other[*A](&B{}), nil
			}, step.Name("s1"))
			end := step.New(func(ctx step.Context, x step.Either[*A, *B]) (*event.StopEvent, error) {
				return &event.StopEvent{}, nil
			}, step.Name("end"))
			h := agenttest.New(t, mustWorkflow(t, "Union", s1, end))
			res := h.Start(&event.StartEvent{})
			agenttest.Equal(t, res.Names(), []string{"StartEvent", branch, "StopEvent"})
			agenttest.Equal(t, res.Executions(), []agenttest.Execution{
				{Step: "s1", Inputs: res.IDs("StartEvent")},
				{Step: "end", Inputs: res.IDs(branch)},
			})
			agenttest.Equal(t, res.Ended(), "completed")
		})
	}
}

// optionalWorkflow is scenarios 5 and 6: start→outputs, opt(A, B?) [max 1]
// → C if B else D, end(C|D) [max 1] → Stop.
func optionalWorkflow(t *testing.T, outputs func() []event.Event) *step.Workflow {
	start := step.New(func(ctx step.Context, _ *event.StartEvent) ([]event.Event, error) {
		return outputs(), nil
	}, step.Name("start"), step.Emits(&A{}, &B{}))
	opt := step.New(func(ctx step.Context, a *A, b step.Maybe[*B]) (step.Either[*C, *D], error) {
		if b.OK {
			return step.OneOf[*C, *D](&C{}), nil
		}
		return step.Other[*C](&D{}), nil
	}, step.Name("opt"), step.MaxExecutions(1))
	end := step.New(func(ctx step.Context, x step.Either[*C, *D]) (*event.StopEvent, error) {
		return &event.StopEvent{}, nil
	}, step.Name("end"), step.MaxExecutions(1))
	return mustWorkflow(t, "Optional", start, opt, end)
}

func TestScenario05_OptionalAbsent(t *testing.T) {
	h := agenttest.New(t, optionalWorkflow(t, func() []event.Event { return []event.Event{&A{}} }))
	res := h.Start(&event.StartEvent{})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "start", Inputs: res.IDs("StartEvent")},
		{Step: "opt", Inputs: res.IDs("A")},
		{Step: "end", Inputs: res.IDs("D")},
	})
	agenttest.Equal(t, res.Count("D"), 1)
	agenttest.Equal(t, res.Count("C"), 0)
	agenttest.Equal(t, res.Ended(), "completed")
}

func TestScenario06_OptionalPresentBeforeRequired(t *testing.T) {
	h := agenttest.New(t, optionalWorkflow(t, func() []event.Event { return []event.Event{&B{}, &A{}} }))
	res := h.Start(&event.StartEvent{})
	agenttest.Equal(t, res.Names(), []string{"StartEvent", "B", "A", "C", "StopEvent"})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "start", Inputs: res.IDs("StartEvent")},
		{Step: "opt", Inputs: append(res.IDs("A"), res.IDs("B")...)},
		{Step: "end", Inputs: res.IDs("C")},
	})
	agenttest.Equal(t, res.Count("D"), 0)
	agenttest.Equal(t, res.Ended(), "completed")
}

// sAB is s(A, B?) → X with options.
func sAB(opts ...step.Option) *step.Step {
	return step.New(func(ctx step.Context, a *A, b step.Maybe[*B]) (*X, error) { return &X{}, nil },
		append([]step.Option{step.Name("s")}, opts...)...)
}

func TestScenario07_OptionalArrivingLater(t *testing.T) {
	h := agenttest.New(t, mustPartial(t, "OptLater", sAB()))
	res := h.Start(&A{})
	h.Send(res, &B{})
	a, b := res.IDs("A")[0], res.IDs("B")[0]
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "s", Inputs: []string{a}},
		{Step: "s", Inputs: []string{a, b}},
	})
	agenttest.Equal(t, res.Count("X"), 2)
}

func TestScenario08_OptionalArrivingLaterCapped(t *testing.T) {
	h := agenttest.New(t, mustPartial(t, "OptCapped", sAB(step.MaxExecutions(1))))
	res := h.Start(&A{})
	h.Send(res, &B{})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{{Step: "s", Inputs: res.IDs("A")}})
	agenttest.Equal(t, res.Count("X"), 1)
}

func twoRequired(t *testing.T) *step.Workflow {
	s := step.New(func(ctx step.Context, a *A, b *B) (*event.StopEvent, error) { return &event.StopEvent{}, nil },
		step.Name("s"))
	return mustPartial(t, "TwoRequired", s)
}

func TestScenario09_TwoRequiredInOrder(t *testing.T) {
	h := agenttest.New(t, twoRequired(t))
	res := h.Start(&A{})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution(nil))
	h.Send(res, &B{})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "s", Inputs: append(res.IDs("A"), res.IDs("B")...)},
	})
	agenttest.Equal(t, res.Ended(), "completed")
}

func TestScenario10_TwoRequiredReversed(t *testing.T) {
	h := agenttest.New(t, twoRequired(t))
	res := h.Start(&B{})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution(nil))
	h.Send(res, &A{})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "s", Inputs: append(res.IDs("A"), res.IDs("B")...)},
	})
	agenttest.Equal(t, res.Ended(), "completed")
}

func TestScenario11_ReexecutionOnNewInstance(t *testing.T) {
	s := step.New(func(ctx step.Context, a *A) (*X, error) { return &X{}, nil }, step.Name("s"))
	h := agenttest.New(t, mustPartial(t, "Reexec", s))
	res := h.Start(&A{N: 1})
	h.Send(res, &A{N: 2})
	a := res.IDs("A")
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "s", Inputs: a[:1]},
		{Step: "s", Inputs: a[1:]},
	})
	agenttest.Equal(t, res.Count("X"), 2)
}
