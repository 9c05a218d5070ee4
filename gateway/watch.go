package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// questionWatch subscribes to the HITL requests and stops of every
// discovered class, so the gateway records questions that no request of its
// own is following (the client went away, or its wait timed out) and can
// still accept their answers.
type questionWatch struct {
	g    *Gateway
	mu   sync.Mutex
	subs map[string]bus.Subscription
}

func (g *Gateway) newQuestionWatch() *questionWatch {
	return &questionWatch{g: g, subs: make(map[string]bus.Subscription)}
}

// run keeps the subscriptions in step with the discovered classes until
// ctx is done.
func (w *questionWatch) run(ctx context.Context) {
	defer w.close()
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		w.sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sync subscribes to the display subjects of every HITL request and stop
// event the discovered classes declare, and drops the subscriptions of
// classes that are gone.
func (w *questionWatch) sync(ctx context.Context) {
	want := make(map[string]bool)
	for _, c := range w.g.reg.list() {
		r := c.Response
		for _, specs := range [][]event.EventSpecs{r.HITLRequestEvents, r.StopEvents} {
			for _, s := range specs {
				p, err := topic.AgentPattern{Class: c.Name(), Type: topic.Display, Name: s.EventName}.Subject()
				if err != nil {
					continue
				}
				want[p] = true
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for p, s := range w.subs {
		if !want[p] {
			_ = s.Unsubscribe()
			delete(w.subs, p)
		}
	}
	for p := range want {
		if w.subs[p] != nil {
			continue
		}
		sub, err := w.g.bus.Subscribe(ctx, p, "", w.handle)
		if err != nil {
			if ctx.Err() == nil {
				w.g.log.Warn("gateway: cannot watch for HITL questions", "pattern", p, "err", err)
			}
			continue
		}
		w.subs[p] = sub
	}
}

func (w *questionWatch) handle(m *bus.Msg) {
	if s, ok := w.g.classify(m, primary{}); ok {
		w.g.observe(context.Background(), s)
	}
}

func (w *questionWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p, s := range w.subs {
		_ = s.Unsubscribe()
		delete(w.subs, p)
	}
}
