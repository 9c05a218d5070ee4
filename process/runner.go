package process

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/internal/runloop"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/config"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Names of the runner's state. Walkthrough state lives in the store under
// the class "process.<Class>", so it never meets an agent class's state.
const (
	keyConfig     = "_process_config"
	markerProcess = "process_id" // the process id of the walkthrough's start
	markerStart   = "start_seq"  // stream sequence of the start event
)

// ConsumerName is the durable consumer of a process class's runners.
func ConsumerName(class string) string { return "process_runner_" + class }

// Stream returns the stream of a process class with the settings of agent
// streams: process_<Class>_stream bound to process.<Class>.*.*.*.*.* .
func Stream(class string) bus.StreamConfig {
	a := bus.AgentStream(class)
	return bus.StreamConfig{Name: topic.ProcessStreamName(class), Subjects: []string{topic.ProcessStreamSubject(class)},
		Storage: a.Storage, MaxMsgs: a.MaxMsgs, MaxAge: a.MaxAge, Duplicates: a.Duplicates}
}

func runKey(class, walk string) store.RunKey {
	return store.RunKey{Class: "process." + class, Run: walk}
}

// errRefused marks an event that does not belong where its subject says.
var errRefused = errors.New("process: event refused")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errRefused, fmt.Sprintf(format, args...))
}

// Run runs the process p until ctx is cancelled: the runner consumer and,
// when a route names an agent, the agent delegator. WithBus and WithStore
// are required.
func Run(ctx context.Context, p *Process, opts ...Option) error {
	r, err := NewRunner(p, opts...)
	if err != nil {
		return err
	}
	return r.Run(ctx)
}

// Runner runs one process class.
type Runner struct {
	p     *Process
	c     *compiled
	o     options
	ready chan struct{}
	last  uint64 // the delivery at which a failing work event is given up
}

// NewRunner validates p and the options.
func NewRunner(p *Process, opts ...Option) (*Runner, error) {
	c, err := p.compile()
	if err != nil {
		return nil, err
	}
	o := defaultOptions()
	for _, f := range opts {
		if err := f(&o); err != nil {
			return nil, err
		}
	}
	if o.bus == nil {
		return nil, errors.New("process: no bus (use WithBus)")
	}
	if o.store == nil {
		return nil, errors.New("process: no store (use WithStore)")
	}
	o.log = o.log.With("process_class", c.class)
	return &Runner{p: p, c: c, o: o, ready: make(chan struct{})}, nil
}

// Ready is closed once the consumers run.
func (r *Runner) Ready() <-chan struct{} { return r.ready }

// Workflow returns the validated process workflow.
func (r *Runner) Workflow() *step.Workflow { return r.c.wf }

// Info describes a running process runner, as WithReady reports it.
type Info struct {
	Class    string // the process class
	Stream   string // the class's JetStream stream, process_<Class>_stream
	Consumer string // the shared durable, process_runner_<Class>
}

// Run serves until ctx is cancelled; deliveries in hand when it stops come
// back to another runner, or to this one after a restart.
func (r *Runner) Run(ctx context.Context) error {
	b := r.o.bus
	if err := b.EnsureStream(ctx, Stream(r.c.class)); err != nil {
		return fmt.Errorf("process: stream %s: %w", topic.ProcessStreamName(r.c.class), err)
	}
	r.last = runloop.LastDelivery(r.o.budget, r.o.maxDeliver, bus.Backoff)
	srv := runloop.New(ctx, runloop.HandlerFunc(r.handle), r.o.concurrency, r.o.log, r.o.maxDeliver)
	var consumers []bus.Consumer
	defer func() { srv.Shutdown(r.o.shutdown, consumers...) }()
	if r.c.agentRoutes() {
		d := &delegator{c: r.c, o: r.o, ctx: srv.Context()}
		cs, err := d.start(ctx)
		consumers = append(consumers, cs...)
		if err != nil {
			return err
		}
		go d.timeouts(ctx)
	}
	if !r.o.hidden {
		resp, err := Describe(r.p)
		if err != nil {
			return fmt.Errorf("process: discovery: %w", err)
		}
		sub, err := serveDiscovery(ctx, b, resp, r.o)
		if err != nil {
			return fmt.Errorf("process: discovery: %w", err)
		}
		defer func() { _ = sub.Unsubscribe() }()
	}
	filter, err := topic.ProcessClassWork(r.c.class)
	if err != nil {
		return fmt.Errorf("process: %w", err)
	}
	info := Info{Class: r.c.class, Stream: topic.ProcessStreamName(r.c.class), Consumer: ConsumerName(r.c.class)}
	cfg := bus.ConsumerConfig{Stream: info.Stream, Durable: info.Consumer,
		FilterSubject: filter, AckWait: r.o.ackWait, MaxDeliver: r.o.maxDeliver}
	cons, err := b.Consume(ctx, cfg, srv.Deliver)
	if err != nil {
		return fmt.Errorf("process: consumer %s: %w", cfg.Durable, err)
	}
	consumers = append(consumers, cons)
	close(r.ready)
	if r.o.ready != nil {
		r.o.ready(info)
	}
	r.o.log.Info("process runner ready", "consumer", cfg.Durable)
	<-ctx.Done()
	srv.Refuse()
	r.o.log.Info("process runner stopping", "timeout", r.o.shutdown)
	return nil
}

// handle processes and settles one delivery.
func (r *Runner) handle(ctx context.Context, d bus.Delivery) {
	err := r.Process(ctx, d)
	switch {
	case err != nil && ctx.Err() != nil && !errors.Is(err, errRefused) && !engine.IsPermanent(err):
		// Cut short by the stop: not a failure of the event. Left
		// unsettled, it is handed back without a delay.
	case err == nil:
		if aerr := d.Ack(ctx); aerr != nil && !errors.Is(aerr, bus.ErrSettled) {
			r.o.log.Warn("process: ack", "error", aerr)
		}
	case errors.Is(err, errRefused), engine.IsPermanent(err), d.NumDelivered() >= r.last:
		r.o.log.Error("process: work event dead-lettered", "subject", d.Msg().Subject, "error", err)
		if !errors.Is(err, errRefused) {
			r.giveUp(ctx, d, err)
		}
		if derr := d.DeadLetter(ctx, err.Error()); derr != nil {
			r.o.log.Warn("process: dead-lettering", "error", derr)
		}
	default:
		r.o.log.Warn("process: work event not handled; retrying", "subject", d.Msg().Subject,
			"attempt", d.NumDelivered(), "error", err)
		if nerr := d.Nak(bus.Backoff(d.NumDelivered())); nerr != nil && !errors.Is(nerr, bus.ErrSettled) {
			r.o.log.Warn("process: nak", "error", nerr)
		}
	}
}

// giveUp ends the walkthrough of an event that could not be handled with a
// ProcessExceptionEvent (id derived from the event), so it does not wait
// for ever; best effort, as the store or the bus may be what fails.
func (r *Runner) giveUp(ctx context.Context, d bus.Delivery, cause error) {
	t, err := topic.ParseProcess(d.Msg().Subject)
	if err != nil {
		return
	}
	exc := &event.ProcessExceptionEvent{Message: "the process could not handle " + t.Name + ": " + cause.Error(), HTTPStatusCode: 500}
	exc.EventID = derivedID("given-up", r.c.class, t.Walkthrough, t.EventID)
	exc.CreatedAt = time.Now().UnixNano()
	t.Name, t.EventID, t.Type = event.Name(exc), exc.EventID, topic.Work
	subj, err := t.Subject()
	if err != nil {
		return
	}
	data, err := event.Marshal(exc)
	if err != nil {
		return
	}
	if _, err := r.o.bus.PublishStream(ctx, &bus.Msg{Subject: subj, Data: data}, exc.EventID); err != nil {
		r.o.log.Warn("process: could not end the walkthrough of an event given up", "subject", subj, "error", err)
	}
}

// Process handles one work event delivery without settling it: nil when
// it was handled (or is a duplicate), an error wrapping a refusal for an
// event that does not belong in the walkthrough its subject names, any
// other error for a failure of the store or the bus (handle it again).
func (r *Runner) Process(ctx context.Context, d bus.Delivery) error {
	m := d.Msg()
	t, err := topic.ParseProcess(m.Subject)
	if err != nil {
		return refuse("subject: %v", err)
	}
	if t.Class != r.c.class || t.Type != topic.Work {
		return refuse("subject %s is not a work event of process class %s", m.Subject, r.c.class)
	}
	if t.Walkthrough == topic.Wildcard {
		return refuse("subject %s names no walkthrough", m.Subject)
	}
	if t.ID == topic.AnyProcessID {
		// The reference's delegators publish work with no process id as
		// "*": it belongs to the walkthrough under its own process id.
		pid, ok, err := r.o.store.Marker(ctx, runKey(r.c.class, t.Walkthrough), markerProcess)
		if err != nil {
			return err
		}
		if !ok {
			return refuse("subject %s names no process id, and walkthrough %s is not known here", m.Subject, t.Walkthrough)
		}
		t.ID = pid
	}
	ev, err := event.Unmarshal(m.Data)
	if err != nil {
		return refuse("payload: %v", err)
	}
	if !event.IsWork(ev) {
		return refuse("%s is not a WorkEvent", event.Name(ev))
	}
	if ev.EventBase().EventID == "" {
		ev.EventBase().EventID = t.EventID
	}
	st := r.o.store
	run := runKey(r.c.class, t.Walkthrough)
	log := r.o.log.With("process_id", t.ID, "walkthrough_id", t.Walkthrough, "event", event.Name(ev), "event_id", ev.EventBase().EventID)

	// Terminal events first: they end the walkthrough, once, if they name
	// its process id.
	if event.IsProcessStop(ev) || event.IsProcessException(ev) {
		if pid, ok, err := st.Marker(ctx, run, markerProcess); err != nil {
			return err
		} else if ok && pid != t.ID {
			return refuse("walkthrough %s belongs to process id %s, not %s", t.Walkthrough, pid, t.ID)
		}
		end := store.Completed
		if event.IsProcessException(ev) {
			end = store.Crashed
		}
		if _, _, err := st.SetMarker(ctx, run, store.MarkerTerminal, "received"); err != nil {
			return err
		}
		cur, created, err := st.SetMarker(ctx, run, store.MarkerEnd, end)
		if err != nil {
			return err
		}
		if err := st.DeleteRun(ctx, run); err != nil {
			return err
		}
		if created {
			log.Info("process: walkthrough ended", "end", cur)
		} else {
			log.Debug("process: duplicate end of walkthrough", "end", cur)
		}
		return nil
	}
	if end, ok, err := st.Marker(ctx, run, store.MarkerEnd); err != nil {
		return err
	} else if ok {
		log.Info("process: work after the walkthrough ended; ignored", "end", end)
		return nil
	}
	if event.IsProcessStart(ev) {
		cur, _, err := st.SetMarker(ctx, run, markerProcess, t.ID)
		if err != nil {
			return err
		}
		if cur != t.ID {
			return refuse("walkthrough %s belongs to process id %s, not %s", t.Walkthrough, cur, t.ID)
		}
		if _, _, err := st.SetMarker(ctx, run, markerStart, fmt.Sprint(d.Seq())); err != nil {
			return err
		}
		if err := r.resolveConfig(ctx, run, t, m.Data); err != nil {
			return err
		}
	} else {
		pid, ok, err := st.Marker(ctx, run, markerProcess)
		if err != nil {
			return err
		}
		if !ok {
			return refuse("walkthrough %s of %s was never started", t.Walkthrough, r.c.class)
		}
		if pid != t.ID {
			return refuse("walkthrough %s belongs to process id %s, not %s", t.Walkthrough, pid, t.ID)
		}
	}
	if _, ok, err := st.Marker(ctx, run, store.MarkerTerminal); err != nil {
		return err
	} else if ok {
		log.Debug("process: work after the walkthrough's end was published; ignored")
		return nil
	}
	if event.IsFallback(ev) {
		return nil // an unknown subclass never triggers
	}
	cands := r.c.wf.Candidates(event.Name(ev))
	if len(cands) == 0 {
		log.Debug("process: no step takes the event")
		return nil
	}
	hist, err := r.history(ctx, t, d.Seq(), ev)
	if err != nil {
		return err
	}
	w := &walk{r: r, t: t, run: run, trigger: ev, hist: hist, d: d, log: log}
	for _, s := range cands {
		if err := w.runStep(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// resolveConfig fetches the process configuration once per walkthrough,
// on its start event, and keeps it in the walkthrough's state. Without an
// answer (no platform, a timeout, an error) the start event's own
// process_config is used, as the reference does.
func (r *Runner) resolveConfig(ctx context.Context, run store.RunKey, t topic.Process, data []byte) error {
	scope := run.RunContext()
	if _, ok, err := r.o.store.Get(ctx, scope, keyConfig); err != nil || ok {
		return err
	}
	cfg, err := r.fetchConfig(ctx, t.ID)
	if err != nil {
		var carried struct {
			Config json.RawMessage `json:"process_config"`
		}
		_ = json.Unmarshal(data, &carried)
		cfg = carried.Config
		r.o.log.Info("process: configuration RPC gave no answer; using the start event's process_config",
			"process_id", t.ID, "walkthrough_id", t.Walkthrough, "reason", err)
	}
	if len(cfg) == 0 || string(cfg) == "null" {
		cfg = json.RawMessage("{}")
	}
	if r.c.config != nil {
		// The profile's values over the class's defaults, as for agents.
		merged, err := config.MergeValue(r.c.config, cfg)
		if err != nil {
			return fmt.Errorf("process: configuration of %s/%s: %w", r.c.class, t.ID, err)
		}
		if cfg, err = json.Marshal(merged); err != nil {
			return fmt.Errorf("process: configuration of %s/%s: %w", r.c.class, t.ID, err)
		}
	}
	return r.o.store.Set(ctx, scope, keyConfig, cfg)
}

func (r *Runner) fetchConfig(ctx context.Context, id string) (json.RawMessage, error) {
	return config.NewClient(r.o.bus, config.WithTimeout(r.o.configTimeout)).FetchProcess(ctx, r.c.class, id)
}

// history reads the walkthrough's work events from the stream, from its
// start up to the trigger at seq, in stream order: the snapshot a step
// binds from. The trigger is the decoded ev.
func (r *Runner) history(ctx context.Context, t topic.Process, seq uint64, ev event.Event) ([]event.Event, error) {
	from := uint64(1)
	if v, ok, err := r.o.store.Marker(ctx, runKey(r.c.class, t.Walkthrough), markerStart); err != nil {
		return nil, err
	} else if ok {
		fmt.Sscan(v, &from)
	}
	// Work published with no process id ("*") is part of the walkthrough
	// too; work under another process id is not.
	filter, err := topic.ProcessPattern{Class: t.Class, Walkthrough: t.Walkthrough, Type: topic.Work}.Subject()
	if err != nil {
		return nil, err
	}
	stream := topic.ProcessStreamName(r.c.class)
	var out []event.Event
	seen := map[string]bool{}
	for s := from; s < seq; {
		m, err := r.o.bus.NextMsg(ctx, stream, filter, s)
		if errors.Is(err, bus.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		if m.Seq >= seq {
			break
		}
		s = m.Seq + 1
		pt, err := topic.ParseProcess(m.Subject)
		if err != nil || pt.ID != t.ID && pt.ID != topic.AnyProcessID {
			continue
		}
		e, err := event.Unmarshal(m.Data)
		if err != nil || event.IsFallback(e) {
			continue // refused when it was delivered
		}
		if e.EventBase().EventID == "" {
			e.EventBase().EventID = pt.EventID
		}
		if id := e.EventBase().EventID; !seen[id] {
			seen[id] = true
			out = append(out, e)
		}
	}
	if !seen[ev.EventBase().EventID] {
		out = append(out, ev)
	}
	return out, nil
}

// derivedID is an ObjectId-shaped id derived from parts, so every re-run
// of one step execution publishes the same ids.
func derivedID(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:12])
}
