package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// errTimeout ends a wait that saw no terminal event within Config.Timeout.
var errTimeout = errors.New("gateway: no terminal event in time")

// watch buffers the display events of one thread and display. The bus
// handler only appends, so a slow HTTP client never blocks the bus.
type watch struct {
	mu     sync.Mutex
	queue  []*bus.Msg
	signal chan struct{}
	sub    bus.Subscription
}

// watchThread subscribes to every display event of thread and display
// (`agent.*.*.<thread>.<display>.*.display_event.*.*`). Subscribe before
// publishing, or the first answers can be missed.
func (g *Gateway) watchThread(ctx context.Context, thread, display string) (*watch, error) {
	pattern, err := topic.ThreadDisplay(thread, display)
	if err != nil {
		return nil, err
	}
	w := &watch{signal: make(chan struct{}, 1)}
	sub, err := g.bus.Subscribe(ctx, pattern, "", func(m *bus.Msg) {
		w.mu.Lock()
		w.queue = append(w.queue, m)
		w.mu.Unlock()
		select {
		case w.signal <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: subscribe %s: %w", pattern, err)
	}
	w.sub = sub
	return w, nil
}

func (w *watch) close() { _ = w.sub.Unsubscribe() }

func (w *watch) take() []*bus.Msg {
	w.mu.Lock()
	defer w.mu.Unlock()
	q := w.queue
	w.queue = nil
	return q
}

// primary names the agent run a request addressed: its stop ends the wait.
type primary struct {
	class, id, run string
}

// seen is one display event observed on the thread.
type seen struct {
	topic    topic.Agent
	event    event.Event
	raw      []byte
	terminal bool
}

// follow feeds each display event of w to onEvent, in arrival order, until a
// terminal one (which onEvent also gets), the timeout, or ctx's end. tick,
// if not nil, is called every KeepAlive while waiting.
func (g *Gateway) follow(ctx context.Context, w *watch, p primary, onEvent func(*seen) error, tick func() error) (*seen, error) {
	timeout := time.NewTimer(g.cfg.Timeout)
	defer timeout.Stop()
	var ticks <-chan time.Time
	if tick != nil {
		t := time.NewTicker(g.cfg.KeepAlive)
		defer t.Stop()
		ticks = t.C
	}
	tn := &turn{}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timeout.C:
			return nil, errTimeout
		case <-ticks:
			if err := tick(); err != nil {
				return nil, err
			}
		case <-w.signal:
			for _, m := range w.take() {
				s, ok := g.classify(m, p)
				if !ok {
					continue
				}
				g.observe(ctx, s)
				g.see(ctx, tn, s)
				if err := onEvent(s); err != nil {
					return nil, err
				}
				if s.terminal {
					return s, nil
				}
			}
		}
	}
}

// classify decodes m and decides whether it ends the wait: a
// stop of the primary agent's run, an exception of any agent, a HITL request
// of any agent.
func (g *Gateway) classify(m *bus.Msg, p primary) (*seen, bool) {
	t, err := topic.ParseAgent(m.Subject)
	if err != nil {
		g.log.Warn("gateway: ignoring display event on an unparsable subject", "subject", m.Subject, "err", err)
		return nil, false
	}
	e, err := event.Unmarshal(m.Data)
	if err != nil {
		g.log.Warn("gateway: ignoring undecodable display event", "subject", m.Subject, "err", err)
		return nil, false
	}
	s := &seen{topic: t, event: e, raw: compact(m.Data)}
	switch {
	case event.IsException(e), event.IsHITLRequest(e):
		s.terminal = true
	case event.IsStop(e):
		s.terminal = t.Class == p.class && t.ID == p.id && (p.run == "" || t.Run == p.run)
	}
	return s, true
}

// compact makes sure an event's JSON fits on one SSE data line.
func compact(data []byte) []byte {
	if !bytes.ContainsAny(data, "\r\n") {
		return data
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r"), nil), []byte("\n"), nil)
	}
	return buf.Bytes()
}
