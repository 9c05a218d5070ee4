package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// healthTTL is how long a JetStream check's result answers health
// requests, so that unauthenticated health requests cost the server at
// most one check (and one probe write) a second.
const healthTTL = time.Second

// errInsufficientResources is JetStream's refusal of a write beyond its
// storage limit.
const errInsufficientResources jetstream.ErrorCode = 10023

// jsHealth checks JetStream for the health endpoint: whether it answers,
// whether the account's storage is within its limits, and whether the
// gateway's store can still write (which catches the server's own storage
// limit, which no client API reports).
type jsHealth struct {
	js    jetstream.JetStream
	probe func(context.Context) error // nil without a KV store
	// room is the free storage below which the account counts as full:
	// the largest message the server takes.
	room func() int64
	ttl  time.Duration

	mu      sync.Mutex
	checked time.Time
	problem string
	running chan struct{} // closed when the check under way ends
}

// check returns "" while JetStream is usable, else why not.
func (h *jsHealth) check(ctx context.Context) string {
	now := time.Now()
	h.mu.Lock()
	if h.running == nil && !h.checked.IsZero() && now.Sub(h.checked) < h.ttl {
		p := h.problem
		h.mu.Unlock()
		return p
	}
	if wait := h.running; wait != nil {
		// One check at a time; the others take its result.
		h.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return "jetstream: health check cancelled"
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.problem
	}
	done := make(chan struct{})
	h.running = done
	h.mu.Unlock()

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	p := h.run(cctx)
	cancel()

	h.mu.Lock()
	h.problem, h.checked, h.running = p, now, nil
	h.mu.Unlock()
	close(done)
	return p
}

func (h *jsHealth) run(ctx context.Context) string {
	info, err := h.js.AccountInfo(ctx)
	if err != nil {
		// A server whose disk filled up disables JetStream.
		return fmt.Sprintf("jetstream unavailable: %v", err)
	}
	room := h.room()
	if p := storageFull("account", info.Tier, room); p != "" {
		return p
	}
	for name, t := range info.Tiers {
		if p := storageFull("account tier "+name, t, room); p != "" {
			return p
		}
	}
	if h.probe != nil {
		if err := h.probe(ctx); err != nil {
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && apiErr.ErrorCode == errInsufficientResources {
				return fmt.Sprintf("jetstream storage full: the server refuses writes (%v)", err)
			}
			return fmt.Sprintf("jetstream cannot write: %v", err)
		}
	}
	return ""
}

// storageFull says why t's file storage is full, or "": it is when less
// than room is left, as JetStream refuses a message that would pass the
// limit.
func storageFull(what string, t jetstream.Tier, room int64) string {
	if t.Limits.MaxStore > 0 && t.Limits.MaxStore-int64(t.Store) < room {
		return fmt.Sprintf("jetstream storage full: %s uses %d of %d bytes (less than a message of %d bytes left)",
			what, t.Store, t.Limits.MaxStore, room)
	}
	return ""
}
