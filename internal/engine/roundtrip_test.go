package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"
	"github.com/saap-go/agent/topic"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// countingStore counts the calls the engine makes to a store, by method: on
// a networked store each is a round trip.
type countingStore struct {
	*memstore.Store
	mu    sync.Mutex
	calls map[string]int
}

func newCountingStore() *countingStore {
	return &countingStore{Store: memstore.New(), calls: map[string]int{}}
}

func (c *countingStore) count(m string) {
	c.mu.Lock()
	c.calls[m]++
	c.mu.Unlock()
}

func (c *countingStore) total() (n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range c.calls {
		n += v
	}
	return n
}

func (c *countingStore) Claim(ctx context.Context, run store.RunKey, req store.ClaimRequest) (store.ClaimResult, error) {
	c.count("Claim")
	return c.Store.Claim(ctx, run, req)
}

func (c *countingStore) Complete(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) error {
	c.count("Complete")
	return c.Store.Complete(ctx, run, step, key, o)
}

func (c *countingStore) Record(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) (store.ClaimResult, error) {
	c.count("Record")
	return c.Store.Record(ctx, run, step, key, o)
}
func (c *countingStore) Count(ctx context.Context, run store.RunKey, step string) (int64, error) {
	c.count("Count")
	return c.Store.Count(ctx, run, step)
}

func (c *countingStore) SetMarker(ctx context.Context, run store.RunKey, name, value string) (string, bool, error) {
	c.count("SetMarker")
	return c.Store.SetMarker(ctx, run, name, value)
}

func (c *countingStore) Marker(ctx context.Context, run store.RunKey, name string) (string, bool, error) {
	c.count("Marker")
	return c.Store.Marker(ctx, run, name)
}

func (c *countingStore) Get(ctx context.Context, s store.Scope, key string) ([]byte, bool, error) {
	c.count("Get")
	return c.Store.Get(ctx, s, key)
}

func (c *countingStore) Set(ctx context.Context, s store.Scope, key string, value []byte) error {
	c.count("Set")
	return c.Store.Set(ctx, s, key, value)
}

func (c *countingStore) SetMany(ctx context.Context, s store.Scope, entries []store.Entry) error {
	c.count("SetMany")
	return c.Store.SetMany(ctx, s, entries)
}

func (c *countingStore) Delete(ctx context.Context, s store.Scope, key string) error {
	c.count("Delete")
	return c.Store.Delete(ctx, s, key)
}

func (c *countingStore) Keys(ctx context.Context, s store.Scope) ([]string, error) {
	c.count("Keys")
	return c.Store.Keys(ctx, s)
}

func (c *countingStore) Incr(ctx context.Context, s store.Scope, key string, delta int64) (int64, error) {
	c.count("Incr")
	return c.Store.Incr(ctx, s, key, delta)
}

func (c *countingStore) DeleteRun(ctx context.Context, run store.RunKey) error {
	c.count("DeleteRun")
	return c.Store.DeleteRun(ctx, run)
}

// A 3-step run (Question → s1 → In → s2 → Out → s3 → Stop) keeps its
// record in the stream: the start records the run's identity (one marker
// write), each step's one output is its completion (no store call), and
// the run's end is one marker, written as the last step publishes the
// terminal event, and the deletion of the run's state (its headers). The start's X-AIHub headers are the one value
// it writes: its fields and the standalone configuration are read from
// the stream and the resolver.
func TestStoreCallsPerRun(t *testing.T) {
	s1 := step.New(func(ctx step.Context, q *Question) (*In, error) { return &In{}, nil }, step.Name("s1"))
	s2 := step.New(func(ctx step.Context, a *In) (*Out, error) { return &Out{}, nil }, step.Name("s2"))
	s3 := step.New(func(ctx step.Context, o *Out) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("s3"))
	w, err := step.NewWorkflow("Trips", s1, s2, s3)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	b := memory.New(memory.Options{Manual: true, Logger: quiet})
	defer b.Close()
	st := newCountingStore()
	startEngines(t, b, w, st, 1, engine.Sequential())
	h := bus.Header{}
	h.Set("X-AIHub-User-Token", "tok")
	run := startRun(t, b, "Trips", &Question{Text: "hello"}, h)
	b.DeliverAll(ctx)

	if v, ok, _ := engine.RunEnd(ctx, st.Store, store.RunKey{Class: "Trips", Run: run}); !ok || v != store.Completed {
		t.Fatalf("end marker %q, %v; want completed", v, ok)
	}
	st.mu.Lock()
	calls := st.calls
	st.mu.Unlock()
	t.Logf("store calls per run: %v", calls)
	if calls["Record"] != 0 || calls["Claim"] != 0 || calls["Complete"] != 0 {
		t.Errorf("%d records, %d claims, %d completes; want none: a step's output is its record",
			calls["Record"], calls["Claim"], calls["Complete"])
	}
	if calls["SetMany"] != 1 || calls["Set"] != 0 || calls["Get"] != 0 {
		t.Errorf("SetMany %d, Set %d, Get %d; want the start's headers as one SetMany and nothing else",
			calls["SetMany"], calls["Set"], calls["Get"])
	}
	if calls["Marker"] != 0 {
		t.Errorf("%d marker reads, want none (the start founded the run; the watch tells of its end)", calls["Marker"])
	}
	if calls["SetMarker"] != 2 {
		t.Errorf("%d marker writes, want 2 (identity, terminal with the run's end)", calls["SetMarker"])
	}
	if n := st.total(); n > 4 {
		t.Errorf("%d store calls per run, want at most 4", n)
	}
}

// Teardown deletes a run's state only when the run has some: a run whose
// founder wrote none, and no other replica did, ends without a deletion;
// a write by another replica (here the second step's, on a second engine
// sharing bus and store) reaches the founder through MarkerDirty, and the
// run's state is deleted at its end.
func TestTeardownDeletesOnlyWrittenState(t *testing.T) {
	for _, write := range []bool{false, true} {
		t.Run(map[bool]string{false: "clean", true: "written-elsewhere"}[write], func(t *testing.T) {
			ctx := t.Context()
			s1 := step.New(func(ctx step.Context, q *Question) (*In, error) { return &In{}, nil }, step.Name("s1"))
			s2 := step.New(func(ctx step.Context, a *In) (*Out, error) {
				if write {
					if err := ctx.RunState().Set(ctx, "k", "v"); err != nil {
						return nil, err
					}
				}
				return &Out{}, nil
			}, step.Name("s2"))
			s3 := step.New(func(ctx step.Context, o *Out) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("s3"))
			w, err := step.NewWorkflow("Dirty", s1, s2, s3)
			if err != nil {
				t.Fatal(err)
			}
			b := memory.New(memory.Options{Manual: true, Logger: quiet})
			defer b.Close()
			if err := b.EnsureStream(ctx, bus.AgentStream("Dirty")); err != nil {
				t.Fatal(err)
			}
			st := newCountingStore()
			engines := make([]*engine.Engine, 2)
			for i := range engines {
				if engines[i], err = engine.New(w, b, st, engine.WithLogger(quiet), engine.Sequential()); err != nil {
					t.Fatal(err)
				}
				defer engines[i].Close()
			}
			run := startRun(t, b, "Dirty", &Question{}, nil)
			// Each event is handled by the engine its name says: the
			// founder takes the start and the end, the other replica the
			// middle step.
			by := map[string]*engine.Engine{"Question": engines[0], "In": engines[1], "Out": engines[0], "StopEvent": engines[0]}
			for seq := uint64(1); ; seq++ {
				m, err := b.NextMsg(ctx, topic.StreamName("Dirty"), "", seq)
				if errors.Is(err, bus.ErrNotFound) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				tp, err := topic.ParseAgent(m.Subject)
				if err != nil {
					t.Fatal(err)
				}
				ev, err := event.Unmarshal(m.Data)
				if err != nil {
					t.Fatal(err)
				}
				if err := by[tp.Name].Process(ctx, tp, ev, m.Seq); err != nil {
					t.Fatalf("%s: %v", tp.Name, err)
				}
			}
			key := store.RunKey{Class: "Dirty", Run: run}
			if v, ok, _ := engine.RunEnd(ctx, st.Store, key); !ok || v != store.Completed {
				t.Fatalf("end marker %q, %v; want completed", v, ok)
			}
			st.mu.Lock()
			deletes := st.calls["DeleteRun"]
			st.mu.Unlock()
			want := 0
			if write {
				want = 1
			}
			if deletes != want {
				t.Fatalf("%d deletions of the run's state, want %d", deletes, want)
			}
			if _, ok, _ := st.Store.Get(ctx, key.RunContext(), "k"); ok {
				t.Fatal("the run's state outlived it")
			}
		})
	}
}
