package agenttest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/saap-go/agent/interceptor"
	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// exceptionWorkflow is scenario 21: s1(Start)→A, s2(A) raises, s3(A)→B,
// s4(B)→Stop. s3 waits for its context when wait is set.
func exceptionWorkflow(t *testing.T, wait bool, s3cause *error, s4runs *int) *step.Workflow {
	started := make(chan struct{})
	s1 := step.New(func(ctx step.Context, _ *event.StartEvent) (*A, error) { return &A{}, nil }, step.Name("s1"))
	s2 := step.New(func(ctx step.Context, a *A) error {
		if wait {
			<-started // fail only once the sibling is running
		}
		return errors.New("s2 broke")
	}, step.Name("s2"))
	s3 := step.New(func(ctx step.Context, a *A) (*B, error) {
		if wait {
			close(started)
			// A slow sibling: it finishes only after s2's ExceptionEvent was
			// published, which ends its context.
			select {
			case <-ctx.Done():
				*s3cause = context.Cause(ctx)
			case <-time.After(10 * time.Second):
				*s3cause = errors.New("context not cancelled after the run's ExceptionEvent")
			}
		}
		return &B{}, nil
	}, step.Name("s3"))
	s4 := step.New(func(ctx step.Context, b *B) (*event.StopEvent, error) {
		*s4runs++
		return &event.StopEvent{}, nil
	}, step.Name("s4"))
	return mustPartial(t, "Failing", s1, s2, s3, s4)
}

func TestScenario21_StepExceptionStopsTheRun(t *testing.T) {
	check := func(t *testing.T, res *agenttest.Result, s4runs int) {
		t.Helper()
		agenttest.Equal(t, res.Count("ExceptionEvent"), 1)
		agenttest.Equal(t, res.Count("B"), 0)
		agenttest.Equal(t, res.Count("StopEvent"), 0)
		agenttest.Equal(t, s4runs, 0)
		exc, ok := res.Terminal().(*event.ExceptionEvent)
		if !ok {
			t.Fatalf("terminal = %v, want an ExceptionEvent", res.Terminal())
		}
		// The cause is logged and observed, not published.
		if strings.Contains(exc.Message, "s2 broke") || !strings.Contains(exc.Message, exc.EventID) {
			t.Fatalf("exception message %q: want a reference to the failure, not its cause", exc.Message)
		}
		if !slices.ContainsFunc(res.Executions(), func(x agenttest.Execution) bool {
			return x.Err != nil && strings.Contains(x.Err.Error(), "s2 broke")
		}) {
			t.Fatalf("no execution carries the cause: %+v", res.Executions())
		}
		agenttest.Equal(t, res.Ended(), "crashed")
	}
	t.Run("slow sibling's output is dropped", func(t *testing.T) {
		var cause error
		s4runs := 0
		h := agenttest.New(t, exceptionWorkflow(t, true, &cause, &s4runs), agenttest.Concurrent())
		res := h.Start(&event.StartEvent{})
		check(t, res, s4runs)
		if !errors.Is(cause, engine.ErrRunEnded) {
			t.Fatalf("s3's context ended with %v, want ErrRunEnded", cause)
		}
		var dropped []string
		for _, e := range res.Dropped() {
			dropped = append(dropped, event.Name(e))
		}
		agenttest.Equal(t, dropped, []string{"B"})
	})
	t.Run("sequential: the sibling never starts", func(t *testing.T) {
		var cause error
		s4runs := 0
		h := agenttest.New(t, exceptionWorkflow(t, false, &cause, &s4runs))
		res := h.Start(&event.StartEvent{})
		check(t, res, s4runs)
		agenttest.Equal(t, res.Steps(), []string{"s1", "s2"})
	})
}

func TestScenario22_ContinueOnError(t *testing.T) {
	calls := 0
	s := step.New(func(ctx step.Context, a *A) (*X, error) {
		calls++
		return nil, fmt.Errorf("failure %d", calls)
	}, step.Name("s"), step.ContinueOnError())
	h := agenttest.New(t, mustPartial(t, "Soft", s))
	res := h.Start(&A{})
	a := res.IDs("A")[0]
	h.Redeliver(res, a) // the failure is the claim's outcome: no retry
	agenttest.Equal(t, calls, 1)
	agenttest.Equal(t, res.Count("ExceptionEvent"), 0)
	agenttest.Equal(t, res.Ended(), "")
	xs := res.Executions()
	if len(xs) != 1 || xs[0].Err == nil || xs[0].Err.Error() != "failure 1" {
		t.Fatalf("executions = %+v, want one that failed with \"failure 1\"", xs)
	}
	// The run stays open: a new input runs the step again.
	h.Send(res, &A{})
	agenttest.Equal(t, calls, 2)
}

func TestScenario23_NoneOrEmptyResult(t *testing.T) {
	for name, fn := range map[string]any{
		"nil":   func(ctx step.Context, a *A) (*X, error) { return nil, nil },
		"empty": func(ctx step.Context, a *A) ([]*X, error) { return []*X{}, nil },
	} {
		t.Run(name, func(t *testing.T) {
			s := step.New(fn, step.Name("s"))
			next := step.New(func(ctx step.Context, x *X) (*Y, error) { return &Y{}, nil }, step.Name("next"))
			h := agenttest.New(t, mustPartial(t, "Nothing", s, next))
			res := h.Start(&A{})
			agenttest.Equal(t, res.Names(), []string{"A"})
			agenttest.Equal(t, res.Steps(), []string{"s"})
		})
	}
}

func TestScenario24_ListReturnOrder(t *testing.T) {
	s := step.New(func(ctx step.Context, _ *event.StartEvent) ([]event.Event, error) {
		return []event.Event{&B{}, &A{}}, nil
	}, step.Name("s"), step.Emits(&B{}, &A{}))
	ta := step.New(func(ctx step.Context, a *A) (*X, error) { return &X{}, nil }, step.Name("ta"))
	tb := step.New(func(ctx step.Context, b *B) (*X, error) { return &X{}, nil }, step.Name("tb"))
	h := agenttest.New(t, mustPartial(t, "Order", s, ta, tb))
	res := h.Start(&event.StartEvent{})
	// B has the lower stream sequence, and each output triggers on its own.
	agenttest.Equal(t, res.Names()[:3], []string{"StartEvent", "B", "A"})
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "s", Inputs: res.IDs("StartEvent")},
		{Step: "tb", Inputs: res.IDs("B")},
		{Step: "ta", Inputs: res.IDs("A")},
	})
	b, a := res.IDs("B")[0], res.IDs("A")[0]
	if b == a || len(a) != 24 || len(b) != 24 {
		t.Fatalf("output ids %q and %q: want two distinct 24-hex ids", b, a)
	}
	// The ids derive from the inputs; the first 4 bytes are the newest
	// input's ObjectId time.
	if start := res.IDs("StartEvent")[0]; a[:8] != start[:8] || b[:8] != start[:8] {
		t.Fatalf("output ids %q, %q do not carry the input's time prefix %q", b, a, start[:8])
	}
}

func TestScenario25_DisplayOnlyResult(t *testing.T) {
	s := step.New(func(ctx step.Context, a *A) (*Disp, error) { return &Disp{Text: "hi"}, nil }, step.Name("s"))
	h := agenttest.New(t, mustPartial(t, "Display", s))
	res := h.Start(&A{})
	agenttest.Equal(t, res.Names(), []string{"A"}) // never on the control subject, never in the stream
	disp := res.Display()
	if len(disp) != 1 || event.Name(disp[0]) != "Disp" || disp[0].(*Disp).Text != "hi" {
		t.Fatalf("display events = %v, want one Disp", disp)
	}
	// A step typed with a display-only event is refused, so nothing can be
	// triggered by one.
	d := step.New(func(ctx step.Context, d *Disp) (*X, error) { return &X{}, nil }, step.Name("d"))
	_, err := step.NewPartialWorkflow("Display", s, d)
	var ve *step.ValidationError
	if !errors.As(err, &ve) || !ve.Has(step.CheckDisplayInput) {
		t.Fatalf("NewPartialWorkflow with a step taking Disp: %v, want a %s problem", err, step.CheckDisplayInput)
	}
}

func TestScenario26_TeardownOnStop(t *testing.T) {
	s1 := step.New(func(ctx step.Context, _ *event.StartEvent) (*A, error) {
		if err := ctx.RunState().Set(ctx, "k", "v"); err != nil {
			return nil, err
		}
		if err := ctx.ThreadState().Set(ctx, "t", "kept"); err != nil {
			return nil, err
		}
		return &A{}, nil
	}, step.Name("s1"))
	s2 := step.New(func(ctx step.Context, a *A) (*event.StopEvent, error) { return &event.StopEvent{}, nil },
		step.Name("s2"), step.MaxExecutions(3))
	h := agenttest.New(t, mustWorkflow(t, "Teardown", s1, s2))
	res := h.Start(&event.StartEvent{})
	ctx, st, run := t.Context(), h.Store(), res.RunKey()

	agenttest.Equal(t, res.Teardowns(), []interceptor.End{{Run: res.Topic(), Marker: interceptor.Completed}}, ignoreTerminal)
	keys, err := st.Keys(ctx, run.RunContext())
	if err != nil || len(keys) != 0 {
		t.Fatalf("run context after teardown: %q, %v; want empty", keys, err)
	}
	for _, s := range []string{"s1", "s2"} {
		if n, err := st.Count(ctx, run, s); err != nil || n != 0 {
			t.Fatalf("counter of %s after teardown = %d, %v; want 0", s, n, err)
		}
	}
	agenttest.Equal(t, res.Ended(), store.Completed)
	if h.Cached(res.RunID()) {
		t.Fatal("the run's history is still cached after teardown")
	}
	// The thread context outlives the run (namespaced by class and thread).
	var v string
	if ok, err := engine.StateOf(st, store.ThreadContext("Teardown", res.Topic().Thread)).Get(ctx, "t", &v); !ok || err != nil || v != "kept" {
		t.Fatalf("thread context after teardown: %q, %v, %v; want kept", v, ok, err)
	}
}

func TestScenario27_RedeliveredTerminalIsIdempotent(t *testing.T) {
	t.Run("stop", func(t *testing.T) {
		s := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.StopEvent, error) { return &event.StopEvent{}, nil },
			step.Name("s"))
		h := agenttest.New(t, mustWorkflow(t, "StopTwice", s))
		res := h.Start(&event.StartEvent{})
		h.Redeliver(res, res.IDs("StopEvent")[0])
		agenttest.Equal(t, res.Teardowns(), []interceptor.End{
			{Run: res.Topic(), Marker: interceptor.Completed},
			{Run: res.Topic(), Marker: interceptor.Completed, Duplicate: true},
		}, ignoreTerminal)
		agenttest.Equal(t, res.Ended(), store.Completed)
	})
	t.Run("exception", func(t *testing.T) {
		s := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.StopEvent, error) { return nil, errors.New("no") },
			step.Name("s"))
		h := agenttest.New(t, mustWorkflow(t, "ExceptionTwice", s))
		res := h.Start(&event.StartEvent{})
		h.Redeliver(res, res.IDs("ExceptionEvent")[0])
		agenttest.Equal(t, res.Teardowns(), []interceptor.End{
			{Run: res.Topic(), Marker: interceptor.Crashed},
			{Run: res.Topic(), Marker: interceptor.Crashed, Duplicate: true},
		}, ignoreTerminal)
		agenttest.Equal(t, res.Ended(), store.Crashed)
	})
}

type countingResolver struct{ calls int }

func (r *countingResolver) Resolve(context.Context, step.Run) (json.RawMessage, error) {
	r.calls++
	return json.RawMessage(`{}`), nil
}
func (r *countingResolver) Decode(json.RawMessage) (any, error) { return nil, nil }

func TestScenario28_StartRedeliveredAfterTeardown(t *testing.T) {
	s := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.StopEvent, error) { return &event.StopEvent{}, nil },
		step.Name("s"))
	cfg := &countingResolver{}
	h := agenttest.New(t, mustWorkflow(t, "StartTwice", s), agenttest.WithConfigResolver(cfg))
	res := h.Start(&event.StartEvent{})
	agenttest.Equal(t, cfg.calls, 1)
	h.Redeliver(res, res.IDs("StartEvent")[0])
	agenttest.Equal(t, cfg.calls, 1) // no configuration fetch
	keys, err := h.Store().Keys(t.Context(), res.RunKey().RunContext())
	if err != nil || len(keys) != 0 {
		t.Fatalf("run context after the late start: %q, %v; want no writes", keys, err)
	}
	agenttest.Equal(t, res.Steps(), []string{"s"})
	agenttest.Equal(t, res.Count("StopEvent"), 1)
}

// ignoreTerminal compares run ends without their terminal events.
var ignoreTerminal = cmpopts.IgnoreFields(interceptor.End{}, "Terminal")
