package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// questionWatch subscribes to the HITL and BITL requests, stops,
// exceptions and wait timeouts of every discovered class, so the gateway
// records questions that no request of its own is following (the client
// went away, or its wait timed out), can still accept their answers, and
// knows when a question can no longer be answered.
//
// These are core subscriptions: what is published while the gateway is
// down is not seen. A question asked then is unknown (404); a timeout or
// run end missed then leaves the question open in the store, and the
// agent's runtime still refuses the late answer (it accepts one only for an
// open question of a live run).
type questionWatch struct {
	g    *Gateway
	mu   sync.Mutex
	subs map[watchKey]bus.Subscription
}

// watchKey is one subscription: a subject pattern and its queue group.
type watchKey struct{ pattern, queue string }

// botQueue is the queue group of the BITL request subscriptions, so that of
// several gateway replicas one records and delivers each question.
const botQueue = "saap-gateway-bitl"

func (g *Gateway) newQuestionWatch() *questionWatch {
	return &questionWatch{g: g, subs: make(map[watchKey]bus.Subscription)}
}

// run keeps the subscriptions in step with the discovered classes until
// ctx is done.
func (w *questionWatch) run(ctx context.Context) {
	defer w.close()
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		// A class added while syncing closes the channel read here, so
		// its questions are watched at once rather than at the next tick.
		w.g.reg.mu.RLock()
		changed := w.g.reg.changed
		w.g.reg.mu.RUnlock()
		w.sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-changed:
		}
	}
}

// sync subscribes to the display subjects of every HITL request and stop
// event the discovered classes declare, and drops the subscriptions of
// classes that are gone.
func (w *questionWatch) sync(ctx context.Context) {
	want := make(map[watchKey]bool)
	add := func(class string, typ topic.EventType, name, queue string) {
		p, err := topic.AgentPattern{Class: class, Type: typ, Name: name}.Subject()
		if err == nil {
			want[watchKey{p, queue}] = true
		}
	}
	ends, bots := controlNames()
	for _, c := range w.g.reg.list() {
		r := c.Response
		for _, specs := range [][]event.EventSpecs{r.HITLRequestEvents, r.StopEvents} {
			for _, s := range specs {
				add(c.Name(), topic.Display, s.EventName, "")
			}
		}
		// Exceptions and timeouts are fixed catalogue types that discovery
		// does not list; BITL requests are control events only.
		for _, n := range ends {
			add(c.Name(), topic.Control, n, "")
		}
		for _, n := range bots {
			add(c.Name(), topic.Control, n, botQueue)
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
	for k := range want {
		if w.subs[k] != nil {
			continue
		}
		sub, err := w.g.bus.Subscribe(ctx, k.pattern, k.queue, func(m *bus.Msg) { w.handle(ctx, m) })
		if err != nil {
			if ctx.Err() == nil {
				w.g.log.Warn("gateway: cannot watch for HITL questions", "pattern", k.pattern, "err", err)
			}
			continue
		}
		w.subs[k] = sub
	}
}

// controlNames returns the registered exception and wait-timeout type
// names (ends) and the BITL request type names (bots).
func controlNames() (ends, bots []string) {
	for _, t := range event.Types() {
		switch {
		case t.IsA("ExceptionEvent"), t.IsA("WaitTimeoutEvent"):
			ends = append(ends, t.Name)
		case t.IsA("BotInTheLoopRequestEvent"):
			bots = append(bots, t.Name)
		}
	}
	return ends, bots
}

func (w *questionWatch) handle(ctx context.Context, m *bus.Msg) {
	s, ok := w.g.classify(m, primary{})
	if !ok {
		return
	}
	w.g.observe(ctx, s)
	if event.IsBITLRequest(s.event) && w.g.cfg.Bot != nil {
		// Off the bus goroutine: the channel may be slow.
		go w.g.askBot(ctx, s)
	}
}

func (w *questionWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, s := range w.subs {
		_ = s.Unsubscribe()
		delete(w.subs, k)
	}
}
