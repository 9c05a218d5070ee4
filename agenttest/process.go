package agenttest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/process"
	"github.com/saap-go/agent/topic"
)

// ProcessHarness runs a process (package process) in a test: the real
// process runner and agent delegator on a manual in-memory bus, with fake
// agents, and humans and programs submitting through the real Submitter.
// Every call runs the process to quiescence in the test's goroutine.
//
//	h := agenttest.NewProcess(t, p)
//	h.Agent("DocChecker", func(start event.Event) (event.Event, error) { return &DocOK{}, nil })
//	w := h.Start("acme", &Application{})
//	req := w.Last("ApproveRequest")
//	err := h.Submit(w, &Approval{...}, user)
//	stop, ok := w.Terminal()
type ProcessHarness struct {
	t     testing.TB
	p     *process.Process
	bus   *memory.Bus
	clock *memory.ManualClock
	store store.Store
	sub   *process.Submitter
	ctx   context.Context

	mu     sync.Mutex
	events map[string][]event.Event // by walkthrough, in publish order
	dead   []*bus.Msg
	held   []AgentRun
}

// AgentRun is a run a fake agent was asked for and has not finished.
type AgentRun struct {
	Topic topic.Agent // the run's start event subject
	Start event.Event
}

// NewProcess starts the runner of p on a manual in-memory bus and an
// in-memory store (WithStore for another) and stops it when the test ends.
func NewProcess(t testing.TB, p *process.Process, opts ...Option) *ProcessHarness {
	t.Helper()
	cfg := config{}
	for _, o := range opts {
		o(&cfg)
	}
	st := cfg.store
	if st == nil {
		st = memstore.New()
	}
	log := cfg.log
	if log == nil {
		log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	clk := memory.NewManualClock(time.Unix(1_700_000_000, 0))
	b := memory.New(memory.Options{Manual: true, Clock: clk, Logger: log})
	h := &ProcessHarness{t: t, p: p, bus: b, clock: clk, store: st, ctx: ctx, events: map[string][]event.Event{}}
	r, err := process.NewRunner(p, process.WithBus(b), process.WithStore(st), process.WithLogger(log),
		process.WithConfigTimeout(time.Second), process.WithConcurrency(1))
	if err != nil {
		cancel()
		t.Fatalf("agenttest: %v", err)
	}
	if h.sub, err = process.NewSubmitter(b, st, p); err != nil {
		cancel()
		t.Fatalf("agenttest: %v", err)
	}
	if _, err := b.Subscribe(ctx, "process."+p.Class+".>", "", h.collect); err != nil {
		cancel()
		t.Fatalf("agenttest: %v", err)
	}
	if _, err := b.Subscribe(ctx, bus.DefaultDeadLetters().Subject(">"), "", func(m *bus.Msg) {
		h.mu.Lock()
		h.dead = append(h.dead, m)
		h.mu.Unlock()
	}); err != nil {
		cancel()
		t.Fatalf("agenttest: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	select {
	case <-r.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("agenttest: process runner: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agenttest: process runner: %v", err)
		}
	})
	return h
}

// Bus returns the harness's bus.
func (h *ProcessHarness) Bus() *memory.Bus { return h.bus }

// Store returns the harness's store.
func (h *ProcessHarness) Store() store.Store { return h.store }

// Submitter returns the Submitter humans and programs go through.
func (h *ProcessHarness) Submitter() *process.Submitter { return h.sub }

func (h *ProcessHarness) collect(m *bus.Msg) {
	t, err := topic.ParseProcess(m.Subject)
	if err != nil {
		return
	}
	e, err := event.Unmarshal(m.Data)
	if err != nil {
		return
	}
	h.mu.Lock()
	h.events[t.Walkthrough] = append(h.events[t.Walkthrough], e)
	h.mu.Unlock()
}

// Agent makes a fake agent of class: every start event the delegator sends
// it is answered with answer's result (a StopEvent or ExceptionEvent
// subclass) in the same run; an error answers with an ExceptionEvent; nil
// holds the run open until Finish (see AgentRuns).
func (h *ProcessHarness) Agent(class string, answer func(start event.Event) (event.Event, error)) {
	h.t.Helper()
	if err := h.bus.EnsureStream(h.ctx, bus.AgentStream(class)); err != nil {
		h.t.Fatalf("agenttest: %v", err)
	}
	filter, err := topic.ClassControl(class)
	if err != nil {
		h.t.Fatalf("agenttest: %v", err)
	}
	_, err = h.bus.Subscribe(h.ctx, filter, "", func(m *bus.Msg) {
		at, err := topic.ParseAgent(m.Subject)
		if err != nil {
			return
		}
		start, err := event.Unmarshal(m.Data)
		if err != nil || !event.IsStart(start) {
			return
		}
		out, err := answer(start)
		if err != nil {
			out = &event.ExceptionEvent{Message: err.Error(), HTTPStatusCode: 500}
		}
		if out == nil {
			h.mu.Lock()
			h.held = append(h.held, AgentRun{Topic: at, Start: start})
			h.mu.Unlock()
			return
		}
		h.finish(at, out)
	})
	if err != nil {
		h.t.Fatalf("agenttest: %v", err)
	}
}

// AgentRuns returns the runs fake agents hold open, in arrival order.
func (h *ProcessHarness) AgentRuns() []AgentRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.held)
}

// Finish ends a held agent run with out (a StopEvent or ExceptionEvent)
// and settles.
func (h *ProcessHarness) Finish(r AgentRun, out event.Event) {
	h.mu.Lock()
	h.held = slices.DeleteFunc(h.held, func(x AgentRun) bool { return x.Topic == r.Topic })
	h.mu.Unlock()
	h.finish(r.Topic, out)
	h.Settle()
}

func (h *ProcessHarness) finish(at topic.Agent, out event.Event) {
	if out.EventBase().EventID == "" {
		out.EventBase().EventID = event.NewID()
	}
	at.Name, at.EventID = event.Name(out), out.EventBase().EventID
	if _, err := bus.PublishEvent(h.ctx, h.bus, at, out, nil); err != nil {
		h.t.Errorf("agenttest: fake agent %s: %v", at.Class, err)
	}
}

// Settle delivers until nothing is pending and returns the count.
func (h *ProcessHarness) Settle() int { return h.bus.DeliverAll(h.ctx) }

// Advance moves the bus's clock (ack waits, Nak delays) by d and settles,
// so events handed back for a retry come back.
func (h *ProcessHarness) Advance(d time.Duration) int {
	h.clock.Advance(d)
	return h.Settle()
}

// Walkthrough is one walkthrough of the harness's process.
type Walkthrough struct {
	h         *ProcessHarness
	ProcessID string
	ID        string
}

// Start opens a walkthrough of process instance id with start, as a human
// or a program would through the Submitter, and runs it to quiescence.
func (h *ProcessHarness) Start(id string, start event.Event) *Walkthrough {
	h.t.Helper()
	walk, err := h.sub.Start(h.ctx, h.p.Class, id, start, nil)
	if err != nil {
		h.t.Fatalf("agenttest: start: %v", err)
	}
	h.Settle()
	return &Walkthrough{h: h, ProcessID: id, ID: walk}
}

// Submit submits a human's or a program's work into w as by (the Who
// check applies) and runs the process to quiescence.
func (h *ProcessHarness) Submit(w *Walkthrough, work event.Event, by *event.UserIdentity) error {
	err := h.sub.Submit(h.ctx, h.p.Class, w.ProcessID, w.ID, work, by)
	h.Settle()
	return err
}

// Send publishes any work event into w on its work subject, as the
// platform or another component would, and runs to quiescence.
func (h *ProcessHarness) Send(w *Walkthrough, e event.Event) {
	h.t.Helper()
	if e.EventBase().EventID == "" {
		e.EventBase().EventID = event.NewID()
	}
	if e.EventBase().CreatedAt == 0 {
		e.EventBase().CreatedAt = time.Now().UnixNano()
	}
	subj, err := topic.Process{Class: h.p.Class, ID: w.ProcessID, Walkthrough: w.ID, Type: topic.Work,
		Name: event.Name(e), EventID: e.EventBase().EventID}.Subject()
	if err != nil {
		h.t.Fatalf("agenttest: %v", err)
	}
	data, err := event.Marshal(e)
	if err != nil {
		h.t.Fatalf("agenttest: %v", err)
	}
	if _, err := h.bus.PublishStream(h.ctx, &bus.Msg{Subject: subj, Data: data}, e.EventBase().EventID); err != nil {
		h.t.Fatalf("agenttest: %v", err)
	}
	h.Settle()
}

// Events returns the walkthrough's process events (work and work
// requests) in publish order.
func (w *Walkthrough) Events() []event.Event {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	return slices.Clone(w.h.events[w.ID])
}

// Names returns the event names of Events.
func (w *Walkthrough) Names() []string {
	var out []string
	for _, e := range w.Events() {
		out = append(out, event.Name(e))
	}
	return out
}

// Last returns the last event named name, or nil.
func (w *Walkthrough) Last(name string) event.Event {
	es := w.Events()
	for i := len(es) - 1; i >= 0; i-- {
		if event.Name(es[i]) == name {
			return es[i]
		}
	}
	return nil
}

// Terminal returns the walkthrough's ProcessStopEvent or
// ProcessExceptionEvent, if one was published.
func (w *Walkthrough) Terminal() (event.Event, bool) {
	for _, e := range w.Events() {
		if event.IsProcessStop(e) || event.IsProcessException(e) {
			return e, true
		}
	}
	return nil, false
}

// DeadLetters returns the messages dead-lettered so far.
func (h *ProcessHarness) DeadLetters() []*bus.Msg {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.dead)
}

// String renders the walkthrough's events, one per line.
func (w *Walkthrough) String() string {
	s := fmt.Sprintf("walkthrough %s of %s/%s:\n", w.ID, w.h.p.Class, w.ProcessID)
	for _, e := range w.Events() {
		s += "  " + event.Name(e) + "\n"
	}
	return s
}
