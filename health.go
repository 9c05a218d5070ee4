package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/store"
)

// A HealthError is what Runner.Health returns when the runner cannot take
// events: Component names the part at fault ("runner", "nats", "store" or
// "consumer") and Reason says why.
type HealthError struct {
	Component string
	Reason    string
	Err       error // the store's error, if any
}

func (e *HealthError) Error() string {
	if e.Err != nil && !errors.Is(e.Err, ErrNotRunning) {
		return "agent: " + e.Component + ": " + e.Reason + ": " + e.Err.Error()
	}
	return "agent: " + e.Component + ": " + e.Reason
}
func (e *HealthError) Unwrap() error { return e.Err }

// healthRef is what Health checks; Run sets it once ready.
type healthRef struct {
	bus   bus.Bus
	store store.Store
	// down, when set, says why the runner takes no events although its
	// connection is up: its consumer is being recreated, or it stops.
	down atomic.Pointer[HealthError]
}

func (h *healthRef) setDown(component, reason string) {
	h.down.Store(&HealthError{Component: component, Reason: reason})
}

// stopped marks the runner stopped, unless it stopped for a cause of its
// own (NATS closed, the consumer lost), which stays the reason.
func (h *healthRef) stopped() {
	if d := h.down.Load(); d == nil || d.Component == "runner" {
		h.setDown("runner", "stopped")
	}
}

// Health reports whether the runner takes events: nil once it is ready
// while its NATS connection is up, its consumer in place and its state
// store answering (one read, bounded by ctx); otherwise a *HealthError.
// The health package serves it as /readyz.
func (r *Runner) Health(ctx context.Context) error {
	h := r.health.Load()
	if h == nil {
		return &HealthError{Component: "runner", Reason: "not running", Err: ErrNotRunning}
	}
	if d := h.down.Load(); d != nil {
		return d
	}
	if err := h.natsDown(); err != nil {
		return err
	}
	// A status read of a run that does not exist: one round trip that
	// changes nothing.
	if err := h.probeStore(ctx, store.RunKey{Class: r.class, Run: "health-probe"}); err != nil {
		// The connection may have dropped during the read: name the
		// cause rather than its effect.
		if nerr := h.natsDown(); nerr != nil {
			return nerr
		}
		reason := "not answering"
		if errors.Is(err, context.DeadlineExceeded) {
			reason = "no answer in time"
		}
		return &HealthError{Component: "store", Reason: reason, Err: err}
	}
	return nil
}

// natsDown is a *HealthError if the bus's NATS connection is not up.
func (h *healthRef) natsDown() error {
	if c, ok := h.bus.(natsbus.ClosedReporter); ok {
		select {
		case <-c.Closed():
			return &HealthError{Component: "nats", Reason: "closed"}
		default:
		}
	}
	if c, ok := h.bus.(natsbus.Conner); ok {
		if nc := c.Conn(); nc == nil {
			return &HealthError{Component: "nats", Reason: "closed"}
		} else if s := nc.Status(); s != nats.CONNECTED {
			return &HealthError{Component: "nats", Reason: strings.ToLower(s.String())}
		}
	}
	return nil
}

// probeStore reads key's status record. A read in flight when the NATS
// connection drops is given up at once: it would wait for the reconnect.
func (h *healthRef) probeStore(ctx context.Context, key store.RunKey) error {
	c, ok := h.bus.(natsbus.Conner)
	if !ok || c.Conn() == nil {
		_, _, err := h.store.Status(ctx, key)
		return err
	}
	nc := c.Conn()
	changed := nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	defer nc.RemoveStatusListener(changed)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, err := h.store.Status(ctx, key)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case s := <-changed:
		return fmt.Errorf("the NATS connection went %s", strings.ToLower(s.String()))
	}
}
