package agenttest

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saap-go/agent/interceptor"
	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Epoch is the harness's fixed clock: created_at of every published event,
// and the time part of the ids the harness makes.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// AgentID is the agent (profile) id of the runs the harness starts.
const AgentID = "test-agent"

// Harness runs one workflow on a manual in-memory bus and store with a
// Sequential engine: every call runs the agent to quiescence in the calling
// goroutine, so results are deterministic. Create it with New; it is
// closed when the test ends.
type Harness struct {
	t      testing.TB
	w      *step.Workflow
	bus    *memory.Bus
	clock  *memory.ManualClock
	store  store.Store
	engine *engine.Engine
	ctx    context.Context
	rnd    io.Reader // the runs' secrets: seeded, so output ids repeat

	engOpts []engine.Option
	pick    func([]Pending) int // nil: deliveries go to the engine at once
	held    []bus.Delivery      // control events held for pick
	stall   bool                // FailOnStall

	mu     sync.Mutex
	nextID uint64
	runs   map[string]*Result
	order  []*Result
}

type config struct {
	concurrent bool
	store      store.Store
	engineOpt  []engine.Option
	log        *slog.Logger
	pick       func([]Pending) int
	stall      bool
}

// Option configures a Harness.
type Option func(*config)

// Concurrent lets the engine run the ready steps of one trigger
// concurrently, as in production, instead of one after the other. The
// harness still waits for all of them before the next delivery.
func Concurrent() Option { return func(c *config) { c.concurrent = true } }

// WithStore runs the harness on s instead of a fresh memstore.Store.
func WithStore(s store.Store) Option { return func(c *config) { c.store = s } }

// WithInterceptors installs interceptors in the harness's runtime, after
// its own (which records what Result reports): tracing under test, say.
func WithInterceptors(ics ...interceptor.Interceptor) Option {
	return func(c *config) { c.engineOpt = append(c.engineOpt, engine.WithInterceptors(ics...)) }
}

// WithCacheSize bounds the number of runs whose history the runtime keeps
// in memory, as agent.WithCacheSize does: 1 makes every other run's events
// reload their history from the stream.
func WithCacheSize(runs int) Option {
	return func(c *config) { c.engineOpt = append(c.engineOpt, engine.WithCacheSize(runs)) }
}

// WithMaxDeliver tells the runtime the consumer's MaxDeliver, as
// agent.WithMaxDeliver does: a failing event is given up before the last
// delivery.
func WithMaxDeliver(n int) Option {
	return func(c *config) { c.engineOpt = append(c.engineOpt, engine.WithMaxDeliver(n)) }
}

// WithOutageBudget sets how long transient failures of one event are
// retried, as agent.OutageBudget does.
func WithOutageBudget(d time.Duration) Option {
	return func(c *config) { c.engineOpt = append(c.engineOpt, engine.WithOutageBudget(d)) }
}

// ConfigResolver provides each run's agent configuration to the harness
// (see WithConfigResolver).
type ConfigResolver interface {
	// Resolve returns the configuration of run, as JSON, at its
	// StartEvent. An error ends the run with an ExceptionEvent.
	Resolve(ctx context.Context, run step.Run) (json.RawMessage, error)
	// Decode turns the JSON into the value steps get from
	// step.Context.Config. An error ends the run with an ExceptionEvent.
	Decode(raw json.RawMessage) (any, error)
}

// WithConfigResolver makes the harness resolve each run's configuration
// with r, as the platform's configuration RPC would, instead of giving every
// run an empty one. The configuration is then stored with the run.
func WithConfigResolver(r ConfigResolver) Option {
	return func(c *config) { c.engineOpt = append(c.engineOpt, engine.WithConfig(r)) }
}

// Pending is a control event delivery waiting for the engine, as an Order
// function sees it.
type Pending struct {
	// Seq is the event's stream sequence: its place in publish order.
	Seq uint64
	// Topic is the event's subject, parsed.
	Topic topic.Agent
	// Delivered counts the deliveries of the event, this one included.
	Delivered uint64
}

// Order hands the engine the pending control events in the order pick
// chooses, instead of stream order: whenever the bus is idle, pick gets
// the deliveries waiting (at least one, in stream order) and returns the
// index of the next. A concurrency test uses it to reach the interleavings
// that replicas or a parallel consumer produce; pick must be
// deterministic for the test to be.
func Order(pick func(pending []Pending) int) Option {
	return func(c *config) { c.pick = pick }
}

// Shuffle is Order with a pseudo-random pick seeded by seed: each seed is
// one reproducible interleaving. Run a test over several seeds to explore
// orders; print the seed when it fails.
func Shuffle(seed uint64) Option {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return Order(func(p []Pending) int { return rng.IntN(len(p)) })
}

// FailOnStall fails the test (t.Errorf, with Result.Stalled's report)
// whenever a Start or Send leaves its run quiet without a terminal event
// and without an open request to a human, bot or agent: the run would hang.
func FailOnStall() Option { return func(c *config) { c.stall = true } }

// WithTranslator sets the translator behind step.Context.Translate, as an
// agent's Localizer does for its runner.
func WithTranslator(t step.Translator) Option {
	return func(c *config) { c.engineOpt = append(c.engineOpt, engine.WithTranslator(t)) }
}

// WithLogger sets the logger of the engine and the bus (default: the test's
// log at level Warn).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// New returns a harness for w. It fails the test if the engine cannot be
// built.
func New(t testing.TB, w *step.Workflow, opts ...Option) *Harness {
	t.Helper()
	if w == nil {
		t.Fatal("agenttest.New: nil workflow (did step.NewWorkflow fail?)")
	}
	c := config{}
	for _, o := range opts {
		o(&c)
	}
	if c.store == nil {
		c.store = memstore.New()
	}
	if c.log == nil {
		c.log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	h := &Harness{t: t, w: w, store: c.store, runs: map[string]*Result{}, ctx: context.Background(), pick: c.pick, stall: c.stall,
		rnd: &lockedReader{r: rand.NewChaCha8([32]byte{'a', 'g', 'e', 'n', 't', 't', 'e', 's', 't'})}}
	h.clock = memory.NewManualClock(Epoch)
	h.bus = memory.New(memory.Options{Manual: true, Clock: h.clock, Logger: c.log})
	engOpts := []engine.Option{
		engine.WithHeartbeat(0),
		engine.WithClock(func() time.Time { return Epoch }),
		engine.WithInterceptors(observer{h: h}),
		engine.WithLogger(c.log),
		engine.WithRandom(h.rnd),
		// Timeouts fire when the test advances the clock, one at a time.
		engine.WithTimeoutClock(timeoutClock{h.clock}),
		engine.WithTimeoutWorkers(1),
	}
	if !c.concurrent {
		engOpts = append(engOpts, engine.Sequential())
	}
	engOpts = append(engOpts, c.engineOpt...)
	h.engOpts = engOpts
	eng, err := engine.New(w, h.bus, h.store, engOpts...)
	if err != nil {
		t.Fatalf("agenttest.New: %v", err)
	}
	h.engine = eng
	if err := eng.StartTimeouts(h.ctx); err != nil {
		t.Fatalf("agenttest.New: %v", err)
	}
	class := w.Class()
	if err := h.bus.EnsureStream(h.ctx, bus.AgentStream(class)); err != nil {
		t.Fatalf("agenttest.New: stream: %v", err)
	}
	// As the runner: the engine, not the consumer, decides when to give up.
	cc := bus.RunnerConsumer(class)
	cc.MaxDeliver = -1
	cons, err := h.bus.Consume(h.ctx, cc, h.deliver)
	if err != nil {
		t.Fatalf("agenttest.New: consumer: %v", err)
	}
	// The protocol's nine-token subject: what the class's stream captures.
	sub, err := h.bus.Subscribe(h.ctx, topic.StreamSubject(class), "", h.collect)
	if err != nil {
		t.Fatalf("agenttest.New: subscribe: %v", err)
	}
	dead, err := h.bus.Subscribe(h.ctx, bus.DefaultDeadLetters().Prefix+".>", "", h.collectDead)
	if err != nil {
		t.Fatalf("agenttest.New: subscribe: %v", err)
	}
	t.Cleanup(func() {
		_ = dead.Unsubscribe()
		_ = sub.Unsubscribe()
		_ = cons.Stop()
		_ = h.bus.Close()
		h.engine.Close()
	})
	return h
}

// deliver hands a control event to the engine, or holds it for Order.
func (h *Harness) deliver(d bus.Delivery) {
	if h.pick == nil {
		h.engine.Handle(h.ctx, d)
		return
	}
	h.held = append(h.held, d)
}

// Stub replaces the function of the step called name with fn for every
// execution from now on, as mocking an activity does in a workflow test:
// the step keeps its name, inputs, outputs and options. fn must have
// exactly the step's function type; otherwise, or if there is no such
// step, the test fails with the reason.
//
//	h.Stub("Retrieve", func(ctx step.Context, q *Query) (*Docs, error) {
//		return &Docs{Texts: []string{"canned"}}, nil
//	})
func (h *Harness) Stub(name string, fn any) {
	h.t.Helper()
	w, err := h.w.Replace(name, fn)
	if err != nil {
		h.t.Fatalf("agenttest.Stub: %v", err)
	}
	eng, err := engine.New(w, h.bus, h.store, h.engOpts...)
	if err != nil {
		h.t.Fatalf("agenttest.Stub: %v", err)
	}
	h.engine.Close()
	if err := eng.StartTimeouts(h.ctx); err != nil {
		h.t.Fatalf("agenttest.Stub: %v", err)
	}
	h.w, h.engine = w, eng
}

// NewStep returns a harness for a single step: a partial workflow of class
// "StepTest" holding only s (step.NewPartialWorkflow), for testing one step
// by sending it its inputs with Start and Send. It fails the test if the
// step is not valid.
func NewStep(t testing.TB, s *step.Step, opts ...Option) *Harness {
	t.Helper()
	w, err := step.NewPartialWorkflow("StepTest", s)
	if err != nil {
		t.Fatalf("agenttest.NewStep: %v", err)
	}
	return New(t, w, opts...)
}

// Handle hands d to the runtime as a delivery of the run consumer, ctx
// bounding its handling, and returns once what it published is delivered
// in turn (Settle).
func (h *Harness) Handle(ctx context.Context, d bus.Delivery) {
	h.engine.Handle(ctx, d)
	h.Settle()
}

// Process handles ev, with subject t and stream sequence seq, as the
// runtime handles a delivery, without settling anything: an error wrapping
// ErrRefused says the event does not belong in the run its subject names;
// any other error says it was not handled.
func (h *Harness) Process(t topic.Agent, ev event.Event, seq uint64) error {
	return h.engine.Process(h.ctx, t, ev, seq)
}

// ErrRefused is wrapped by the error Process returns for an event that
// does not belong in the run its subject names.
var ErrRefused = engine.ErrRefused

// Cached reports whether the runtime holds the run's history in memory.
func (h *Harness) Cached(run string) bool { return h.engine.Cached(run) }

// Status returns the status of run, as the runtime records it.
func (h *Harness) Status(run string) (status.Record, error) { return h.engine.Status(h.ctx, run) }

// ListRuns lists the runs of the harness's class that q selects.
func (h *Harness) ListRuns(q status.Query) (status.Page, error) { return h.engine.ListRuns(h.ctx, q) }

// PendingTimeouts is the number of question deadlines the runtime waits
// for.
func (h *Harness) PendingTimeouts() int { return h.engine.PendingTimeouts() }

// Store returns the harness's store.
func (h *Harness) Store() store.Store { return h.store }

// Bus returns the harness's manual in-memory bus.
func (h *Harness) Bus() *memory.Bus { return h.bus }

// NewID returns the next harness id: 24 lower-hex, ObjectId-shaped, with
// Epoch as its time, unique within the harness and the same in every test
// run.
func (h *Harness) NewID() string {
	h.mu.Lock()
	h.nextID++
	n := h.nextID
	h.mu.Unlock()
	var raw [12]byte
	binary.BigEndian.PutUint32(raw[:4], uint32(Epoch.Unix()))
	binary.BigEndian.PutUint64(raw[4:], n)
	return hex.EncodeToString(raw[:])
}

// RunOption sets the identity of a run started by Start.
type RunOption func(*topic.Agent)

// Thread puts the run in thread id (default: a fresh thread per run).
func Thread(id string) RunOption { return func(a *topic.Agent) { a.Thread = id } }

// RunID sets the run id (default: a fresh id).
func RunID(id string) RunOption { return func(a *topic.Agent) { a.Run = id } }

// Start publishes e on a fresh run (ids from the harness unless set on e or
// by opts) and runs the agent until nothing is pending. e is normally a start
// event; any other control event starts the run with an empty configuration
// and the run's identity already stored, as if a start step had run, so
// single steps can be tested without a start.
func (h *Harness) Start(e event.Event, opts ...RunOption) *Result {
	h.t.Helper()
	r := h.NewRun(opts...)
	if e != nil && !event.IsStart(e) {
		if err := engine.RecordIdentity(h.ctx, h.store, r.topic, h.rnd); err != nil {
			h.t.Fatalf("agenttest: seed identity: %v", err)
		}
		if err := h.store.Set(h.ctx, r.RunKey().RunContext(), engine.KeyAgentConfig, []byte(`{}`)); err != nil {
			h.t.Fatalf("agenttest: seed config: %v", err)
		}
	}
	h.Send(r, e)
	return r
}

// checkStall fails the test if FailOnStall is set and r stalled.
func (h *Harness) checkStall(r *Result) {
	h.t.Helper()
	if !h.stall {
		return
	}
	if report := r.Stalled(); report != "" {
		h.t.Errorf("agenttest: %s", report)
	}
}

// NewRun returns a run identity (ids from the harness unless set by opts)
// without publishing anything: Send into it delivers events to a run that
// never saw a start event.
func (h *Harness) NewRun(opts ...RunOption) *Result {
	a := topic.Agent{Class: h.w.Class(), ID: AgentID}
	for _, o := range opts {
		o(&a)
	}
	if a.Thread == "" {
		a.Thread = h.NewID()
	}
	if a.Run == "" {
		a.Run = h.NewID()
	}
	if a.Display == "" {
		a.Display = a.Run
	}
	return h.result(a)
}

// Send publishes e (a control event; its id is set by the harness if empty)
// into the run of r, e.g. a HITL response or the next input of a scenario,
// and runs the agent until nothing is pending. It returns r, which now also
// holds what happened.
func (h *Harness) Send(r *Result, e event.Event) *Result {
	h.t.Helper()
	h.SendOn(r.topic, e)
	h.checkStall(r)
	return r
}

// SendOn publishes e like Send, on the control subject of a (its class,
// agent id, thread, display and run; the event part is set from e), which
// need not be the identity the run was started with: for testing that the
// engine refuses events naming a run from another agent id or thread. The
// run's Result records what happened, including the dead letters.
func (h *Harness) SendOn(a topic.Agent, e event.Event) {
	h.t.Helper()
	if e == nil {
		h.t.Fatal("agenttest.Send: nil event")
	}
	b := e.EventBase()
	if b.EventID == "" {
		b.EventID = h.NewID()
	}
	if b.CreatedAt == 0 {
		b.CreatedAt = Epoch.UnixNano()
	}
	a = a.Event(topic.Control, event.Name(e), b.EventID)
	if _, err := bus.PublishEvent(h.ctx, h.bus, a, e, nil); err != nil {
		h.t.Fatalf("agenttest.Send %s: %v", event.Name(e), err)
	}
	h.Settle()
}

// SendRaw publishes a JSON event payload into the run of r as it arrives
// from another producer: on the control subject named after the payload's
// _event_name and event_id, with a fresh Nats-Msg-Id, so even a copy of an
// event already in the stream is stored again (a duplicate the stream's
// de-duplication did not catch). Then it settles. Unknown event names are
// fine: that is what it is for.
func (h *Harness) SendRaw(r *Result, data []byte) *Result {
	h.t.Helper()
	e, err := event.Unmarshal(data)
	if err != nil {
		h.t.Fatalf("agenttest.SendRaw: %v", err)
	}
	a := r.topic.Event(topic.Control, event.Name(e), e.EventBase().EventID)
	subj, err := a.Subject()
	if err != nil {
		h.t.Fatalf("agenttest.SendRaw: %v", err)
	}
	if _, err := h.bus.PublishStream(h.ctx, &bus.Msg{Subject: subj, Data: data}, h.NewID()); err != nil {
		h.t.Fatalf("agenttest.SendRaw: %v", err)
	}
	h.Settle()
	h.checkStall(r)
	return r
}

// Settle delivers everything pending, including what handlers cause, and
// returns the number of deliveries. Under Order, the held control events
// go to the engine one by one in the chosen order, each followed by what
// it caused.
func (h *Harness) Settle() int {
	n := h.bus.DeliverAll(h.ctx)
	for len(h.held) > 0 {
		pending := make([]Pending, len(h.held))
		for i, d := range h.held {
			a, _ := topic.ParseAgent(d.Msg().Subject)
			pending[i] = Pending{Seq: d.Seq(), Topic: a, Delivered: d.NumDelivered()}
		}
		i := h.pick(pending)
		if i < 0 || i >= len(pending) {
			h.t.Fatalf("agenttest: the Order function picked %d of %d pending deliveries", i, len(pending))
		}
		d := h.held[i]
		h.held = slices.Delete(h.held, i, i+1)
		h.engine.Handle(h.ctx, d)
		n += h.bus.DeliverAll(h.ctx)
	}
	return n
}

// Advance moves the bus's clock by d, which makes Nak delays, ack waits
// and the timeouts of open questions that fall within it due (a Nak'ed
// event comes back, a timeout event is published into its run), then
// settles. The engine's created_at clock stays at Epoch, so a question
// with a timeout of d times out at the first Advance that reaches d in
// total.
func (h *Harness) Advance(d time.Duration) int {
	h.clock.Advance(d)
	return h.Settle()
}

// Redeliver hands the stored control event eventID of r's run to the
// engine once more, as JetStream redelivers an unacknowledged message (same
// stream sequence, delivery count 2), then settles.
func (h *Harness) Redeliver(r *Result, eventID string) *Result {
	h.t.Helper()
	// An empty id would widen the pattern to every control event of the run.
	if err := topic.ValidateToken("event_id", eventID); err != nil {
		h.t.Fatalf("agenttest.Redeliver: %v", err)
	}
	filter, err := topic.AgentPattern{Class: h.w.Class(), Run: r.topic.Run, Type: topic.Control, EventID: eventID}.Subject()
	if err != nil {
		h.t.Fatalf("agenttest.Redeliver: %v", err)
	}
	m, err := h.bus.NextMsg(h.ctx, topic.StreamName(h.w.Class()), filter, 1)
	if err != nil {
		h.t.Fatalf("agenttest.Redeliver: event %s of run %s is not in the stream: %v", eventID, r.topic.Run, err)
	}
	d := &delivery{msg: m.Msg, seq: m.Seq, n: 2}
	h.engine.Handle(h.ctx, d)
	if !d.acked {
		h.t.Errorf("agenttest.Redeliver: the engine did not ack the redelivery of %s (settled: %s)", eventID, d.settled)
	}
	h.Settle()
	return r
}

func (h *Harness) result(a topic.Agent) *Result {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.runs[a.Run]
	if r == nil {
		r = &Result{h: h, topic: a}
		h.runs[a.Run] = r
		h.order = append(h.order, r)
	}
	return r
}

func (h *Harness) resultOf(run string) *Result {
	h.mu.Lock()
	r := h.runs[run]
	h.mu.Unlock()
	if r == nil {
		r = h.result(topic.Agent{Class: h.w.Class(), Run: run})
	}
	return r
}

// collect records every message published for the class, in publish order.
func (h *Harness) collect(m *bus.Msg) {
	a, err := topic.ParseAgent(m.Subject)
	if err != nil {
		h.t.Errorf("agenttest: unparsable subject %q: %v", m.Subject, err)
		return
	}
	ev, err := event.Unmarshal(m.Data)
	if err != nil {
		h.t.Errorf("agenttest: undecodable payload on %s: %v", m.Subject, err)
		return
	}
	r := h.resultOf(a.Run)
	r.mu.Lock()
	r.events = append(r.events, Published{Topic: a, Event: ev})
	r.mu.Unlock()
}

// collectDead records the engine's dead letters under the run they name.
func (h *Harness) collectDead(m *bus.Msg) {
	subject := m.Header.Get(bus.HeaderDeadLetterSubject)
	dl := DeadLetter{Subject: subject, Reason: m.Header.Get(bus.HeaderDeadLetterReason)}
	run := ""
	if a, err := topic.ParseAgent(subject); err == nil {
		run = a.Run
	}
	r := h.resultOf(run)
	r.mu.Lock()
	r.dead = append(r.dead, dl)
	r.mu.Unlock()
}

// observer is the harness's interceptor: it records what the engine did
// on each run's Result.
type observer struct {
	interceptor.Base
	h *Harness
}

func (o observer) Executed(_ context.Context, x interceptor.Execution) {
	r := o.h.resultOf(x.Run.Run)
	r.mu.Lock()
	r.execs = append(r.execs, Execution{Step: x.Step, Inputs: x.Inputs, Err: x.Err, Rerun: x.Rerun})
	r.triggers = append(r.triggers, x.Trigger)
	r.mu.Unlock()
}

func (o observer) Ended(_ context.Context, e interceptor.End) {
	r := o.h.resultOf(e.Run.Run)
	r.mu.Lock()
	r.teardowns = append(r.teardowns, e)
	r.mu.Unlock()
}

func (o observer) Dropped(_ context.Context, d interceptor.Drop) {
	r := o.h.resultOf(d.Run.Run)
	r.mu.Lock()
	r.dropped = append(r.dropped, d.Event)
	r.mu.Unlock()
}

// Equal reports a go-cmp diff (-want +got) as a test error when got and
// want differ. It compares an Execution's Trigger by wire name and event
// id, and a nil Trigger on either side matches any.
func Equal[T any](t testing.TB, got, want T, opts ...cmp.Option) bool {
	t.Helper()
	if d := cmp.Diff(want, got, append([]cmp.Option{compareTriggers}, opts...)...); d != "" {
		t.Errorf("mismatch (-want +got):\n%s", d)
		return false
	}
	return true
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// lockedReader serialises reads: the harness and its engine share it.
type lockedReader struct {
	mu sync.Mutex
	r  io.Reader
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}

// delivery is a synthetic redelivery of a stored message.
type delivery struct {
	msg     bus.Msg
	seq     uint64
	n       uint64
	acked   bool
	settled string
}

func (d *delivery) Msg() *bus.Msg             { return &d.msg }
func (d *delivery) Seq() uint64               { return d.seq }
func (d *delivery) NumDelivered() uint64      { return d.n }
func (d *delivery) Ack(context.Context) error { d.acked, d.settled = true, "ack"; return nil }
func (d *delivery) Nak(time.Duration) error   { d.settled = "nak"; return nil }
func (d *delivery) InProgress() error         { return nil }
func (d *delivery) Term(reason string) error  { d.settled = "term: " + reason; return nil }
func (d *delivery) DeadLetter(_ context.Context, reason string) error {
	d.settled = "dead letter: " + reason
	return nil
}

var executionType = reflect.TypeFor[Execution]()

// compareTriggers compares Execution.Trigger by identity: events carry
// unexported decode state that cmp cannot read.
var compareTriggers = cmp.FilterPath(func(p cmp.Path) bool {
	sf, ok := p.Last().(cmp.StructField)
	return ok && sf.Name() == "Trigger" && len(p) >= 2 && p.Index(-2).Type() == executionType
}, cmp.Comparer(func(a, b event.Event) bool {
	if a == nil || b == nil {
		return true
	}
	return event.Name(a) == event.Name(b) && a.EventBase().EventID == b.EventBase().EventID
}))

// timeoutClock adapts the harness's manual clock to the engine's timeout
// scheduler.
type timeoutClock struct{ c *memory.ManualClock }

func (c timeoutClock) Now() time.Time { return c.c.Now() }
func (c timeoutClock) AfterFunc(d time.Duration, f func()) interface{ Stop() bool } {
	return c.c.AfterFunc(d, f)
}
