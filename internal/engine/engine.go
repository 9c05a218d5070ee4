package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/saap-go/agent/interceptor"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/workers"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Reserved run-context keys the engine writes (the reference's names where it
// has one).
const (
	KeyAgentConfig  = "_agent_config"  // the run's configuration (JSON)
	KeyAIHubHeaders = "_aihub_headers" // the X-AIHub-* headers of the last event that carried them
)

// ConfigMissing starts the message of the ExceptionEvent published for an
// event of a live run that has no stored configuration (the reference's text).
const ConfigMissing = "No agent config found"

// Engine dispatches the control events of one agent class to the steps of its
// workflow. It keeps no goroutine
// and no memory per run beyond a bounded history cache: everything a run needs
// is in the store.Store and on the bus, so any replica can take any event of any
// run, and a paused run costs nothing.
//
// Use Handle as the handler of the class's runner consumer
// (bus.RunnerConsumer). An Engine is safe for concurrent use.
type Engine struct {
	w      *step.Workflow
	class  string
	stream string
	// consumer is the durable consumer the engine's events come from.
	consumer string
	bus      bus.Bus
	store    store.Store
	cache    *runCache

	log        *slog.Logger
	ic         interceptor.Chain // nil: no interceptors
	heartbeat  time.Duration
	sequential bool
	config     ConfigResolver
	now        func() time.Time
	backoff    func(delivered uint64) time.Duration
	// lastAttempt is the most attempts a step's retry policy allows: a
	// delivery up to it is a step's attempt, not a crash loop's.
	lastAttempt uint64
	budget      time.Duration // outage budget for transient failures
	maxDeliver  int           // the consumer's MaxDeliver; <= 0: unlimited
	last        uint64        // delivery count at which a failing event is given up
	crashLimit  int64         // cut-short handlings of a redelivered event before it is given up
	beats       beats
	rnd         io.Reader      // source of run secrets; nil: crypto/rand
	timers      timeouts       // the questions' deadlines
	term        markerWatch    // the terminal markers
	dirty       markerWatch    // the dirty markers (runs whose state another replica wrote)
	statusWG    sync.WaitGroup // status writes made off the runs' paths
	// pool runs the store calls made beside a run's path (reads overlapped
	// with each other, the start's write, status writes).
	pool *workers.Pool
	// statusCtx ends those writes at Close; after it none starts.
	statusCtx    context.Context
	statusCancel context.CancelFunc
	statusMu     sync.Mutex
	statusClosed bool
	statusDelay  time.Duration
	translator   step.Translator // nil: texts are their keys
	delegates    bool            // a step may return an agent-in-the-loop request
	static       bool            // the configuration resolver gives every replica the same configuration
	local        bool            // the store is in process (store.InProcess): no round trips to overlap
}

// Option configures an Engine.
type Option func(*Engine)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(e *Engine) { e.log = l } }

// WithCacheSize bounds the number of runs whose history is cached
// (default 10 000). Evicted histories are reloaded from the stream on demand.
func WithCacheSize(n int) Option { return func(e *Engine) { e.cache.max = max(n, 1) } }

// WithClock sets the clock used for created_at of published events (default
// time.Now). Tests use a fixed clock for reproducible payloads.
func WithClock(now func() time.Time) Option { return func(e *Engine) { e.now = now } }

// WithBackoff sets the Nak delay after a transient failure, as a function of
// the delivery count (default: 1 s doubling up to 30 s). The delays count
// against the outage budget (WithOutageBudget).
func WithBackoff(f func(delivered uint64) time.Duration) Option {
	return func(e *Engine) { e.backoff = f }
}

// WithInterceptors installs interceptors, called in the order given (see
// package interceptor). An engine without any pays nothing for them.
func WithInterceptors(ics ...interceptor.Interceptor) Option {
	return func(e *Engine) {
		for _, ic := range ics {
			if ic != nil {
				e.ic = append(e.ic, ic)
			}
		}
	}
}

// WithHeartbeat sets how often Handle sends an in-progress acknowledgement
// while it works, well below the consumer's AckWait (default 10 s; 0 or a
// negative duration disables heartbeats).
func WithHeartbeat(d time.Duration) Option { return func(e *Engine) { e.heartbeat = d } }

// WithConfig sets how a run's agent configuration is resolved at its
// StartEvent (default: an empty configuration, and Context.Config is nil).
func WithConfig(r ConfigResolver) Option { return func(e *Engine) { e.config = r } }

// WithTranslator sets the translator behind step.Context.Translate
// (default: none, and a key is its own text).
func WithTranslator(t step.Translator) Option { return func(e *Engine) { e.translator = t } }

// Sequential makes the engine run the ready steps of one trigger one after
// the other, in candidate (alphabetical) order, in the calling goroutine.
// The default runs them concurrently. The agenttest harness uses Sequential
// for deterministic runs.
func Sequential() Option { return func(e *Engine) { e.sequential = true } }

// New returns an engine for workflow w that reads and publishes on b and
// keeps shared state in s. It does not subscribe: pass Handle to
// b.Consume with bus.RunnerConsumer(w.Class()).
func New(w *step.Workflow, b bus.Bus, s store.Store, opts ...Option) (*Engine, error) {
	if w == nil {
		return nil, errors.New("dispatch: New needs a workflow")
	}
	if b == nil {
		return nil, errors.New("dispatch: New needs a bus")
	}
	if s == nil {
		return nil, errors.New("dispatch: New needs a store")
	}
	if err := topic.ValidateToken("agent_class", w.Class()); err != nil {
		return nil, fmt.Errorf("dispatch: workflow class: %w", err)
	}
	if err := bus.RunnerConsumer(w.Class()).Validate(); err != nil {
		return nil, fmt.Errorf("dispatch: workflow class: %w", err) // names too long for JetStream
	}
	e := &Engine{
		w:           w,
		class:       w.Class(),
		stream:      topic.StreamName(w.Class()),
		consumer:    bus.RunnerConsumer(w.Class()).Durable,
		bus:         b,
		store:       s,
		cache:       newRunCache(DefaultCacheSize),
		heartbeat:   10 * time.Second,
		config:      emptyConfig{},
		now:         time.Now,
		backoff:     bus.Backoff,
		budget:      DefaultOutageBudget,
		crashLimit:  DefaultCrashLoopLimit,
		statusDelay: DefaultStatusDelay,
	}
	e.timers = timeouts{e: e, clock: wallClock{}, workers: 16}
	e.pool = workers.New(64)
	e.statusCtx, e.statusCancel = context.WithCancel(context.Background())
	if ip, ok := s.(store.InProcess); ok {
		e.local = ip.InProcess()
	}
	e.store = tracked{Store: s, e: e}
	e.term = markerWatch{name: store.MarkerTerminal, set: e.terminalSet}
	e.dirty = markerWatch{name: MarkerDirty, set: e.dirtySet}
	for _, o := range opts {
		o(e)
	}
	if st, ok := e.config.(interface{ Static() bool }); ok {
		e.static = st.Static()
	}
	e.last = e.lastDelivery()
	e.delegates = delegatesIn(w)
	for _, st := range w.Steps() {
		pol, ok := st.RetryPolicy()
		if !ok {
			continue
		}
		if n := pol.Attempts(); e.maxDeliver > 1 && n > e.maxDeliver-1 {
			return nil, fmt.Errorf("dispatch: step %s retries up to %d attempts, but the consumer delivers an event at most %d times (one is kept for giving up): lower its MaxAttempts or raise the runner's MaxDeliver",
				st.Name(), n, e.maxDeliver)
		}
		e.lastAttempt = max(e.lastAttempt, uint64(pol.Attempts()))
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	e.heartbeat = max(e.heartbeat, 0)
	e.beats.every = e.heartbeat
	return e, nil
}

// delegatesIn reports whether a step of w may return an agent-in-the-loop
// request (or a subclass of one).
func delegatesIn(w *step.Workflow) bool {
	for _, s := range w.Steps() {
		for _, n := range s.Outputs() {
			if n == "AgentInTheLoopRequestEvent" {
				return true
			}
			if t, ok := event.Lookup(n); ok && slices.Contains(t.Parents, "AgentInTheLoopRequestEvent") {
				return true
			}
		}
	}
	return false
}

// Cached reports whether the history of run is in the engine's cache (for
// tests and diagnostics: teardown evicts it).
func (e *Engine) Cached(run string) bool {
	return e.cache.peek(store.RunKey{Class: e.class, Run: run}) != nil
}

// Workflow returns the engine's workflow.
func (e *Engine) Workflow() *step.Workflow { return e.w }

// ConfigResolver provides a run's agent configuration. The runtime plugs
// the configuration RPC in here.
type ConfigResolver interface {
	// Resolve is called for a StartEvent of a run that is not torn down. It
	// returns the configuration as JSON; the engine stores it in the run
	// context under KeyAgentConfig. An error ends the run with an
	// ExceptionEvent whose message is the error's text.
	Resolve(ctx context.Context, run step.Run) (json.RawMessage, error)
	// A resolver may also have a method Static() bool: true means that
	// Resolve gives every replica the same configuration for a run (the
	// defaults of a standalone agent), so the engine does not store it and
	// any replica resolves it again.
	//
	// Decode turns the stored JSON into the value steps get from
	// step.Context.Config. An error (an invalid configuration) ends the run
	// with an ExceptionEvent whose message is the error's text: it must name
	// the failing fields, never their values.
	Decode(raw json.RawMessage) (any, error)
}

type emptyConfig struct{}

func (emptyConfig) Resolve(context.Context, step.Run) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}
func (emptyConfig) Decode(json.RawMessage) (any, error) { return nil, nil }
func (emptyConfig) Static() bool                        { return true }

// Handle processes one delivery of a control event of the engine's class
// and settles it: Ack once the event is handled — every step it started
// has published its outputs or recorded its failure —, InProgress heartbeats
// meanwhile, DeadLetter for a subject that does not parse, a foreign class
// or an event the run refuses (ErrRefused), an ExceptionEvent for the run
// and DeadLetter for an undecodable payload, and Nak with backoff on
// transient failures of the store or the bus. A permanent failure
// (IsPermanent), or a transient one that outlasts the outage budget or the
// consumer's MaxDeliver, ends the run with an ExceptionEvent and
// dead-letters the event: nothing is dropped in silence. ctx bounds the
// handling; steps see a context derived from it.
func (e *Engine) Handle(ctx context.Context, d bus.Delivery) {
	var err error
	m := d.Msg()
	t, err := topic.ParseAgent(m.Subject)
	if err != nil {
		e.deadLetter(ctx, d, fmt.Sprintf("dispatch: subject does not parse: %v", err))
		return
	}
	if t.Class != e.class || t.Type != topic.Control {
		e.deadLetter(ctx, d, fmt.Sprintf("dispatch: %q is not a control event of agent class %s", m.Subject, e.class))
		return
	}
	// A run whose ids leave no room for its ExceptionEvent's subject could
	// not even be ended: refuse it before any step runs.
	if n := len(m.Subject) - len(t.Name) - len(t.EventID) + len("ExceptionEvent") + 24; n > topic.MaxSubjectLen {
		e.deadLetter(ctx, d, fmt.Sprintf("dispatch: the run's ids are too long: its subjects would be %d bytes, over the limit of %d", n, topic.MaxSubjectLen))
		return
	}
	ev, err := event.Unmarshal(m.Data)
	if err != nil {
		// The run cannot go on without it: end it rather than leave it
		// waiting for an event that never comes.
		stub := &event.BaseEvent{Base: event.Base{EventID: t.EventID}}
		e.giveUp(ctx, t, stub, d, fmt.Sprintf("dispatch: payload of %s does not decode: %v", m.Subject, err),
			"the request's event does not decode")
		return
	}
	if hasAIHub(m.Header) {
		event.SetHeaders(ev, bus.AIHubHeaders(m.Header))
	}
	if m.Header.Lookup("traceparent") != "" {
		ctx = bus.ExtractTrace(ctx, m.Header) // continue the publisher's trace
	}
	if e.ic != nil {
		var done func(error)
		ctx, done = e.ic.Deliver(ctx, interceptor.Delivery{Topic: t, Event: ev, Seq: d.Seq(), NumDelivered: d.NumDelivered(),
			Stream: e.stream, Consumer: e.consumer})
		defer func() { done(err) }()
	}
	if n := d.NumDelivered(); n > max(e.last, e.lastAttempt) {
		// Delivered again after the last try: the handling before never
		// settled it (a crash loop, or a dead letter that failed).
		e.giveUp(ctx, t, ev, d, fmt.Sprintf("dispatch: %s %s delivered %d times without being handled (outage budget %s, max deliver %d)",
			event.Name(ev), ev.EventBase().EventID, n, e.budget, e.maxDeliver), "the agent could not handle this request and gave up")
		return
	}
	if d.NumDelivered() > 1 {
		crashed, done, aerr := e.attempt(ctx, t)
		if aerr != nil {
			e.failed(ctx, t, ev, d, aerr)
			return
		}
		if crashed > e.crashLimit {
			e.giveUp(ctx, t, ev, d, fmt.Sprintf("dispatch: %s %s: the handling was cut short %d times (the process died or lost the event while handling it)",
				event.Name(ev), ev.EventBase().EventID, crashed-1), "the agent could not handle this request and gave up")
			return
		}
		defer done()
	}
	if err = e.process(ctx, t, ev, d.Seq(), d); err != nil {
		var ended *endedError // declared here: it escapes, and the path without an error needs none
		switch {
		case errors.Is(err, ErrRefused):
			// Not the run's event: nothing is published into the run it names.
			e.deadLetter(ctx, d, err.Error())
		case errors.As(err, &ended):
			e.deadLetter(ctx, d, ended.reason)
		default:
			e.failed(ctx, t, ev, d, err)
		}
		return
	}
	if err := d.Ack(ctx); err != nil {
		e.log.WarnContext(ctx, "dispatch: ack failed", "subject", m.Subject, "error", err)
	}
}

// hasAIHub reports whether h has an X-AIHub-* header, without allocating.
func hasAIHub(h bus.Header) bool {
	for k := range h {
		if len(k) >= len(bus.AIHubPrefix) && strings.EqualFold(k[:len(bus.AIHubPrefix)], bus.AIHubPrefix) {
			return true
		}
	}
	return false
}

func (e *Engine) deadLetter(ctx context.Context, d bus.Delivery, reason string) {
	e.log.ErrorContext(ctx, "dispatch: dead-lettering a control message", "subject", d.Msg().Subject, "reason", reason)
	if e.ic != nil {
		e.ic.DeadLettered(ctx, d.Msg().Subject, reason)
	}
	if err := d.DeadLetter(ctx, reason); err != nil {
		e.log.ErrorContext(ctx, "dispatch: dead-letter failed", "subject", d.Msg().Subject, "error", err)
	}
}

// beats sends InProgress for the deliveries in flight: add registers one
// until remove. One engine-wide timer serves every delivery in flight, so a
// heartbeat costs no goroutine and, in the steady state, no allocation. A
// delivery is registered only when user code (preconditions, steps) is
// about to run.
type beats struct {
	mu    sync.Mutex
	every time.Duration
	t     *time.Timer
	armed bool
	next  uint64
	live  map[uint64]beat // keyed by registration: a Delivery need not be comparable
}

type beat struct {
	d    bus.Delivery
	last time.Time // last heartbeat (or start)
}

func (b *beats) add(d bus.Delivery) uint64 {
	if b.every <= 0 {
		return 0 // disabled: a zero-duration timer would fire in a loop
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.live == nil {
		b.live = map[uint64]beat{}
	}
	b.next++
	b.live[b.next] = beat{d: d, last: time.Now()}
	if !b.armed {
		b.armed = true
		if b.t == nil {
			b.t = time.AfterFunc(b.every, b.fire)
		} else {
			b.t.Reset(b.every)
		}
	}
	return b.next
}

func (b *beats) remove(id uint64) {
	if id == 0 {
		return
	}
	b.mu.Lock()
	delete(b.live, id)
	b.mu.Unlock()
}

func (b *beats) fire() {
	b.mu.Lock()
	now := time.Now()
	var due []bus.Delivery // fires are rare; a fresh slice keeps overlapping fires apart
	for id, bt := range b.live {
		if now.Sub(bt.last) >= b.every/2 {
			due = append(due, bt.d)
			bt.last = now
			b.live[id] = bt
		}
	}
	if len(b.live) > 0 {
		b.t.Reset(b.every)
	} else {
		b.armed = false
	}
	b.mu.Unlock()
	for _, d := range due {
		_ = d.InProgress() // a failed heartbeat only risks a redelivery, which is safe
	}
}

// Close stops the engine's heartbeat timer and its timeout scheduler
// (StartTimeouts), waiting for timeouts being published. Call it after the
// consumer that feeds Handle has stopped; the engine holds no other
// resources.
func (e *Engine) Close() {
	e.beats.stop()
	e.timers.stop()
	e.term.stop()
	e.dirty.stop()
	e.statusMu.Lock()
	e.statusClosed = true
	e.statusMu.Unlock()
	e.statusCancel()
	e.statusWG.Wait()
	e.pool.Close()
}

// spawn runs f on the engine's pool, counted by wg.
func (e *Engine) spawn(wg *sync.WaitGroup, f func()) {
	wg.Add(1)
	e.pool.Go(func() {
		defer wg.Done()
		f()
	})
}

// stop ends the timer (for Close).
func (b *beats) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.t != nil {
		b.t.Stop()
	}
	b.armed = false
}

// setMany writes entries in one call.
func (e *Engine) setMany(ctx context.Context, sc store.Scope, entries []store.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	return e.store.SetMany(ctx, sc, entries)
}
