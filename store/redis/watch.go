package redis

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	redis "github.com/redis/go-redis/v9"

	"github.com/saap-go/agent/store"
)

// markerChannel is the pub/sub channel on which SetMarker announces the
// markers name of class it sets.
func (s *Store) markerChannel(class, name string) string {
	return s.cfg.Prefix + "marker:" + escape(class) + ":" + escape(name)
}

// WatchMarker implements store.Watcher with a Redis subscription to the
// channel SetMarker publishes on. Pub/sub keeps nothing for a subscriber that
// is away: once the connection was lost and the client subscribed again, the
// watch reports Live false for good, and the engine reads markers again.
func (s *Store) WatchMarker(ctx context.Context, class, name string, fn func(run string)) (store.MarkerWatch, error) {
	if class == "" || name == "" || fn == nil {
		return nil, fmt.Errorf("redisstore: WatchMarker needs a class, a name and a function (class %q, name %q)", class, name)
	}
	ps := s.rdb.Subscribe(ctx, s.markerChannel(class, name))
	// The first reply confirms the subscription: a marker set after it
	// returns is announced to this watch.
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("redisstore: watch marker %s of %s: %w", name, class, err)
	}
	w := &watch{ps: ps, done: make(chan struct{})}
	w.live.Store(true)
	ch := ps.ChannelWithSubscriptions()
	go func() {
		defer close(w.done)
		for m := range ch {
			switch m := m.(type) {
			case *redis.Subscription:
				// A subscription confirmed again follows a lost
				// connection: announcements may have been missed.
				if m.Kind == "subscribe" {
					w.live.Store(false)
				}
			case *redis.Message:
				w.mu.Lock()
				if !w.stopped {
					fn(m.Payload)
				}
				w.mu.Unlock()
			}
		}
		w.live.Store(false)
	}()
	return w, nil
}

type watch struct {
	ps      *redis.PubSub
	live    atomic.Bool
	mu      sync.Mutex // held while fn runs: none after Stop
	stopped bool
	done    chan struct{}
	once    sync.Once
}

func (w *watch) Live() bool { return w.live.Load() }

func (w *watch) Stop() {
	w.once.Do(func() {
		w.mu.Lock()
		w.stopped = true
		w.mu.Unlock()
		w.live.Store(false)
		_ = w.ps.Close()
		<-w.done
	})
}
