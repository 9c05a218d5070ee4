package dispatch_test

import (
	"sync/atomic"
	"testing"

	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/dispatch"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// unwatched hides the memory store's MarkerWatcher, as a store without
// one (Redis) would.
type unwatched struct{ dispatch.Store }

// A terminal marker another replica sets stops the run's later events from
// starting steps, whether the engine learns it from the store's watch (no
// marker read per event) or, with a store that cannot watch, from one read
// per event.
func TestTerminalMarkerOfAnotherReplica(t *testing.T) {
	for _, tc := range []struct {
		name    string
		watched bool
	}{{"watched", true}, {"read", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var s2 atomic.Int32
			w, err := step.NewWorkflow("Term",
				step.New(func(ctx step.Context, q *Question) (*In, error) { return &In{}, nil }, step.Name("s1")),
				step.New(func(ctx step.Context, in *In) (*Out, error) { s2.Add(1); return &Out{}, nil }, step.Name("s2")),
				step.New(func(ctx step.Context, o *Out) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("s3")))
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			b := memory.New(memory.Options{Manual: true, Logger: quiet})
			defer b.Close()
			counting := newCountingStore()
			var store dispatch.Store = counting
			if !tc.watched {
				store = unwatched{counting}
			}
			startEngines(t, b, w, store, 1, dispatch.Sequential())
			run := startRun(t, b, "Term", &Question{}, nil)
			if !b.Deliver(ctx) { // the Question: s1 publishes In
				t.Fatal("nothing to deliver")
			}
			reads := counting.calls["Marker"]
			// Another replica ends the run.
			if _, _, err := counting.MemoryStore.SetMarker(ctx, dispatch.RunKey{Class: "Term", Run: run}, dispatch.MarkerTerminal, "published"); err != nil {
				t.Fatal(err)
			}
			b.DeliverAll(ctx) // the In
			if n := s2.Load(); n != 0 {
				t.Fatalf("s2 ran %d times after the run's terminal marker was set", n)
			}
			want := 1
			if tc.watched {
				want = 0
			}
			if got := counting.calls["Marker"] - reads; got != want {
				t.Fatalf("%d marker reads for the In, want %d", got, want)
			}
		})
	}
}
