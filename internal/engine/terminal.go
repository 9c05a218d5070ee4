package engine

import (
	"context"
	"sync"
	"time"

	"github.com/saap-go/agent/store"
)

// termWatch follows the class's terminal markers through the store's
// store.Watcher, so that an event of a run whose marker this process has
// read once needs no marker read: the watch tells when it is set. Each
// watch started has its own epoch; a run entry remembers the epoch under
// which it last read the marker (runEntry.termEpoch), and that read counts
// only while the same watch is live.
type termWatch struct {
	mu     sync.Mutex
	w      store.MarkerWatch
	epoch  uint64
	retry  time.Time // no new watch before (after one failed to start)
	closed bool
}

// watchRetry is how long the engine reads markers before it tries again to
// start a watch that failed to start.
const watchRetry = 5 * time.Second

// terminalEpoch returns the epoch of a live watch of the class's terminal
// markers, starting one if there is none; 0 if the store cannot watch or
// no watch runs.
func (e *Engine) terminalEpoch(ctx context.Context) uint64 {
	mw, ok := e.store.(store.Watcher)
	if !ok {
		return 0
	}
	tw := &e.term
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.w != nil {
		if tw.w.Live() {
			return tw.epoch
		}
		tw.w.Stop()
		tw.w = nil
	}
	if tw.closed || time.Now().Before(tw.retry) {
		return 0
	}
	w, err := mw.WatchMarker(context.WithoutCancel(ctx), e.class, store.MarkerTerminal, e.terminalSet)
	if err != nil {
		e.log.WarnContext(ctx, "dispatch: cannot watch terminal markers; reading them per event", "error", err)
		tw.retry = time.Now().Add(watchRetry)
		return 0
	}
	tw.w = w
	tw.epoch++
	return tw.epoch
}

// terminalSet is told by the watch that run's terminal marker was set.
func (e *Engine) terminalSet(run string) {
	if r := e.cache.peek(store.RunKey{Class: e.class, Run: run}); r != nil {
		r.terminate()
	}
}

// stop ends the watch (for Close).
func (tw *termWatch) stop() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.closed = true
	if tw.w != nil {
		tw.w.Stop()
		tw.w = nil
	}
}
