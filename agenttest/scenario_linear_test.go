package agenttest_test

import (
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

func mustWorkflow(t *testing.T, class string, steps ...*step.Step) *step.Workflow {
	t.Helper()
	w, err := step.NewWorkflow(class, steps...)
	if err != nil {
		t.Fatalf("NewWorkflow: %v", err)
	}
	return w
}

func mustPartial(t *testing.T, class string, steps ...*step.Step) *step.Workflow {
	t.Helper()
	w, err := step.NewPartialWorkflow(class, steps...)
	if err != nil {
		t.Fatalf("NewPartialWorkflow: %v", err)
	}
	return w
}

func TestScenario01_LinearChain(t *testing.T) {
	s1 := step.New(func(ctx step.Context, s *event.StartEvent) (*A, error) { return &A{}, nil }, step.Name("s1"))
	s2 := step.New(func(ctx step.Context, a *A) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("s2"))
	h := agenttest.New(t, mustWorkflow(t, "Linear", s1, s2))
	res := h.Start(&event.StartEvent{})

	start, a := res.IDs("StartEvent"), res.IDs("A")
	agenttest.Equal(t, res.Names(), []string{"StartEvent", "A", "StopEvent"})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "s1", Inputs: start},
		{Step: "s2", Inputs: a},
	})
	if res.Terminal() == nil || !event.IsStop(res.Terminal()) {
		t.Fatalf("terminal = %v, want a StopEvent", res.Terminal())
	}
	if got := res.Ended(); got != "completed" {
		t.Fatalf("end marker = %q, want completed", got)
	}
}
