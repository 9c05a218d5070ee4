package natskv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saap-go/agent/store"

	"github.com/nats-io/nats.go"
)

var _ store.Watcher = (*Store)(nil)

// WatchMarker implements store.Watcher with a plain subscription
// to the marker's key subjects, so that no consumer sits on the state
// bucket's stream: the server recounts every consumer's pending messages
// on each purge, and a run's teardown purges its keys, which made every
// teardown cost as much as the bucket's size. A put is seen as it is
// published, before the bucket stores it, and a create that loses to an
// earlier one is seen too: both only tell of a marker that is set or being
// set. The watch is live while its connection has not reconnected and the
// subscription has dropped nothing; then the engine goes back to reading
// markers.
func (s *Store) WatchMarker(ctx context.Context, class, name string, fn func(run string)) (store.MarkerWatch, error) {
	if class == "" || name == "" || fn == nil {
		return nil, fmt.Errorf("kvstore: WatchMarker needs a class, a name and a function (class %q, name %q)", class, name)
	}
	if s.nc == nil {
		return nil, fmt.Errorf("kvstore: watching marker %s of class %s: the store has no connection", name, class)
	}
	prefix := "$KV." + s.state.Bucket() + ".m." + escape(class) + "."
	suffix := "." + escape(name)
	w := &markerWatch{nc: s.nc, reconnects: s.nc.Stats().Reconnects}
	sub, err := s.nc.Subscribe(prefix+"*"+suffix, func(m *nats.Msg) {
		run, err := unescape(strings.TrimSuffix(strings.TrimPrefix(m.Subject, prefix), suffix))
		if err != nil {
			return // not a key this store wrote
		}
		w.mu.Lock()
		if !w.stopped {
			fn(run)
		}
		w.mu.Unlock()
	})
	if err != nil {
		return nil, fmt.Errorf("kvstore: watching marker %s of class %s: %w", name, class, err)
	}
	// Markers can be large in number but each is tiny: no limit but the
	// connection's, and a drop ends the watch's claim (Live).
	_ = sub.SetPendingLimits(-1, 64<<20)
	// Live only once the server has the subscription: a marker set after
	// WatchMarker returns must be told.
	fctx, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	if err := s.nc.FlushWithContext(fctx); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("kvstore: watching marker %s of class %s: %w", name, class, err)
	}
	// A refused subscription is reported before the flush's answer; it
	// would otherwise look live and tell nothing.
	if err := s.nc.LastError(); errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), sub.Subject) {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("kvstore: watching marker %s of class %s: %w", name, class, err)
	}
	w.sub = sub
	w.live.Store(true)
	return w, nil
}

// flushTimeout bounds the wait for the server to confirm a watch's
// subscription when the caller's context has no earlier deadline.
const flushTimeout = 10 * time.Second

type markerWatch struct {
	sub        *nats.Subscription
	nc         *nats.Conn
	reconnects uint64
	live       atomic.Bool

	mu      sync.Mutex // held while fn runs
	stopped bool
}

func (w *markerWatch) Live() bool {
	if !w.live.Load() {
		return false
	}
	if w.nc.Stats().Reconnects != w.reconnects || !w.nc.IsConnected() || !w.sub.IsValid() {
		w.live.Store(false)
		return false
	}
	if n, err := w.sub.Dropped(); err != nil || n > 0 {
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
	_ = w.sub.Unsubscribe()
}
