package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// unwatched is a store whose watches cannot start (a server that refuses
// them): the engine reads the marker per event instead.
type unwatched struct{ store.Store }

func (unwatched) WatchMarker(context.Context, string, string, func(string)) (store.MarkerWatch, error) {
	return nil, errors.New("watches are off")
}

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
			var st store.Store = counting
			if !tc.watched {
				st = unwatched{counting}
			}
			startEngines(t, b, w, st, 1, engine.Sequential())
			run := startRun(t, b, "Term", &Question{}, nil)
			if !b.Deliver(ctx) { // the Question: s1 publishes In
				t.Fatal("nothing to deliver")
			}
			reads := counting.calls["Marker"]
			// Another replica ends the run.
			if _, _, err := counting.Store.SetMarker(ctx, store.RunKey{Class: "Term", Run: run}, store.MarkerTerminal, "published"); err != nil {
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
