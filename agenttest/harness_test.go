package agenttest_test

import (
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/step"
)

func TestNewStepRunsOneStep(t *testing.T) {
	s := step.New(func(ctx step.Context, a *A, b step.Maybe[*B]) (*X, error) { return &X{}, nil }, step.Name("s"))
	h := agenttest.NewStep(t, s)
	res := h.Start(&A{N: 7})
	agenttest.Equal(t, res.Names(), []string{"A", "X"})
	agenttest.Equal(t, res.Count("X"), 1)
	agenttest.Equal(t, res.Get("A")[0].(*A).N, 7)
	// Events and ids are deterministic: a second harness gives the same.
	h2 := agenttest.NewStep(t, s)
	res2 := h2.Start(&A{N: 7})
	agenttest.Equal(t, res2.IDs("X"), res.IDs("X"))
	if got := res.Events(); len(got) != 2 || got[1].Topic.Run != res.RunID() {
		t.Fatalf("events %+v, want two on run %s", got, res.RunID())
	}
	if res.Display() != nil {
		t.Fatalf("display events %v, want none", res.Display())
	}
	if res.Terminal() != nil || res.Ended() != "" {
		t.Fatal("the run ended")
	}
}
