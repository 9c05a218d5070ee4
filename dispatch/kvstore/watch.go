package kvstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/dispatch"
)

var _ dispatch.MarkerWatcher = (*Store)(nil)

// WatchMarker implements dispatch.MarkerWatcher with a KV watch of the
// marker's keys (an ordered consumer delivering only new values). The watch
// is live while the connection it started on has not reconnected: after a
// reconnect the consumer catches up, but markers set meanwhile may come
// late, so the engine goes back to reading them.
func (s *Store) WatchMarker(ctx context.Context, class, name string, fn func(run string)) (dispatch.MarkerWatch, error) {
	if class == "" || name == "" || fn == nil {
		return nil, fmt.Errorf("kvstore: WatchMarker needs a class, a name and a function (class %q, name %q)", class, name)
	}
	prefix := "m." + escape(class) + "."
	suffix := "." + escape(name)
	w := &markerWatch{nc: s.nc, done: make(chan struct{})}
	if w.nc != nil {
		w.reconnects = w.nc.Stats().Reconnects
	}
	kw, err := s.state.Watch(ctx, prefix+"*"+suffix, jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("kvstore: watching marker %s of class %s: %w", name, class, err)
	}
	w.kw = kw
	w.live.Store(true)
	go func() {
		defer close(w.done)
		defer w.live.Store(false)
		for e := range kw.Updates() {
			if e == nil {
				continue // the end of the (absent) initial values
			}
			run, err := unescape(strings.TrimSuffix(strings.TrimPrefix(e.Key(), prefix), suffix))
			if err != nil {
				continue // not a key this store wrote
			}
			w.mu.Lock()
			if !w.stopped {
				fn(run)
			}
			w.mu.Unlock()
		}
	}()
	return w, nil
}

type markerWatch struct {
	kw         jetstream.KeyWatcher
	nc         *nats.Conn
	reconnects uint64
	live       atomic.Bool
	done       chan struct{}

	mu      sync.Mutex // held while fn runs
	stopped bool
}

func (w *markerWatch) Live() bool {
	if !w.live.Load() {
		return false
	}
	if w.nc != nil && (w.nc.Stats().Reconnects != w.reconnects || !w.nc.IsConnected()) {
		w.live.Store(false)
		return false
	}
	return true
}

func (w *markerWatch) Stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.live.Store(false)
	_ = w.kw.Stop()
}
