package engine_test

import (
	"testing"

	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/interceptor"
	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"
)

// endWorkflow is Question → In → Stop.
func endWorkflow(t *testing.T, class string) *step.Workflow {
	t.Helper()
	s1 := step.New(func(ctx step.Context, q *Question) (*In, error) { return &In{}, nil }, step.Name("s1"))
	s2 := step.New(func(ctx step.Context, in *In) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("s2"))
	w, err := step.NewWorkflow(class, s1, s2)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A run whose terminal event the engine published and then handled ends
// with one marker: the terminal marker holds the run's end, and no end
// marker is written beside it. RunEnd reads the end from it. Guard: the
// end value in the terminal marker ("published", as before, makes RunEnd
// report the run open) and the teardown's skip of the end marker (the
// store then holds one).
func TestRunEndRecordedWithTerminal(t *testing.T) {
	ctx := t.Context()
	b := memory.New(memory.Options{Manual: true, Logger: quiet})
	defer b.Close()
	st := newCountingStore()
	obs := &recObserver{execs: map[string][]interceptor.Execution{}, ends: map[string][]interceptor.End{}}
	startEngines(t, b, endWorkflow(t, "Ends"), st, 1, engine.Sequential(), engine.WithInterceptors(obs))
	run := startRun(t, b, "Ends", &Question{}, nil)
	b.DeliverAll(ctx)

	key := store.RunKey{Class: "Ends", Run: run}
	if v, ok, _ := st.Store.Marker(ctx, key, store.MarkerTerminal); !ok || v != store.Completed {
		t.Fatalf("terminal marker %q, %v; want completed", v, ok)
	}
	if v, ok, _ := st.Store.Marker(ctx, key, store.MarkerEnd); ok {
		t.Fatalf("end marker %q written beside the terminal marker", v)
	}
	if v, ok, err := engine.RunEnd(ctx, st.Store, key); err != nil || !ok || v != store.Completed {
		t.Fatalf("RunEnd = %q, %v, %v; want completed", v, ok, err)
	}
	obs.mu.Lock()
	ends := obs.ends[run]
	obs.mu.Unlock()
	if len(ends) != 1 || ends[0].Duplicate || ends[0].Marker != interceptor.Completed {
		t.Fatalf("Ended told %+v, want one completed end", ends)
	}
}

// A terminal event published by one replica and handled by another ends
// the run once on the other, which writes the end marker (it cannot tell
// whether the publisher tore the run down). Guard: the end marker's write
// when this process did not publish the terminal event. (A redelivery
// after the publisher's own teardown is a duplicate: agenttest's
// TestScenario27_RedeliveredTerminalIsIdempotent.)
func TestRunEndAcrossReplicas(t *testing.T) {
	ctx := t.Context()
	b := memory.New(memory.Options{Manual: true, Logger: quiet})
	defer b.Close()
	st := memstore.New()
	w := endWorkflow(t, "EndsTwo")
	obs := &recObserver{execs: map[string][]interceptor.Execution{}, ends: map[string][]interceptor.End{}}
	reps := newReplicas(t, w, b, st, 1)
	other, err := engine.New(w, b, st, engine.WithLogger(quiet), engine.Sequential(), engine.WithInterceptors(obs))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	run := startRun(t, b, "EndsTwo", &Question{}, nil)
	for _, name := range []string{"Question", "In"} {
		if err := processFirst(t, reps[0], b, "EndsTwo", name); err != nil {
			t.Fatal(err)
		}
	}
	// The publisher's terminal marker holds the end; the other replica
	// handles the StopEvent first.
	if err := processFirst(t, other, b, "EndsTwo", "StopEvent"); err != nil {
		t.Fatal(err)
	}
	key := store.RunKey{Class: "EndsTwo", Run: run}
	if v, ok, _ := st.Marker(ctx, key, store.MarkerEnd); !ok || v != store.Completed {
		t.Fatalf("end marker %q, %v; want completed", v, ok)
	}
	obs.mu.Lock()
	ends := append([]interceptor.End(nil), obs.ends[run]...)
	obs.mu.Unlock()
	if len(ends) != 1 || ends[0].Duplicate {
		t.Fatalf("Ended told %+v, want one first end", ends)
	}
}

// RunEnd reads the layout of earlier versions: a terminal marker that says
// "published" or "received" and the end in the end marker.
func TestRunEndReadsEarlierLayout(t *testing.T) {
	ctx := t.Context()
	st := memstore.New()
	open := store.RunKey{Class: "Old", Run: "open"}
	ended := store.RunKey{Class: "Old", Run: "ended"}
	for _, m := range []struct {
		run         store.RunKey
		name, value string
	}{{open, store.MarkerTerminal, "published"}, {ended, store.MarkerTerminal, "received"}, {ended, store.MarkerEnd, store.Crashed}} {
		if _, _, err := st.SetMarker(ctx, m.run, m.name, m.value); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok, err := engine.RunEnd(ctx, st, open); err != nil || ok {
		t.Fatalf("RunEnd of a run being torn down = %q, %v, %v; want open", v, ok, err)
	}
	if v, ok, err := engine.RunEnd(ctx, st, ended); err != nil || !ok || v != store.Crashed {
		t.Fatalf("RunEnd of an ended run = %q, %v, %v; want crashed", v, ok, err)
	}
	if _, ok, err := engine.RunEnd(ctx, st, store.RunKey{Class: "Old", Run: "none"}); err != nil || ok {
		t.Fatalf("RunEnd of an unknown run = %v, %v; want open", ok, err)
	}
}
