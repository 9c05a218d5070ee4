package engine

import (
	"context"

	"github.com/saap-go/agent/store"
)

// MarkerDirty is set on a run by a replica that writes the run's state in
// the store (its run context, claims, counters) when another replica
// founded the run: the founding replica, which tears the run down when it
// gets its terminal event, then knows that there is state to delete. A run
// whose state only its founder wrote, or none, needs no marker and, at its
// end, no deletion.
const MarkerDirty = "dirty"

// tracked is the engine's view of its store: it notes which runs have state
// in the store beside the stream, so that teardown deletes only what
// exists.
type tracked struct {
	store.Store
	e *Engine
}

func (s tracked) Claim(ctx context.Context, run store.RunKey, req store.ClaimRequest) (store.ClaimResult, error) {
	s.e.wrote(ctx, run)
	return s.Store.Claim(ctx, run, req)
}

func (s tracked) Complete(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) error {
	s.e.wrote(ctx, run)
	return s.Store.Complete(ctx, run, step, key, o)
}

func (s tracked) Record(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) (store.ClaimResult, error) {
	s.e.wrote(ctx, run)
	return s.Store.Record(ctx, run, step, key, o)
}

func (s tracked) Set(ctx context.Context, sc store.Scope, key string, value []byte) error {
	s.e.wroteScope(ctx, sc)
	return s.Store.Set(ctx, sc, key, value)
}

func (s tracked) SetMany(ctx context.Context, sc store.Scope, entries []store.Entry) error {
	s.e.wroteScope(ctx, sc)
	return s.Store.SetMany(ctx, sc, entries)
}

func (s tracked) Incr(ctx context.Context, sc store.Scope, key string, delta int64) (int64, error) {
	s.e.wroteScope(ctx, sc)
	return s.Store.Incr(ctx, sc, key, delta)
}

func (e *Engine) wroteScope(ctx context.Context, sc store.Scope) {
	if sc.Kind == store.RunScope {
		e.wrote(ctx, store.RunKey{Class: sc.Class, Run: sc.ID})
	}
}

// wrote notes that run has state in the store. A replica that did not
// found the run tells the founder with MarkerDirty, once per run, before
// its first write.
func (e *Engine) wrote(ctx context.Context, run store.RunKey) {
	if run.Class != e.class {
		return
	}
	r := e.cache.peek(run)
	if r != nil {
		r.dirty.Store(true)
		if r.founded.Load() || r.dirtyMarked.Swap(true) {
			return
		}
	}
	if _, _, err := e.store.SetMarker(ctx, run, MarkerDirty, "1"); err != nil {
		// The state outlives the run until the store's retention ends it.
		e.log.WarnContext(ctx, "dispatch: could not mark the run's state for deletion at its end", "run_id", run.Run, "error", err)
		if r != nil {
			r.dirtyMarked.Store(false)
		}
	}
}

// stateToDelete reports whether teardown must delete the run's state: unless
// this process founded the run, wrote none of its state, and has watched
// the dirty markers since it founded it without hearing of another
// replica's write.
func (e *Engine) stateToDelete(r *runEntry) bool {
	if r == nil || !r.founded.Load() || r.dirty.Load() {
		return true
	}
	return !e.dirty.live(r.dirtyEpoch.Load())
}
