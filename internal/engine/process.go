package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/saap-go/agent/interceptor"
	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Process handles one control event of the engine's class, delivered at
// stream sequence seq with subject t, and returns once every step it started
// has published its outputs or recorded its failure. An error wrapping
// ErrRefused means the event does not belong in the run its subject names
// (see ErrRefused): nothing was done, and it must not be redelivered. Any
// other error means the event was not handled: a permanent failure
// (IsPermanent) must not be retried; any other is transient (store or bus)
// and the event should be redelivered; handling it again is safe. Handle is
// Process plus decoding and settling a delivery.
func (e *Engine) Process(ctx context.Context, t topic.Agent, ev event.Event, seq uint64) error {
	return e.process(ctx, t, ev, seq, nil)
}

// process is Process; d, if not nil, gets heartbeats while user code runs.
func (e *Engine) process(ctx context.Context, t topic.Agent, ev event.Event, seq uint64, d bus.Delivery) (perr error) {
	if ev == nil {
		return errors.New("dispatch: Process(nil event)")
	}
	if t.Class != e.class {
		return refuse("agent_class %q of subject %s is not the engine's class %s", t.Class, t, e.class)
	}
	if ev.EventBase().EventID == "" {
		ev.EventBase().EventID = t.EventID
	}
	run := store.RunKey{Class: e.class, Run: t.Run}

	// Terminal events first, by parent chain, before any configuration.
	if event.IsStop(ev) || event.IsException(ev) {
		if err := e.fenceTerminal(ctx, run, t); err != nil {
			return err
		}
		return e.finish(ctx, run, t, ev, seq, d)
	}
	r := e.cache.get(run)
	if r.terminated.Load() {
		e.log.DebugContext(ctx, "dispatch: event after the run's terminal event ignored",
			"run_id", t.Run, "event", event.Name(ev), "event_id", ev.EventBase().EventID)
		return nil
	}
	// An event decoded through the ancestry fallback never triggers.
	var cands []*step.Step
	if !event.IsFallback(ev) {
		cands = e.w.Candidates(event.Name(ev))
	}
	// The run's identity (agent id and thread at its start) fences every
	// event; it is read from the store only when this process does not know
	// it yet. A StartEvent records it.
	// Across replicas: nothing starts once a terminal event was published
	// or received. One marker read per trigger serves a StartEvent's
	// duplicate check too: teardown sets store.MarkerTerminal before store.MarkerEnd, so
	// an ended run always has it.
	// With a live watch of the terminal markers, the marker is read once
	// per run and watch: later events rely on the watch.
	start, answer, cancel := event.IsStart(ev), isAnswer(ev), event.IsCancelRequest(ev)
	// A redelivered start likely finds its run recorded already.
	first := d == nil || d.NumDelivered() <= 1
	id := r.ident.Load()
	term := start || answer || cancel || len(cands) > 0
	var ep uint64
	if term {
		ep = e.terminalEpoch(ctx)
	}
	var ended bool
	var err error
	if start || id == nil {
		var rs runRead
		if rs, err = e.readRun(ctx, run, t, start, id, term, first); err != nil {
			return err
		}
		id, ended = rs.id, rs.ended
		if rs.founded {
			// The dirty markers are watched from before the run's first
			// step, so that teardown hears of every other replica's write.
			r.dirtyEpoch.Store(e.epochOf(ctx, &e.dirty))
			r.founded.Store(true)
		}
	} else if term && (ep == 0 || r.termEpoch.Load() != ep) {
		_, ended, err = e.store.Marker(ctx, run, store.MarkerTerminal)
	}
	if term && ep != 0 && err == nil && !ended {
		r.termEpoch.Store(ep)
	}
	if id != nil {
		r.ident.CompareAndSwap(nil, id)
		if err := id.admit(t); err != nil {
			return err
		}
	}
	if err != nil {
		return fmt.Errorf("dispatch: read terminal marker: %w", err)
	} else if ended {
		e.log.InfoContext(ctx, "dispatch: event of a run that ended or is ending skipped",
			"run_id", t.Run, "event", event.Name(ev), "event_id", ev.EventBase().EventID)
		r.terminate()
		return nil
	}
	if cancel {
		return e.cancelRun(ctx, r, t, ev, seq, id)
	}
	if answer {
		if err := e.acceptAnswer(ctx, run, t, ev); err != nil {
			return err
		}
		e.noteRunning(ctx, r, t)
	}
	if start {
		// The event is acked only once the run context it seeds is stored.
		// A failed write is this handling's: the start is handed back, and
		// the run's later events here (its redelivery may be handled by
		// another replica, which writes the run context again) must not
		// fail with it.
		defer func() {
			if werr := r.waitSeed(ctx); werr != nil {
				if perr == nil {
					perr = werr
				}
				r.dropFailedSeed()
			}
		}()
	}
	cfg, ok, err := e.prepare(ctx, r, t, ev, seq, first)
	if ok && start {
		// store.Pending unless a step ran at once (it recorded running or
		// waiting): one status write fewer per run.
		defer func() {
			if p := r.state.Load(); p == nil || *p == status.Pending {
				e.noteStart(ctx, r, t)
			}
		}()
	}
	if err != nil || !ok || len(cands) == 0 {
		return err
	}

	r.mu.Lock()
	if err := r.setFilter(t); err != nil {
		r.mu.Unlock()
		return err
	}
	if boundByTrigger(cands, event.Name(ev)) {
		// Nothing before the trigger can change what the steps get: the
		// stream read is left to the first step that needs the history.
		r.addTrigger(seq, ev)
	} else if err := e.load(ctx, r, seq, ev); err != nil {
		r.mu.Unlock()
		return err
	}
	snap := r.snapshot(seq, ev)
	plans := make([]*plan, 0, len(cands))
	for _, s := range cands {
		if p := e.bind(&snap, s); p != nil {
			plans = append(plans, p)
		}
	}
	r.mu.Unlock()

	if len(plans) == 0 {
		return nil
	}
	// Steps and preconditions see a context that ends with the run.
	sctx := &plans[0].ctx // one for all: it lives as long as its plan
	r.track(sctx, ctx)
	defer r.untrack(sctx)
	if d != nil && e.heartbeat > 0 {
		defer e.beats.remove(e.beats.add(d)) // add runs now, remove on return
	}

	// Readiness beyond availability: max executions, then the precondition.
	// All candidates are judged before any runs.
	ready := plans[:0]
	for _, p := range plans {
		p.scv = stepContext{Context: sctx, e: e, r: r, t: t, seq: seq, run: runOf(t, ev), step: p.step.Name(), b: &p.b, cfg: cfg}
		p.sc = &p.scv
		ok, err := e.ready(ctx, run, p)
		if err != nil {
			return err
		}
		if ok {
			ready = append(ready, p)
		}
	}
	if len(ready) == 0 {
		return nil
	}
	// A first delivery records each execution once it is done (one store
	// write); a redelivery claims first, so that a step that completed is
	// not run again.
	attempt := 1
	if d != nil {
		attempt = int(d.NumDelivered())
	}
	for _, p := range ready {
		p.fresh, p.attempt = first, attempt
	}
	if e.sequential || len(ready) == 1 {
		for _, p := range ready {
			if err := e.execute(ctx, r, t, ev, p); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, len(ready))
	var ex sync.WaitGroup
	for i, p := range ready {
		ex.Go(func() { errs[i] = e.execute(ctx, r, t, ev, p) })
	}
	ex.Wait()
	return errors.Join(errs...)
}

// boundByTrigger reports whether every candidate binds the trigger alone:
// each parameter, and each of its precondition's, is a single event of a
// type the trigger has, so the run's earlier events cannot change a binding.
func boundByTrigger(cands []*step.Step, trigger string) bool {
	only := func(ps []step.Param) bool {
		for _, p := range ps {
			if p.Kind != step.Single || !slices.Contains(p.Names, trigger) {
				return false
			}
		}
		return true
	}
	for _, s := range cands {
		if !only(s.Params()) || (s.HasPrecondition() && !only(s.PreconditionParams())) {
			return false
		}
	}
	return true
}

// runRead is what readRun found.
type runRead struct {
	id      *runIdentity // nil: none recorded
	ended   bool
	founded bool // this call recorded the identity: the run is new
}

// readRun reads what an event needs from the store when this process does
// not know the run's identity or the event is a start: the identity (a
// start records it unless known) and, if term, the terminal marker. A
// start's first delivery that records the identity has founded the run,
// which then has no terminal marker to read. A cached run's other events
// need none of it.
func (e *Engine) readRun(ctx context.Context, run store.RunKey, t topic.Agent, start bool, id *runIdentity, term, fresh bool) (runRead, error) {
	rs := runRead{id: id}
	var idErr, termErr error
	readTerm := func() { _, rs.ended, termErr = e.store.Marker(ctx, run, store.MarkerTerminal) }
	switch {
	case start && id == nil && fresh:
		rs.id, rs.founded, idErr = claimIdentityNew(ctx, e.store, run, t, e.rnd)
		if idErr == nil && !rs.founded && term {
			readTerm()
		}
		term = false
	case start && id == nil:
		if term && !e.local {
			var wg sync.WaitGroup
			e.spawn(&wg, readTerm)
			rs.id, idErr = claimIdentity(ctx, e.store, run, t, e.rnd)
			wg.Wait()
			term = false
		} else {
			rs.id, idErr = claimIdentity(ctx, e.store, run, t, e.rnd)
		}
	case id == nil:
		if term && !e.local {
			var wg sync.WaitGroup
			e.spawn(&wg, readTerm)
			rs.id, idErr = e.loadIdentity(ctx, run)
			wg.Wait()
			term = false
		} else {
			rs.id, idErr = e.loadIdentity(ctx, run)
		}
	}
	if idErr == nil && term {
		readTerm()
	}
	if idErr != nil {
		return rs, idErr
	}
	if termErr != nil {
		return rs, fmt.Errorf("dispatch: read terminal marker: %w", termErr)
	}
	return rs, nil
}

// prepare resolves or loads the run's configuration, writes what a
// StartEvent leaves in the store and returns the run's decoded
// configuration; ok is false when the event must not be evaluated. The
// caller has checked that the run has not ended. A start writes only what
// the stream cannot say: the configuration, unless the resolver gives every
// replica the same one (Static), and the X-AIHub headers it carries. Its
// public fields are read from the start event itself (see state).
func (e *Engine) prepare(ctx context.Context, r *runEntry, t topic.Agent, ev event.Event, seq uint64, first bool) (cfg any, ok bool, err error) {
	run := r.key
	sc := run.RunContext()
	start := event.IsStart(ev)
	r.cfgMu.Lock()
	defer r.cfgMu.Unlock()
	var batch []store.Entry
	var raw []byte
	if !r.cfgLoaded {
		switch {
		case start:
			raw, err = e.config.Resolve(ctx, runOf(t, ev))
			if err != nil {
				return nil, false, e.fail(ctx, r, t, ev, err.Error())
			}
			if !e.static {
				batch = append(batch, store.Entry{Key: KeyAgentConfig, Value: raw})
			}
		case r.ident.Load() == nil:
			// No start recorded the run: it was never started, or it
			// ended (markers outlive the run's state). A run that has a
			// stored configuration but no identity was not started by this
			// engine and is not entered.
			if !e.static {
				if _, found, err := e.store.Get(ctx, sc, KeyAgentConfig); err != nil {
					return nil, false, fmt.Errorf("dispatch: read agent config: %w", err)
				} else if found {
					return nil, false, refuse("run %s has no recorded identity (no start event recorded one)", t.Run)
				}
			}
			if _, ended, err := e.store.Marker(ctx, run, store.MarkerTerminal); err != nil {
				return nil, false, fmt.Errorf("dispatch: read terminal marker: %w", err)
			} else if ended {
				e.log.InfoContext(ctx, "dispatch: event of an ended run skipped",
					"run_id", t.Run, "event", event.Name(ev))
				r.terminate()
				e.cache.evict(run) // do not keep a history for a dead run
				return nil, false, nil
			}
			subject, _ := t.Subject()
			msg := fmt.Sprintf("%s for event %s and topic %s", ConfigMissing, event.Name(ev), subject)
			return nil, false, e.fail(ctx, r, t, ev, msg)
		case e.static:
			if raw, err = e.config.Resolve(ctx, runOf(t, ev)); err != nil {
				return nil, false, e.fail(ctx, r, t, ev, err.Error())
			}
		default:
			var found bool
			raw, found, err = e.store.Get(ctx, sc, KeyAgentConfig)
			if err != nil {
				return nil, false, fmt.Errorf("dispatch: read agent config: %w", err)
			}
			if !found {
				// The start's write may still be on its way, or was lost
				// with a replica that died before its ack: the start is
				// redelivered and writes it again. Meanwhile the platform
				// gives this replica the same configuration.
				if raw, err = e.config.Resolve(ctx, runOf(t, ev)); err != nil {
					return nil, false, e.fail(ctx, r, t, ev, err.Error())
				}
			}
		}
	}
	if h := event.Headers(ev); len(h) > 0 {
		b, err := json.Marshal(h)
		if err != nil {
			return nil, false, fmt.Errorf("dispatch: encode aihub headers: %w", err)
		}
		if start {
			batch = append(batch, store.Entry{Key: KeyAIHubHeaders, Value: b})
		} else if err := e.store.Set(ctx, sc, KeyAIHubHeaders, b); err != nil {
			return nil, false, fmt.Errorf("dispatch: store aihub headers: %w", err)
		}
	}
	loaded, c := r.cfgLoaded, r.cfg
	if !loaded {
		if c, err = e.config.Decode(raw); err != nil {
			// As in the reference, the configuration is stored before it is
			// validated.
			if err := e.setMany(ctx, sc, batch); err != nil {
				return nil, false, fmt.Errorf("dispatch: store agent config: %w", err)
			}
			return nil, false, e.fail(ctx, r, t, ev, err.Error())
		}
	}
	if start {
		if err := e.seed(ctx, r, batch, first); err != nil {
			return nil, false, err
		}
		r.prime(seq)
		r.setStart(seq, ev)
	}
	// Only once the configuration is stored: a failed write is retried by
	// the redelivery, which must store it again.
	if !loaded {
		r.cfg, r.cfgRaw, r.cfgLoaded = c, raw, true
	}
	return c, true, nil
}

// seed writes a start event's run-context entries; first is false for a
// redelivered start, whose run context the store likely holds already, so
// its entries go out one key each (a batch store would first try, and
// fail, to write them as the run's first batch). With a remote store the
// write goes on while the first step runs and records: the step's reads
// and writes of the run context wait for it (state), and so do its
// publishes and the event's ack (execute, process), so nothing the run
// publishes or acks gets ahead of it. A failed write fails them all: the
// start is redelivered and writes everything again, its configuration too.
func (e *Engine) seed(ctx context.Context, r *runEntry, batch []store.Entry, first bool) error {
	sc := r.key.RunContext()
	if e.local || len(batch) == 0 {
		if err := e.writeSeed(ctx, sc, batch, first); err != nil {
			return fmt.Errorf("dispatch: seed run context: %w", err)
		}
		return nil
	}
	w := &pendingWrite{done: make(chan struct{})}
	r.seedMu.Lock()
	r.seed = w
	r.seedMu.Unlock()
	e.pool.Go(func() {
		err := e.writeSeed(ctx, sc, batch, first)
		if err != nil {
			w.err = fmt.Errorf("dispatch: seed run context: %w", err)
			r.cfgMu.Lock() // after prepare, which holds it, returns
			r.cfgLoaded = false
			r.cfgMu.Unlock()
		}
		close(w.done)
		if err == nil {
			r.seedMu.Lock()
			if r.seed == w {
				r.seed = nil
			}
			r.seedMu.Unlock()
		}
	})
	return nil
}

func (e *Engine) writeSeed(ctx context.Context, sc store.Scope, batch []store.Entry, first bool) error {
	if first {
		return e.setMany(ctx, sc, batch)
	}
	// One key each, side by side when the store is remote.
	if e.local || len(batch) < 2 {
		for _, en := range batch {
			if err := e.store.Set(ctx, sc, en.Key, en.Value); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, len(batch))
	var wg sync.WaitGroup
	for i, en := range batch {
		e.spawn(&wg, func() { errs[i] = e.store.Set(ctx, sc, en.Key, en.Value) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func runOf(t topic.Agent, trigger event.Event) step.Run {
	return step.Run{Class: t.Class, AgentID: t.ID, ThreadID: t.Thread, DisplayID: t.Display, RunID: t.Run, Trigger: trigger}
}

// plan is one candidate step with its binding. Small bindings live in the
// plan's own arrays, so a typical candidate costs one allocation.
type plan struct {
	step    *step.Step
	args    [][]event.Event
	preArgs [][]event.Event
	inputs  []string // bound ids in parameter order
	b       binding
	sc      *stepContext
	scv     stepContext
	fresh   bool // a first delivery: see execute
	attempt int  // the trigger's delivery count: the step's attempt under a retry policy
	ctx     runCtx

	argBuf [4][]event.Event
	oneBuf [4]event.Event
	idBuf  [8]string
	// A step's first outputs and their encodings (the record keeps the
	// encodings: the plan is not reused).
	outBuf  [2]event.Event
	keptBuf [2]json.RawMessage
	callBuf [2]event.Event // what the step returned
	outIDs  [2]string      // the published outputs' ids, for the interceptors
}

// bind checks availability and binds the step's and its
// precondition's parameters from the snapshot. nil: not ready.
func (e *Engine) bind(snap *snapshot, s *step.Step) *plan {
	p := &plan{step: s}
	params := s.Params()
	args := p.argBuf[:0]
	if len(params) > len(p.argBuf) {
		args = make([][]event.Event, 0, len(params))
	}
	args, ok := bindParams(snap, params, args, p.oneBuf[:0])
	if !ok {
		return nil
	}
	p.args = args
	if s.HasPrecondition() {
		pre := s.PreconditionParams()
		if p.preArgs, ok = bindParams(snap, pre, make([][]event.Event, 0, len(pre)), nil); !ok {
			return nil
		}
	}
	n := 0
	for _, a := range args {
		n += len(a)
	}
	ids := p.idBuf[:0]
	if 2*n > len(p.idBuf) {
		ids = make([]string, 0, 2*n)
	}
	for _, a := range args {
		ids = eventIDs(ids, a)
	}
	// The first half keeps parameter order; the second is sorted for the key.
	p.inputs = ids[:n:n]
	sorted := append(ids[n:n], ids[:n]...)
	p.b = bindingOf(e.class, snap.r.key.Run, s.Name(), sorted)
	if id := snap.r.ident.Load(); id != nil {
		p.b.secret = id.secret
	}
	return p
}

// bindParams appends one binding per parameter to args; singles is spare
// room for single-event bindings.
func bindParams(snap *snapshot, params []step.Param, args [][]event.Event, singles []event.Event) ([][]event.Event, bool) {
	for _, p := range params {
		switch p.Kind {
		case step.Single, step.Optional:
			ev := snap.single(p.Names)
			if ev == nil {
				if p.Kind == step.Single {
					return nil, false
				}
				args = append(args, nil)
				continue
			}
			if len(singles) == cap(singles) {
				singles = make([]event.Event, 0, len(params))
			}
			singles = append(singles, ev)
			args = append(args, singles[len(singles)-1:len(singles):len(singles)])
		case step.List, step.OptionalList:
			l := snap.list(nil, p.Names)
			if len(l) == 0 && p.Kind == step.List {
				return nil, false
			}
			args = append(args, l)
		case step.Fixed:
			if snap.count(p.Names) != p.Size {
				return nil, false
			}
			args = append(args, snap.list(make([]event.Event, 0, p.Size), p.Names))
		default:
			return nil, false
		}
	}
	return args, true
}

// ready checks max executions, then the precondition. A precondition that
// fails is a failing step: under stop_on_error it ends the run.
func (e *Engine) ready(ctx context.Context, run store.RunKey, p *plan) (bool, error) {
	s := p.step
	if m := s.MaxExecutions(); m > 0 {
		n, err := e.store.Count(ctx, run, s.Name())
		if err != nil {
			return false, fmt.Errorf("dispatch: read execution counter: %w", err)
		}
		if n >= int64(m) {
			// Only a re-run of this very binding's pending claim may go on
			// (it took its slot already). At the limit Claim creates
			// nothing.
			res, err := e.store.Claim(ctx, run, store.ClaimRequest{Step: s.Name(), Key: p.b.key, Max: int64(m)})
			if err != nil {
				return false, fmt.Errorf("dispatch: claim %s: %w", s.Name(), err)
			}
			switch {
			case res.Status == store.Done && len(res.Outcome.Outputs) > 0:
				// It ran and passed its precondition; only its kept
				// outputs remain to be published (execute does).
				return true, nil
			case res.Status != store.Pending:
				return false, nil
			}
		}
	}
	if !s.HasPrecondition() {
		return true, nil
	}
	ok, err := s.Check(p.sc, p.preArgs)
	if err == nil {
		return ok, nil
	}
	err = fmt.Errorf("precondition of step %s: %w", s.Name(), err)
	e.executed(ctx, interceptor.Execution{Run: runTopic(p.sc.t), Step: s.Name(), Trigger: p.sc.run.Trigger.EventBase().EventID, Inputs: p.inputs, Err: err})
	ref := p.b.id("exception", 0)
	if !s.StopOnError() {
		e.log.WarnContext(ctx, "dispatch: precondition failed", failAttrs(run, s.Name(), ref, err)...)
		return false, nil
	}
	e.log.ErrorContext(ctx, "dispatch: precondition failed, ending the run", failAttrs(run, s.Name(), ref, err)...)
	exc := &event.ExceptionEvent{Message: publicMessage(err, ref)}
	if code, ok := step.HTTPStatus(err); ok {
		exc.HTTPStatusCode = code
	}
	exc.EventID = ref
	if _, perr := e.publish(ctx, p.sc.r, p.sc.t, exc, origin{step: s.Name(), trigger: p.sc.run.Trigger.EventBase().EventID}); perr != nil {
		return false, perr
	}
	return false, nil
}

// execute runs one ready step, publishes its outputs in order and records
// the outcome, in one of two ways.
//
// Recorded (a step without a limit, on the first delivery of its trigger):
// the step runs, then one store.Store.Record writes its claim completed, the
// encoded outputs kept in it, and the outputs are published. A crash before
// the record leaves nothing: the redelivery runs the step again, with the
// same output ids. A record that another execution wrote first wins: its
// outputs are published instead of this one's.
//
// store.Claimed (a limited step, or a redelivery): the execution is claimed
// first, which takes the counter's slot and tells a redelivery whether the
// step completed; the outcome is completed with the outputs kept before
// they are published and again without them after.
//
// Either way a publish that fails never makes a recorded step run again:
// the redelivery publishes the kept outputs.
func (e *Engine) execute(ctx context.Context, r *runEntry, t topic.Agent, trigger event.Event, p *plan) error {
	s := p.step
	run := r.key
	if r.terminated.Load() {
		return nil
	}
	// A step that returns at most one event and has no cap keeps no record:
	// its output, under the binding's deterministic id, is its completion.
	single := s.SingleOutput() && s.MaxExecutions() == 0
	fast := p.fresh && s.MaxExecutions() == 0
	x := interceptor.Execution{Run: runTopic(t), Step: s.Name(), Trigger: trigger.EventBase().EventID, Inputs: p.inputs}
	if single && !p.fresh {
		// A redelivery: an earlier handling may have published the
		// output. If not, the claim tells of a failure it recorded.
		ran, err := e.ranBefore(ctx, r, p)
		if err != nil || ran {
			return err
		}
	} else if single && e.published(r, p) {
		// A duplicate of a trigger whose step's output this process
		// published: nothing to run.
		return nil
	}
	if !fast {
		res, err := e.store.Claim(ctx, run, store.ClaimRequest{Step: s.Name(), Key: p.b.key, Max: int64(s.MaxExecutions())})
		if err != nil {
			return fmt.Errorf("dispatch: claim %s: %w", s.Name(), err)
		}
		x.Rerun = res.Status == store.Pending
		switch res.Status {
		case store.Limited:
			return nil
		case store.Done:
			if len(res.Outcome.Outputs) == 0 {
				return nil
			}
			return e.republish(ctx, r, t, p, x, res.Outcome)
		}
	}
	e.noteRunning(ctx, r, t)
	stepDone := e.stepStart(p, x)
	evs, callErr, err := e.runStep(ctx, r, t, p, x, fast, single)
	if stepDone != nil {
		stepEnd(stepDone, p, evs, callErr)
	}
	return err
}

// runStep runs p's step, once execute has decided to, publishes its
// outputs (or the failure's ExceptionEvent) and records its outcome. It
// returns what it published, the step's error, and the handling's error.
func (e *Engine) runStep(ctx context.Context, r *runEntry, t topic.Agent, p *plan, x interceptor.Execution, fast, single bool) (evs []event.Event, callErr error, err error) {
	s := p.step
	run := r.key
	outs, callErr := e.call(p)
	if callErr != nil && r.terminated.Load() {
		// The run ended while the step ran (it was cancelled, or another
		// step ended it) and the step gave up: that is the run's end, not
		// a fault, and nothing of it can be published.
		e.log.InfoContext(ctx, "dispatch: step ended with its run", "run_id", run.Run, "step", s.Name(), "error", callErr)
		x.Err = callErr
		e.executed(ctx, x)
		return nil, callErr, nil
	}
	if callErr == nil {
		for _, o := range outs {
			if !s.Declares(event.Name(o)) {
				callErr = fmt.Errorf("step %s returned a %s, which it does not declare", s.Name(), event.Name(o))
				break
			}
		}
	}
	// An invalid output ends the run whatever the stop-on-error setting,
	// with a message naming the step, the event and the field.
	invalid := invalidOutput(p.sc, outs)
	if invalid != nil {
		callErr = step.WithUserMessage(invalid, invalid.Error())
	}
	var gaveUp string // the dead letter's reason when a retry policy gave up
	if callErr != nil && invalid == nil {
		if pol, ok := s.RetryPolicy(); ok {
			n := max(p.attempt, 1)
			if pol.Retry(callErr, n) {
				x.Err = callErr
				e.executed(ctx, x)
				delay := pol.Delay(n)
				e.log.WarnContext(ctx, "dispatch: step failed, will retry", append(failAttrs(run, s.Name(), p.b.id("exception", 0), callErr),
					"attempt", n, "attempts", pol.Attempts(), "retry_in", delay)...)
				return nil, callErr, &retryError{step: s.Name(), attempt: n, delay: delay, err: callErr}
			}
			if n >= pol.Attempts() {
				gaveUp = fmt.Sprintf("dispatch: step %s gave up after %d attempts: %v", s.Name(), n, callErr)
			} else {
				gaveUp = fmt.Sprintf("dispatch: step %s failed with an error its retry policy does not retry (attempt %d of %d): %v", s.Name(), n, pol.Attempts(), callErr)
			}
		}
	}
	var kept []json.RawMessage
	// The step's record goes out beside the run's start write, unless the
	// step may have seen that write fail: a step that failed waits for it,
	// and one that read the run context already waited.
	if callErr != nil {
		if err := r.waitSeed(ctx); err != nil {
			return evs, callErr, err
		}
	} else if err := r.seedFailure(); err != nil {
		return evs, callErr, err
	}
	unpublishable := invalid != nil // an output no retry can publish
	if callErr == nil {
		now := e.now().UnixNano()
		evs, kept = p.outBuf[:0], p.keptBuf[:0]
		if len(outs) > len(p.outBuf) {
			evs, kept = make([]event.Event, 0, len(outs)), make([]json.RawMessage, 0, len(outs))
		}
		for i, o := range outs {
			b := o.EventBase()
			b.EventID = p.b.id("out", i)
			if b.CreatedAt == 0 {
				b.CreatedAt = now
			}
			e.completeTopic(o, t)
			data, err := e.encodeOutput(t, o)
			if err != nil {
				// The user sees what failed, not the infrastructure's
				// words: the limit and the server's settings go to the log
				// and the dead letter, with the error.
				msg := fmt.Sprintf("step %s: output %s cannot be published", s.Name(), event.Name(o))
				var le *topic.LengthError
				var te *topic.TokenError
				switch {
				case errors.Is(err, bus.ErrPayloadTooLarge):
					msg += ": it is too large"
				case errors.As(err, &le), errors.As(err, &te):
					msg += ": " + err.Error() // the run's own names, what its author must see
				}
				callErr = step.WithUserMessage(fmt.Errorf("step %s: output %s cannot be published: %w", s.Name(), event.Name(o), err), msg)
				unpublishable = true
				break
			}
			evs, kept = append(evs, o), append(kept, data)
		}
	}
	if callErr == nil && s.HasCompensation() {
		if err := e.recordUndo(ctx, run, p, kept); err != nil {
			return evs, callErr, err
		}
	}
	var outcome store.Outcome
	if callErr != nil {
		// The reference of a failure is the id of the ExceptionEvent it
		// causes.
		ref := p.b.id("exception", 0)
		evs, kept = nil, nil
		x.Err = callErr
		e.executed(ctx, x)
		outcome = store.Outcome{Failed: true, Message: callErr.Error()}
		if s.StopOnError() || unpublishable {
			e.log.ErrorContext(ctx, "dispatch: step failed, ending the run", failAttrs(run, s.Name(), ref, callErr)...)
			exc := &event.ExceptionEvent{Message: clipMessage(publicMessage(callErr, ref))}
			if code, ok := step.HTTPStatus(callErr); ok {
				exc.HTTPStatusCode = code
			}
			exc.EventID = ref
			exc.CreatedAt = e.now().UnixNano()
			data, err := event.Marshal(exc)
			if err != nil {
				return evs, callErr, Permanent(fmt.Errorf("dispatch: encode ExceptionEvent: %w", err))
			}
			evs, kept = []event.Event{exc}, []json.RawMessage{data}
		} else {
			e.log.WarnContext(ctx, "dispatch: step failed (continue on error)", failAttrs(run, s.Name(), ref, callErr)...)
		}
	}
	if fast {
		if r.terminated.Load() {
			// Torn down while the step ran: nothing to record, and its
			// outputs are dropped as late outputs are.
			for _, o := range evs {
				e.dropLate(ctx, r, t, s.Name(), o)
			}
			return evs, callErr, nil
		}
	}
	// A failure that ends nothing (continue on error) leaves no output:
	// its record says that the execution ran.
	if fast && (!single || (callErr != nil && len(evs) == 0)) {
		keep := outcome
		keep.Outputs = kept
		res, err := e.store.Record(ctx, run, s.Name(), p.b.key, keep)
		switch {
		case err != nil:
			// Nothing is published: the redelivery claims, finds the
			// record if it landed, and otherwise runs the step again with
			// the same output ids.
			return evs, callErr, fmt.Errorf("dispatch: record %s: %w", s.Name(), err)
		case res.Status == store.Done:
			// Another execution of the binding recorded first (a duplicate
			// trigger): its outputs are the ones the run gets.
			if len(res.Outcome.Outputs) == 0 {
				return evs, callErr, nil
			}
			if err := r.waitSeed(ctx); err != nil {
				return evs, callErr, err
			}
			return evs, callErr, e.republish(ctx, r, t, p, x, res.Outcome)
		}
	} else if !fast && len(kept) > 0 {
		keep := outcome
		keep.Outputs = kept
		if err := e.complete(ctx, run, s.Name(), p.b.key, keep); err != nil {
			// Without the kept outputs a redelivery runs the step again
			// (as the same execution, with the same output ids); publishing
			// now still lets the run go on if the store comes back.
			e.log.WarnContext(ctx, "dispatch: outputs could not be kept with the claim", "run_id", run.Run, "step", s.Name(), "error", err)
		}
	}
	// Nothing is published before the run's start write. The record went
	// out beside it: should the start write fail, the start's redelivery
	// writes it again, finds the record and publishes what it kept.
	if err := r.waitSeed(ctx); err != nil {
		return evs, callErr, err
	}
	for i, o := range evs {
		if isQuestion(o) {
			if err := e.openQuestion(ctx, r, t, o); err != nil {
				return evs, callErr, err
			}
		}
		pctx, published := ctx, nopPublished
		if e.ic != nil && callErr == nil {
			pctx, published = e.publishing(ctx, p, o)
		}
		ok, _, err := e.publishData(pctx, r, t, o, kept[i], originOf(x), false)
		published(err)
		if err != nil {
			return evs, callErr, err
		}
		if ok && event.Has(o, "MemoryStorageRequestedEvent") {
			e.delegateMemory(ctx, t, o)
		}
		if ok && e.ic != nil && callErr == nil {
			if x.Outputs == nil {
				x.Outputs = p.outIDs[:0]
			}
			x.Outputs = append(x.Outputs, o.EventBase().EventID)
		}
	}
	if callErr == nil {
		e.executed(ctx, x)
	}
	// A recorded execution's outputs stay in its record until the run's
	// state is deleted: dropping them would cost a write per step.
	if !fast {
		if err := e.complete(ctx, run, s.Name(), p.b.key, outcome); err != nil {
			return evs, callErr, err
		}
	}
	if unpublishable {
		return evs, callErr, &endedError{reason: fmt.Sprintf("dispatch: run ended: %v", callErr)}
	}
	if gaveUp != "" {
		return evs, callErr, &endedError{reason: gaveUp}
	}
	return evs, callErr, nil
}

// republish publishes the outputs kept with a claim whose step ran but whose
// outputs may not all have been published (the handling failed or crashed
// after the step), then drops them from the claim. The step does not run
// again. A control output the stream already holds is not published again:
// its subject ends in its event id, so the stream tells, however long the
// crash lasted.
func (e *Engine) republish(ctx context.Context, r *runEntry, t topic.Agent, p *plan, x interceptor.Execution, o store.Outcome) error {
	s := p.step
	x.Rerun = false
	resent := false
	for _, data := range o.Outputs {
		ev, err := event.Unmarshal(data)
		if err != nil {
			return Permanent(fmt.Errorf("dispatch: an output kept for step %s does not decode: %w", s.Name(), err))
		}
		if isQuestion(ev) {
			if err := e.openQuestion(ctx, r, t, ev); err != nil {
				return err
			}
		}
		ok, sent, err := e.publishData(ctx, r, t, ev, data, originOf(x), true)
		if err != nil {
			return err
		}
		resent = resent || sent
		if ok && event.Has(ev, "MemoryStorageRequestedEvent") {
			e.delegateMemory(ctx, t, ev)
		}
		if ok && e.ic != nil && !o.Failed {
			x.Outputs = append(x.Outputs, ev.EventBase().EventID)
		}
	}
	if !resent {
		// A duplicate trigger of a step whose outputs all went out: the
		// execution was reported when it ran.
		return nil
	}
	e.log.InfoContext(ctx, "dispatch: outputs of an earlier execution published again", "run_id", r.key.Run,
		"step", s.Name(), "outputs", len(o.Outputs))
	if !o.Failed {
		e.executed(ctx, x)
	}
	return e.complete(ctx, r.key, s.Name(), p.b.key, store.Outcome{Failed: o.Failed, Message: o.Message})
}

// outputHeadroom is room left below the server's max payload for the
// headers a publish adds (trace context, baggage).
const outputHeadroom = 512

// encodeOutput encodes an output and checks, before any I/O, that it can
// be published on the run: its subjects within the length limit, its size
// within the server's max payload.
func (e *Engine) encodeOutput(t topic.Agent, ev event.Event) ([]byte, error) {
	name, id := event.Name(ev), ev.EventBase().EventID
	if event.IsControl(ev) {
		if err := t.Event(topic.Control, name, id).Check(); err != nil {
			return nil, err
		}
	}
	if event.IsDisplay(ev) {
		if err := t.Event(topic.Display, name, id).Check(); err != nil {
			return nil, err
		}
	}
	data, err := event.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	if limit := e.bus.MaxPayload() - outputHeadroom; e.bus.MaxPayload() > 0 && len(data) > limit {
		return nil, fmt.Errorf("%w: %d bytes encoded, over the limit of %d bytes (the server's max_payload of %d less %d for headers)",
			bus.ErrPayloadTooLarge, len(data), limit, e.bus.MaxPayload(), outputHeadroom)
	}
	return data, nil
}

// maxMessage bounds the message of an ExceptionEvent built from an error:
// an error may quote large inputs, and the event must still fit in one
// message.
const maxMessage = 16 << 10

func clipMessage(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func (e *Engine) call(p *plan) ([]event.Event, error) {
	return p.step.CallAppend(p.sc, p.args, p.callBuf[:0])
}

// publicMessage is what the end user sees of a step failure: the message
// the step chose with step.Userf or step.WithUserMessage, else a generic
// text naming ref, under which the full error is logged. Error texts and
// panic values are not published: they often hold internals.
func publicMessage(err error, ref string) string {
	if msg, ok := step.UserMessage(err); ok {
		return msg
	}
	return "the agent failed; reference " + ref
}

// failAttrs are the log attributes of a step failure: the full error, its
// reference and, for a panic, the stack.
func failAttrs(run store.RunKey, stepName, ref string, err error) []any {
	attrs := []any{"run_id", run.Run, "step", stepName, "reference", ref, "error", err}
	var pe *step.PanicError
	if errors.As(err, &pe) {
		attrs = append(attrs, "stack", string(pe.Stack))
	}
	return attrs
}

func (e *Engine) complete(ctx context.Context, run store.RunKey, stepName, key string, o store.Outcome) error {
	err := e.store.Complete(ctx, run, stepName, key, o)
	if errors.Is(err, store.ErrNotFound) {
		// The run was torn down while the step ran; nothing to record.
		return nil
	}
	if err != nil {
		return fmt.Errorf("dispatch: complete claim of %s: %w", stepName, err)
	}
	return nil
}

// fail publishes an ExceptionEvent for the run outside any step (a
// configuration problem); its id is derived from the trigger, so a
// redelivery publishes the same event.
func (e *Engine) fail(ctx context.Context, r *runEntry, t topic.Agent, trigger event.Event, msg string) error {
	e.log.ErrorContext(ctx, "dispatch: ending the run", "run_id", t.Run, "reason", msg)
	b := bindingOf(e.class, t.Run, "", []string{trigger.EventBase().EventID})
	if id := r.ident.Load(); id != nil {
		b.secret = id.secret
	}
	exc := &event.ExceptionEvent{Message: msg}
	exc.EventID = b.id("exception", 0)
	_, err := e.publish(ctx, r, t, exc, origin{})
	return err
}

// origin is the step execution an event comes from; the zero origin is
// the engine's own (no step).
type origin struct {
	step    string
	trigger string // event id
	rerun   bool
}

func originOf(x interceptor.Execution) origin {
	return origin{step: x.Step, trigger: x.Trigger, rerun: x.Rerun}
}

// header carries the origin with the event (bus.HeaderStep and its kin).
func (o origin) header() bus.Header {
	if o.step == "" {
		return nil
	}
	h := bus.Header{bus.HeaderStep: {o.step}, bus.HeaderTrigger: {o.trigger}}
	if o.rerun {
		h[bus.HeaderRerun] = []string{"1"}
	}
	return h
}

// publish publishes ev on the run's subjects unless the run has already
// published or received its terminal event, in which case the event is
// dropped, logged as a protocol violation, and ok is false.
func (e *Engine) publish(ctx context.Context, r *runEntry, t topic.Agent, ev event.Event, o origin) (ok bool, err error) {
	if ev.EventBase().CreatedAt == 0 {
		ev.EventBase().CreatedAt = e.now().UnixNano()
	}
	data, err := event.Marshal(ev)
	if err != nil {
		return false, Permanent(fmt.Errorf("dispatch: encode %s: %w", event.Name(ev), err))
	}
	ok, _, err = e.publishData(ctx, r, t, ev, data, o, false)
	return ok, err
}

// dropLate drops an output that comes after the run's terminal event.
func (e *Engine) dropLate(ctx context.Context, r *runEntry, t topic.Agent, stepName string, ev event.Event) {
	e.log.WarnContext(ctx, "dispatch: protocol violation: output after the run's terminal event dropped",
		"run_id", r.key.Run, "step", stepName, "event", event.Name(ev), "event_id", ev.EventBase().EventID)
	if e.ic != nil {
		e.ic.Dropped(ctx, interceptor.Drop{Run: runTopic(t), Step: stepName, Event: ev})
	}
}

// publishData is publish with ev already encoded as data: a control event
// goes to the stream with its event id as msg id, a display event to
// core NATS, an event that is both to both, control first. With recheck (a
// kept output published again) a control event the stream already holds
// is not sent again, nor is its display copy. Subjects are built before any
// I/O; one that cannot be built is a permanent failure. ok reports that
// the event is on the run (sent now or found in the stream), sent that it
// went out now. The event carries its origin in headers.
func (e *Engine) publishData(ctx context.Context, r *runEntry, t topic.Agent, ev event.Event, data []byte, o origin, recheck bool) (ok, sent bool, err error) {
	name, id := event.Name(ev), ev.EventBase().EventID
	control, display := event.IsControl(ev), event.IsDisplay(ev)
	var controlSubj, displaySubj string
	switch {
	case control && display:
		controlSubj, displaySubj, err = t.Subjects(name, id)
	case control:
		controlSubj, err = t.Event(topic.Control, name, id).Subject()
	case display:
		displaySubj, err = t.Event(topic.Display, name, id).Subject()
	default:
		return false, false, Permanent(fmt.Errorf("dispatch: publish %s: neither a control nor a display event", name))
	}
	if err != nil {
		return false, false, Permanent(fmt.Errorf("dispatch: publish %s: %w", name, err))
	}
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	if r.terminated.Load() {
		e.dropLate(ctx, r, t, o.step, ev)
		return false, false, nil
	}
	hdr := o.header()
	// The stream refuses a control event whose subject (ending in its
	// event id) it holds already, however long ago it was stored: a
	// publish is its step's completion, once.
	stored := false
	if control && recheck {
		// Looked up first: a refused publish would still reach the
		// subject's core subscribers.
		if stored, err = e.bus.HasSubject(ctx, e.stream, controlSubj); err != nil {
			return false, false, fmt.Errorf("dispatch: look up %s in the stream: %w", name, err)
		}
	}
	if control && !stored {
		ack, err := e.bus.PublishNew(ctx, &bus.Msg{Subject: controlSubj, Header: hdr, Data: data}, id)
		if err != nil {
			return false, false, fmt.Errorf("dispatch: publish %s: %w", name, err)
		}
		stored = ack.Duplicate
		r.published.add(id)
	}
	// A kept output published again skips its display copy when the
	// stream had it: it went out with the first publish. A first publish
	// that finds its subject taken (a lost PubAck retried) still sends it.
	if display && !(stored && recheck) {
		if err := e.bus.Publish(ctx, &bus.Msg{Subject: displaySubj, Header: hdr, Data: data}); err != nil {
			return false, false, fmt.Errorf("dispatch: publish %s: %w", name, err)
		}
	}
	if event.IsStop(ev) || event.IsException(ev) {
		r.terminate()
		// The marker holds the run's end: teardown here writes no end
		// marker beside it (see teardown).
		if _, _, err := e.store.SetMarker(ctx, r.key, store.MarkerTerminal, endOf(ev)); err != nil {
			return true, !stored, fmt.Errorf("dispatch: set terminal marker: %w", err)
		}
		r.terminalStored.Store(true)
	}
	return true, !stored, nil
}

// published reports whether this process published the output (or the
// exception) of p's binding: a duplicate trigger then runs nothing.
func (e *Engine) published(r *runEntry, p *plan) bool {
	return r.published.has(p.b.id("out", 0)) || r.published.has(p.b.id("exception", 0))
}

// ranBefore reports whether the run's history holds the output (or the
// exception) of p's binding: an execution that published it completed, and
// a redelivery of its trigger does not run the step again. The history is
// read to the stream's end for it, unless this process published the
// output itself.
func (e *Engine) ranBefore(ctx context.Context, r *runEntry, p *plan) (bool, error) {
	if e.published(r, p) {
		return true, nil
	}
	out, exc := p.b.id("out", 0), p.b.id("exception", 0)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := e.loadTail(ctx, r, p.sc.seq, p.sc.run.Trigger); err != nil {
		return false, err
	}
	_, ran := r.indexOf(out)
	if !ran {
		_, ran = r.indexOf(exc)
	}
	if ran {
		e.log.InfoContext(ctx, "dispatch: step's output already in the run; not run again", "run_id", r.key.Run, "step", p.step.Name())
	}
	return ran, nil
}

// checkOutput is the strict validation of an event a step returns or emits,
// before it is published: an event the reference would refuse is never put
// on the wire. The error names the step, the event and the field.
func checkOutput(stepName string, ev event.Event) error {
	if err := event.ValidateFields(ev); err != nil {
		return fmt.Errorf("step %s produced an invalid %s: %w", stepName, event.Name(ev), err)
	}
	return nil
}

// invalidOutput is the first output of an execution that failed
// checkOutput: an event the step emitted, else one it returned. An invalid
// output ends the run, whatever the step's stop-on-error setting.
func invalidOutput(sc *stepContext, outs []event.Event) error {
	if err := sc.invalid.Load(); err != nil {
		return *err
	}
	for _, o := range outs {
		if err := checkOutput(sc.step, o); err != nil {
			return err
		}
	}
	return nil
}

// completeTopic fills the reply topic of HITL and BITL requests with the
// run's ids and the request's event id, keeping what the step set.
func (e *Engine) completeTopic(ev event.Event, t topic.Agent) {
	if event.IsAITLRequest(ev) {
		completeDelegateTopic(ev, t)
		return
	}
	if !event.IsHITLRequest(ev) && !event.IsBITLRequest(ev) {
		return
	}
	v := reflect.ValueOf(ev)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	f := v.Elem().FieldByName("Topic")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*event.Topic]() || !f.CanSet() {
		return
	}
	tp, _ := f.Interface().(*event.Topic)
	if tp == nil {
		tp = &event.Topic{}
		f.Set(reflect.ValueOf(tp))
	}
	fill := func(p **string, v string) {
		if *p == nil || **p == "" {
			*p = &v
		}
	}
	fill(&tp.AgentClass, t.Class)
	fill(&tp.AgentID, t.ID)
	fill(&tp.ThreadID, t.Thread)
	fill(&tp.DisplayID, t.Display)
	fill(&tp.RunID, t.Run)
	fill(&tp.EventID, ev.EventBase().EventID)
}

// completeDelegateTopic fills the thread, display and run of an AITL
// request's other_agent_topic with those its delegate run gets, as the
// reference publishes it; what the step set is kept.
func completeDelegateTopic(ev event.Event, t topic.Agent) {
	req := aitlRequest(ev)
	if req == nil {
		return
	}
	dt, err := hitl.DelegateTopic(t, req)
	if err != nil {
		return // the delegator refuses it with the reason
	}
	ot := req.OtherAgentTopic
	fill := func(p **string, v string) {
		if *p == nil || **p == "" {
			*p = &v
		}
	}
	fill(&ot.ThreadID, dt.Thread)
	fill(&ot.DisplayID, dt.Display)
	fill(&ot.RunID, dt.Run)
	fill(&ot.EventID, dt.EventID)
}

// teardown handles a received StopEvent or ExceptionEvent:
// idempotent; deletes the run's state, records the run's end, evicts the
// cached history. The terminal marker holds the end ("completed" or
// "crashed"). When this process published the terminal event it wrote
// that marker already, and the run's end costs no further write but the
// deletion of its state, if it has any. Otherwise (the terminal event
// came from outside or from another replica, or is delivered again) the
// end marker, written last, tells a duplicate delivery from the first;
// again (a redelivery) that finds the run's end recorded with its
// terminal event is one too, since that end was written by the replica
// that published the event, which may have torn the run down already.
func (e *Engine) teardown(ctx context.Context, run store.RunKey, t topic.Agent, ev event.Event, again bool) error {
	marker := endOf(ev)
	stored := false
	if r := e.cache.peek(run); r != nil {
		r.terminate()
		_ = r.waitSeed(ctx) // not to land after the state is deleted
		// A step of this process publishing the terminal event stores the
		// marker under pubMu: wait for it rather than write it twice.
		// Taken once: a second delivery is torn down as a duplicate.
		r.pubMu.Lock()
		stored = r.terminalStored.CompareAndSwap(true, false)
		r.pubMu.Unlock()
	}
	endedBefore := false
	if !stored {
		cur, created, err := e.store.SetMarker(ctx, run, store.MarkerTerminal, marker)
		if err != nil {
			return fmt.Errorf("dispatch: set terminal marker: %w", err)
		}
		endedBefore = again && !created && (cur == store.Completed || cur == store.Crashed)
	}
	// The terminal marker is set: an event that finds the configuration
	// deleted finds the run ended. Deleting twice is harmless.
	if r := e.cache.peek(run); e.stateToDelete(r) {
		// Before the state: the open questions name the deadlines.
		if err := e.dropRunDeadlines(ctx, run, r); err != nil {
			return err
		}
		if err := e.store.DeleteRun(ctx, run); err != nil {
			return fmt.Errorf("dispatch: delete run state: %w", err)
		}
	}
	cur, created := marker, true
	if !stored {
		var err error
		if cur, created, err = e.store.SetMarker(ctx, run, store.MarkerEnd, marker); err != nil {
			return fmt.Errorf("dispatch: set end marker: %w", err)
		}
		created = created && !endedBefore
	}
	if !created {
		e.log.InfoContext(ctx, "dispatch: duplicate delivery of terminal event",
			"run_id", run.Run, "event", event.Name(ev), "event_id", ev.EventBase().EventID)
		e.cache.evict(run)
		if e.ic != nil {
			e.ic.Ended(ctx, interceptor.End{Run: runTopic(t), Terminal: ev, Marker: cur, Duplicate: true})
		}
		return nil
	}
	e.cache.evict(run)
	if e.ic != nil {
		e.ic.Ended(ctx, interceptor.End{Run: runTopic(t), Terminal: ev, Marker: cur})
	}
	return nil
}

// endOf is the end a terminal event gives its run: store.Crashed for an
// exception, store.Completed otherwise.
func endOf(ev event.Event) string {
	if event.IsException(ev) && !event.IsStop(ev) {
		return store.Crashed
	}
	return store.Completed
}

// RunEnd reports how run ended ("completed" or "crashed"), and whether it
// did: once its terminal event is recorded. The terminal marker holds the
// end; one written by an earlier version holds "published" or "received",
// and the end marker the end.
func RunEnd(ctx context.Context, s store.Store, run store.RunKey) (string, bool, error) {
	v, ok, err := s.Marker(ctx, run, store.MarkerTerminal)
	if err != nil || !ok {
		return "", false, err
	}
	if v == store.Completed || v == store.Crashed {
		return v, true, nil
	}
	return s.Marker(ctx, run, store.MarkerEnd)
}

// executed tells the interceptors of a completed execution.
func (e *Engine) executed(ctx context.Context, x interceptor.Execution) {
	if e.ic != nil {
		e.ic.Executed(ctx, x)
	}
}

// runTopic is the topic of t's run, without its event fields.
func runTopic(t topic.Agent) topic.Agent {
	return topic.Agent{Class: t.Class, ID: t.ID, Thread: t.Thread, Display: t.Display, Run: t.Run}
}
