package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saap-go/agent/interceptor"
	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/store"
	"github.com/saap-go/agent/store/natskv"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/config"
	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/runloop"
	"github.com/saap-go/agent/semantic"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Errors callers branch on.
var (
	// ErrInvalidAgent wraps every problem found in the agent by New: a nil
	// agent, a bad class name, or workflow validation failures.
	ErrInvalidAgent = errors.New("agent: invalid agent")
	// ErrAlreadyRunning is returned by Runner.Run when called twice.
	ErrAlreadyRunning = errors.New("agent: runner already started")
)

// Run runs a until ctx is cancelled, then shuts down gracefully and returns
// nil. It returns an error at once if the agent is invalid or the runner
// cannot connect or set up its stream and consumer, and later if the NATS
// connection closes for good.
//
// With no options, Run starts an embedded nats-server (JetStream in a
// temporary directory) and keeps run state in JetStream KV. NATS_URL (or the
// reference's NATS_ENDPOINT, with NATS_TOKEN) joins a real NATS server
// instead; REDIS_URL keeps run state in Redis. See the package documentation
// for the whole list.
//
// Graceful shutdown: the runner stops taking control events, lets the events
// in hand finish within the shutdown timeout (WithShutdownTimeout), hands the
// rest back to the stream for another replica, then drains and closes what it
// opened.
func Run(ctx context.Context, a Agent, opts ...Option) error {
	r, err := New(a, opts...)
	if err != nil {
		return err
	}
	return r.Run(ctx)
}

// A Runner runs one agent. New checks the agent and the options without any
// I/O; Run connects and serves. Tests and programs that embed a runner use
// Ready to learn when it takes events.
type Runner struct {
	class    string
	agent    Agent
	workflow *step.Workflow
	cfg      *configResolver
	// discovery is the class's discovery answer (nil when not
	// discoverable).
	discovery *event.AgentClassDiscoveryResponseEvent
	o         options
	log       *slog.Logger

	started atomic.Bool
	ready   chan struct{}
	info    atomic.Pointer[Info]
	store   atomic.Pointer[storeRef]  // set by Run, for RunStatus and ListRuns
	health  atomic.Pointer[healthRef] // set by Run once ready, for Health
	trace   *semantic.Tracing         // nil: tracing off
}

// New checks a and the options and returns a runner for it. All problems of
// the agent's workflow are reported together, wrapped in ErrInvalidAgent.
func New(a Agent, opts ...Option) (*Runner, error) {
	if a == nil || isNilPointer(a) {
		return nil, fmt.Errorf("%w: nil agent", ErrInvalidAgent)
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	class := ClassOf(a)
	if err := topic.ValidateToken("agent_class", class); err != nil {
		return nil, fmt.Errorf("%w: class name: %w", ErrInvalidAgent, err)
	}
	w, err := step.NewWorkflow(class, a.Steps()...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidAgent, err)
	}
	cfg, err := newConfigResolver(a)
	if err != nil {
		return nil, err
	}
	r := &Runner{
		class:    class,
		agent:    a,
		workflow: w,
		cfg:      cfg,
		o:        o,
		log:      o.logger.With("agent_class", class),
		ready:    make(chan struct{}),
	}
	if o.discoverable {
		if r.discovery, err = discoveryResponse(r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Class returns the agent class the runner serves.
func (r *Runner) Class() string { return r.class }

// Workflow returns the agent's validated workflow.
func (r *Runner) Workflow() *step.Workflow { return r.workflow }

// Ready is closed once the runner takes events.
func (r *Runner) Ready() <-chan struct{} { return r.ready }

// Info describes the running runner; it is the zero Info before Ready.
func (r *Runner) Info() Info {
	if p := r.info.Load(); p != nil {
		return *p
	}
	return Info{}
}

// Run serves until ctx is cancelled and returns nil after a graceful
// shutdown (see the package function Run). If the NATS connection closes
// for good (the client gave up on it), Run shuts down and returns an error
// wrapping bus.ErrClosed, so a supervisor can restart the process. A runner
// runs once.
func (r *Runner) Run(ctx context.Context) (err error) {
	if !r.started.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	res := &resources{log: r.log}
	defer func() {
		if cerr := res.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	info := Info{Class: r.class, Stream: topic.StreamName(r.class), Consumer: consumerName(r.class)}
	b, err := r.connect(ctx, res, &info)
	if err != nil {
		return err
	}
	st, err := r.openStore(ctx, res, b, &info)
	if err != nil {
		return err
	}
	if err := b.EnsureStream(ctx, bus.AgentStream(r.class)); err != nil {
		return fmt.Errorf("agent: stream %s: %w", info.Stream, err)
	}
	info.Standalone = r.standalone(info.Embedded)
	if err := r.serveStatus(ctx, res, b, st); err != nil {
		return err
	}
	if r.trace = r.tracing(); r.trace != nil {
		defer r.trace.Close() // after the engine: ends the run spans still open
	}
	eng, err := r.engine(b, st, info.Standalone, r.o.maxDeliver)
	if err != nil {
		return err
	}
	defer func() { eng.Close() }() // after the consumer has stopped (srv.Shutdown)
	if delegates(r.workflow) {
		// Before the runner consumer, so that no AITL request a run
		// publishes precedes the consumer that starts its delegate.
		d, err := startDelegator(ctx, r.class, b, st, r.log)
		if err != nil {
			return err
		}
		defer d.stop() // after the runner consumer has stopped
	}
	if r.o.discoverable {
		if err := r.serveDiscovery(ctx, res, b); err != nil {
			return err
		}
	}

	cfg := bus.RunnerConsumer(r.class)
	cfg.AckWait = r.o.ackWait
	cfg.MaxDeliver = r.o.maxDeliver
	srv := runloop.New(ctx, eng, r.o.concurrency, r.log, cfg.MaxDeliver)
	used := cfg
	cons, err := b.Consume(ctx, cfg, srv.Deliver)
	if err != nil {
		// A drifted consumer that the server refuses to update is logged
		// and used as it is; any other
		// failure stops the start.
		if cur, ok := driftedConsumer(ctx, b, cfg); ok {
			r.log.Warn("agent: could not reconcile the runner consumer; continuing with its current settings",
				"consumer", cfg.Durable, "error", err, "ack_wait", cur.AckWait, "max_deliver", cur.MaxDeliver,
				"max_ack_pending", cur.MaxAckPending)
			// The engine must give up by the consumer's MaxDeliver, or
			// the server would drop a failing event in silence.
			eng.Close()
			if eng, err = r.engine(b, st, info.Standalone, cur.MaxDeliver); err != nil {
				return err
			}
			srv = runloop.New(ctx, eng, r.o.concurrency, r.log, cur.MaxDeliver)
			used = cur
			cons, err = b.Consume(ctx, cur, srv.Deliver)
		}
		if err != nil {
			return fmt.Errorf("agent: consumer %s: %w", cfg.Durable, err)
		}
	}

	// Pending deadlines of questions are listed (keys only) in the
	// background, so a restart does not wait for them, and served by one
	// timer for the whole class, however many runs are paused.
	if err := eng.StartTimeoutsBackground(ctx); err != nil {
		return fmt.Errorf("agent: %w", err)
	}

	if r.o.discoverable {
		// Announced once the consumer runs, so a gateway that routes to
		// the class at once finds it taking events.
		if err := discovery.Announce(ctx, b, r.discovery); err != nil {
			r.log.Warn("agent: could not announce the class; gateways discover it at their next cycle", "error", err)
		}
	}

	h := &healthRef{bus: b, store: st}
	defer h.stopped()
	r.health.Store(h)
	r.info.Store(&info)
	if r.o.ready != nil {
		r.o.ready(info)
	}
	close(r.ready)
	r.log.Info("agent runner ready", "stream", info.Stream, "consumer", info.Consumer,
		"nats", info.NATSURL, "embedded", info.Embedded, "store", info.Store, "standalone", info.Standalone)

	var lost <-chan struct{} // nil (never ready) for a bus that cannot tell
	if c, ok := b.(natsbus.ClosedReporter); ok {
		lost = c.Closed()
	}
	var stateLost <-chan error // nil (never ready) for a store that cannot tell
	if l, ok := st.(store.LossReporter); ok {
		stateLost = l.Lost()
	}
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-lost:
			h.setDown("nats", "closed")
			srv.Refuse()
			r.log.Error("agent runner stopping: the NATS connection closed for good")
			res.closeDiscovery()
			srv.Shutdown(r.o.shutdownTimeout, cons)
			return fmt.Errorf("agent: %w: the NATS connection closed for good", bus.ErrClosed)
		case cause := <-lossOf(cons):
			h.setDown("consumer", "removed on the server; being recreated")
			c, err := r.recoverConsumer(ctx, b, used, srv, eng, cons, cause)
			if err != nil {
				if ctx.Err() != nil {
					break wait
				}
				h.setDown("consumer", "removed on the server and could not be recreated")
				srv.Refuse()
				r.log.Error("agent runner stopping", "error", err)
				res.closeDiscovery()
				srv.Shutdown(r.o.shutdownTimeout, cons)
				return err
			}
			cons = c
			h.down.Store(nil)
		case cause := <-stateLost:
			r.storeLost(ctx, eng, cause)
		}
	}
	// No new event is taken from here on: closing discovery may take a
	// while, and a step running now may publish the next event meanwhile.
	h.setDown("runner", "stopping")
	srv.Refuse()
	r.log.Info("agent runner stopping", "timeout", r.o.shutdownTimeout)
	res.closeDiscovery()
	srv.Shutdown(r.o.shutdownTimeout, cons)
	return nil
}

// lossOf is the loss report of c, or nil (never ready) for a consumer that
// cannot tell.
func lossOf(c bus.Consumer) <-chan error {
	if l, ok := c.(bus.LossReporter); ok {
		return l.Lost()
	}
	return nil
}

// recoverConsumer recreates the class stream and the runner consumer after
// the server removed the consumer (deleted, or with its stream), so the
// runner does not live on taking nothing. Runs whose stream was deleted
// lost their record: they are ended with an ExceptionEvent rather than left
// waiting. It gives up after a few attempts; Run then returns the error.
func (r *Runner) recoverConsumer(ctx context.Context, b bus.Bus, cfg bus.ConsumerConfig, srv *runloop.Server, eng *engine.Engine,
	old bus.Consumer, cause error) (bus.Consumer, error) {
	r.log.Error("agent: the runner consumer was removed on the server; recreating the stream and the consumer", "error", cause)
	_ = old.Stop()
	_, serr := b.StreamInfo(ctx, cfg.Stream)
	streamGone := errors.Is(serr, bus.ErrNotFound)
	var last error
	for attempt := range 6 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(100<<attempt) * time.Millisecond):
			}
		}
		if err := b.EnsureStream(ctx, bus.AgentStream(r.class)); err != nil {
			last = err
			continue
		}
		c, err := b.Consume(ctx, cfg, srv.Deliver)
		if err != nil {
			last = err
			continue
		}
		if streamGone {
			n := eng.AbandonRuns(ctx, "the agent lost this run's events (its stream was deleted) and cannot go on")
			r.log.Warn("agent: the class stream was deleted and is recreated; the runs it held were ended", "stream", cfg.Stream, "runs_ended", n)
		} else {
			r.log.Warn("agent: the runner consumer is recreated; the stream's events are delivered again from its start", "consumer", cfg.Durable)
		}
		return c, nil
	}
	return nil, fmt.Errorf("agent: the runner consumer %s was removed on the server and could not be recreated: %w", cfg.Durable, last)
}

// storeLost answers the state store's report that a bucket of it was
// deleted and recreated empty. The runs the runner held lost their claims
// and counters, so going on could run their steps again: they are ended
// with an ExceptionEvent, as when their stream is lost. Thread contexts
// alone going only costs the threads' memory.
func (r *Runner) storeLost(ctx context.Context, eng *engine.Engine, cause error) {
	var lb *natskv.LostBucketError
	if errors.As(cause, &lb) && !lb.State {
		r.log.Warn("agent: the state store's thread bucket was deleted and is recreated empty; thread contexts are lost", "error", cause)
		return
	}
	n := eng.AbandonRuns(ctx, "the agent lost this run's state (its state store was deleted) and cannot go on")
	r.log.Error("agent: the state store's bucket was deleted and is recreated empty; the runs it held were ended", "error", cause, "runs_ended", n)
}

// resources are what Run opened and must close, in reverse order.
type resources struct {
	log       *slog.Logger
	mu        sync.Mutex
	closers   []func() error
	discovery func() error
}

func (r *resources) add(f func() error) {
	r.mu.Lock()
	r.closers = append(r.closers, f)
	r.mu.Unlock()
}

func (r *resources) closeDiscovery() {
	r.mu.Lock()
	f := r.discovery
	r.discovery = nil
	r.mu.Unlock()
	if f != nil {
		if err := f(); err != nil {
			r.log.Warn("stopping discovery", "error", err)
		}
	}
}

func (r *resources) close() error {
	r.closeDiscovery()
	r.mu.Lock()
	cs := r.closers
	r.closers = nil
	r.mu.Unlock()
	var errs []error
	for i := len(cs) - 1; i >= 0; i-- {
		if err := cs[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func consumerName(class string) string { return "agent_runner_" + class }

// engine builds the dispatch engine with the runtime's hooks: the config
// RPC (or the defaults when Standalone), heartbeats well within AckWait,
// logging and tracing.
func (r *Runner) engine(b bus.Bus, s store.Store, standalone bool, maxDeliver int) (*engine.Engine, error) {
	// A copy per Run: the Runner must not keep the bus (and through it
	// the engine) alive after Run returns.
	cfg := *r.cfg
	if standalone {
		cfg.src, cfg.static = config.Standalone(), true
	} else {
		cfg.src = config.NewClient(b)
	}
	opts := []engine.Option{
		engine.WithLogger(r.log),
		engine.WithConfig(&cfg),
		engine.WithHeartbeat(r.o.ackWait / 3),
		engine.WithOutageBudget(r.o.outageBudget),
		engine.WithCrashLoopLimit(r.o.crashLoopLimit),
		engine.WithMaxDeliver(maxDeliver),
		// Deadlines recorded by a replica that stopped for good are
		// picked up by the others.
		engine.WithTimeoutRescan(timeoutRescan),
	}
	if r.o.cacheSize > 0 {
		opts = append(opts, engine.WithCacheSize(r.o.cacheSize))
	}
	if l, ok := r.agent.(Localizer); ok {
		opts = append(opts, engine.WithTranslator(l.Translator()))
	}
	// Tracing first: the other interceptors run inside its spans.
	var ics []interceptor.Interceptor
	if r.trace != nil {
		ics = append(ics, r.trace)
	}
	if ics = append(ics, r.o.interceptors...); len(ics) > 0 {
		opts = append(opts, engine.WithInterceptors(ics...))
	}
	eng, err := engine.New(r.workflow, b, s, opts...)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return eng, nil
}

// timeoutRescan is how often a runner lists the pending deadlines of its
// class, to fire those whose replica is gone.
const timeoutRescan = time.Minute

// standalone says whether runs use the defaults instead of the config RPC:
// by option, by SAAP_STANDALONE, or because the runner started its own
// embedded server, which no platform can reach.
func (r *Runner) standalone(embedded bool) bool {
	switch {
	case r.o.standalone:
		return true
	case envTrue(os.Getenv(EnvStandalone)):
		r.log.Info("agent: standalone: runs use the default configuration", "env", EnvStandalone)
		return true
	case embedded:
		r.log.Info("agent: standalone on the embedded NATS server: runs use the default configuration, no platform is asked")
		return true
	}
	return false
}

func envTrue(v string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	return err == nil && b
}

// driftedConsumer returns cfg with the AckWait, MaxDeliver and MaxAckPending
// of the existing consumer, when one exists on a JetStream bus with the same
// filter and different settings.
func driftedConsumer(ctx context.Context, b bus.Bus, cfg bus.ConsumerConfig) (bus.ConsumerConfig, bool) {
	jsb, ok := b.(natsbus.JetStreamer)
	if !ok {
		return cfg, false
	}
	c, err := jsb.JetStream().Consumer(ctx, cfg.Stream, cfg.Durable)
	if err != nil {
		return cfg, false
	}
	have := c.CachedInfo().Config
	want := cfg.WithDefaults()
	if have.FilterSubject != want.FilterSubject ||
		(have.AckWait == want.AckWait && have.MaxDeliver == want.MaxDeliver && have.MaxAckPending == want.MaxAckPending) {
		return cfg, false
	}
	cur := want
	cur.AckWait, cur.MaxDeliver, cur.MaxAckPending = have.AckWait, have.MaxDeliver, have.MaxAckPending
	return cur, true
}
