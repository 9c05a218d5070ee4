package agenttest_test

import (
	"fmt"
	"strings"
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

// recTB records what Equal reports instead of failing the test.
type recTB struct {
	testing.TB
	errs []string
}

func (r *recTB) Helper() {}
func (r *recTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestEqualPrintsDiff(t *testing.T) {
	rt := &recTB{TB: t}
	if !agenttest.Equal(rt, []string{"a", "b"}, []string{"a", "b"}) || len(rt.errs) != 0 {
		t.Fatalf("equal values reported: %q", rt.errs)
	}
	if agenttest.Equal(rt, []string{"a", "x"}, []string{"a", "b"}) {
		t.Fatal("Equal returned true for different values")
	}
	// go-cmp randomly uses non-breaking spaces so that nobody depends on its
	// exact output; compare with plain spaces.
	var report string
	if len(rt.errs) == 1 {
		report = strings.ReplaceAll(rt.errs[0], "\u00a0", " ")
	}
	if !strings.Contains(report, "-want +got") || !strings.Contains(report, "- \t\"b\"") || !strings.Contains(report, "+ \t\"x\"") {
		t.Fatalf("report %q is not a go-cmp diff", rt.errs)
	}
}
