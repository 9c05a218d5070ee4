package engine

import (
	"context"
	"sync"
	"time"

	"github.com/saap-go/agent/store"
)

// markerWatch follows one marker of the class's runs through the store's
// Watcher, so that the engine learns when a run's marker is set instead of
// reading it per event. Each watch started has its own epoch; a run entry
// remembers the epoch under which it last knew the marker unset (for the
// terminal marker: runEntry.termEpoch), and that knowledge counts only
// while the same watch is live.
type markerWatch struct {
	name string
	set  func(run string) // told of each marker set

	mu     sync.Mutex
	w      store.MarkerWatch
	epoch  uint64
	retry  time.Time // no new watch before (after one failed to start)
	closed bool
}

// watchRetry is how long the engine reads markers before it tries again to
// start a watch that failed to start.
const watchRetry = 5 * time.Second

// epochOf returns the epoch of a live watch of mw's marker, starting one if
// there is none; 0 if no watch runs.
func (e *Engine) epochOf(ctx context.Context, mw *markerWatch) uint64 {
	mw.mu.Lock()
	defer mw.mu.Unlock()
	if mw.w != nil {
		if mw.w.Live() {
			return mw.epoch
		}
		mw.w.Stop()
		mw.w = nil
	}
	if mw.closed || time.Now().Before(mw.retry) {
		return 0
	}
	w, err := e.store.WatchMarker(context.WithoutCancel(ctx), e.class, mw.name, mw.set)
	if err != nil {
		e.log.WarnContext(ctx, "dispatch: cannot watch markers; reading them instead", "marker", mw.name, "error", err)
		mw.retry = time.Now().Add(watchRetry)
		return 0
	}
	mw.w = w
	mw.epoch++
	return mw.epoch
}

// live reports whether the watch of epoch ep still runs.
func (mw *markerWatch) live(ep uint64) bool {
	mw.mu.Lock()
	defer mw.mu.Unlock()
	return ep != 0 && mw.epoch == ep && mw.w != nil && mw.w.Live()
}

// terminalEpoch returns the epoch of a live watch of the class's terminal
// markers (see epochOf).
func (e *Engine) terminalEpoch(ctx context.Context) uint64 { return e.epochOf(ctx, &e.term) }

// terminalSet is told by the watch that run's terminal marker was set.
func (e *Engine) terminalSet(run string) {
	if r := e.cache.peek(store.RunKey{Class: e.class, Run: run}); r != nil {
		r.terminate()
	}
}

// dirtySet is told by the watch that another replica wrote state of run.
func (e *Engine) dirtySet(run string) {
	if r := e.cache.peek(store.RunKey{Class: e.class, Run: run}); r != nil {
		r.dirty.Store(true)
		r.foreign.Store(true)
	}
}

// stop ends the watch (for Close).
func (mw *markerWatch) stop() {
	mw.mu.Lock()
	defer mw.mu.Unlock()
	mw.closed = true
	if mw.w != nil {
		mw.w.Stop()
		mw.w = nil
	}
}
