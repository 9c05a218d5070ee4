package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Process handles one control event of the engine's class, delivered at
// stream sequence seq with subject t, and returns once every step it started
// has published its outputs or recorded its failure (dispatch.md §2 with
// D1–D15). An error wrapping ErrRefused means the event does not belong in
// the run its subject names (see ErrRefused): nothing was done, and it must
// not be redelivered. Any other error means a transient failure (store or
// bus): the caller should have the event redelivered; handling it again is
// safe. Handle is Process plus decoding and settling a delivery.
func (e *Engine) Process(ctx context.Context, t topic.Agent, ev event.Event, seq uint64) error {
	return e.process(ctx, t, ev, seq, nil)
}

// process is Process; d, if not nil, gets heartbeats while user code runs.
func (e *Engine) process(ctx context.Context, t topic.Agent, ev event.Event, seq uint64, d bus.Delivery) error {
	if ev == nil {
		return errors.New("dispatch: Process(nil event)")
	}
	if t.Class != e.class {
		return refuse("agent_class %q of subject %s is not the engine's class %s", t.Class, t, e.class)
	}
	if ev.EventBase().EventID == "" {
		ev.EventBase().EventID = t.EventID
	}
	run := RunKey{Class: e.class, Run: t.Run}

	// Terminal events first, by parent chain, before any configuration.
	if event.IsStop(ev) || event.IsException(ev) {
		if err := e.fenceTerminal(ctx, run, t); err != nil {
			return err
		}
		return e.teardown(ctx, run, ev)
	}
	r := e.cache.get(run)
	if r.terminated.Load() {
		e.log.DebugContext(ctx, "dispatch: event after the run's terminal event ignored",
			"run_id", t.Run, "event", event.Name(ev), "event_id", ev.EventBase().EventID)
		return nil
	}
	// D14: an event decoded through the ancestry fallback never triggers.
	var cands []*step.Step
	if !event.IsFallback(ev) {
		cands = e.w.Candidates(event.Name(ev))
	}
	// The run's identity (agent id and thread at its start) fences every
	// event; it is read from the store only when this process does not know
	// it yet. A StartEvent records it.
	// D4 across replicas: nothing starts once a terminal event was published
	// or received. One marker read per trigger serves a StartEvent's
	// duplicate check too: teardown sets MarkerTerminal before MarkerEnd, so
	// an ended run always has it.
	start, answer := event.IsStart(ev), isAnswer(ev)
	id := r.ident.Load()
	term := start || answer || len(cands) > 0
	var prev startSeq
	var ended bool
	var err error
	if start || id == nil {
		var rs runRead
		if rs, err = e.readRun(ctx, run, t, start, id, term); err != nil {
			return err
		}
		id, prev, ended = rs.id, rs.prev, rs.ended
	} else if term {
		_, ended, err = e.store.Marker(ctx, run, MarkerTerminal)
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
	if answer {
		if err := e.acceptAnswer(ctx, run, t, ev); err != nil {
			return err
		}
	}
	cfg, ok, err := e.prepare(ctx, r, t, ev, seq, &prev)
	if err != nil || !ok || len(cands) == 0 {
		return err
	}

	r.mu.Lock()
	if err := e.load(ctx, r, seq, ev); err != nil {
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
	// Steps and preconditions see a context that ends with the run (D4).
	sctx, cancel, actID := r.track(ctx)
	defer r.untrack(cancel, actID)
	if d != nil && e.heartbeat > 0 {
		defer e.beats.remove(e.beats.add(d)) // add runs now, remove on return
	}

	// Readiness beyond availability: max executions, then the precondition
	// (R5, §5). All candidates are judged before any runs.
	ready := plans[:0]
	for _, p := range plans {
		p.scv = stepContext{Context: sctx, e: e, r: r, t: t, run: runOf(t, ev), step: p.step.Name(), b: &p.b, cfg: cfg}
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

// runRead is what readRun found.
type runRead struct {
	id    *runIdentity // nil: none recorded
	prev  startSeq
	ended bool
}

// readRun reads, concurrently, what an event needs from the store when this
// process does not know the run's identity or the event is a start: the
// identity (a start records it unless known), a start's recorded start
// sequence and, if term, the terminal marker. A cached run's other events
// need none of it, so they do not pay for the goroutines.
func (e *Engine) readRun(ctx context.Context, run RunKey, t topic.Agent, start bool, id *runIdentity, term bool) (runRead, error) {
	rs := runRead{id: id}
	var idErr, termErr error
	var wg sync.WaitGroup
	if start {
		wg.Go(func() { rs.prev.raw, rs.prev.ok, rs.prev.err = e.store.Get(ctx, run.RunContext(), KeyStartSeq) })
		if id == nil {
			wg.Go(func() { rs.id, idErr = claimIdentity(ctx, e.store, run, t, e.rnd) })
		}
	} else if term {
		wg.Go(func() { rs.id, idErr = e.loadIdentity(ctx, run) })
	} else {
		rs.id, idErr = e.loadIdentity(ctx, run) // nothing to overlap with
	}
	if term {
		_, rs.ended, termErr = e.store.Marker(ctx, run, MarkerTerminal)
	}
	wg.Wait()
	if idErr != nil {
		return rs, idErr
	}
	if termErr != nil {
		return rs, fmt.Errorf("dispatch: read terminal marker: %w", termErr)
	}
	return rs, nil
}

// prepare runs steps 4–7 of dispatch.md §2 and returns the run's decoded
// configuration; ok is false when the event must not be evaluated. The
// caller has checked that the run has not ended. A StartEvent's writes
// (configuration, headers, start sequence, its fields) go to the store as one
// batch.
func (e *Engine) prepare(ctx context.Context, r *runEntry, t topic.Agent, ev event.Event, seq uint64, prev *startSeq) (cfg any, ok bool, err error) {
	run := r.key
	sc := run.RunContext()
	start := event.IsStart(ev)
	r.cfgMu.Lock()
	defer r.cfgMu.Unlock()
	var batch []Entry
	var raw []byte
	if !r.cfgLoaded {
		if start {
			raw, err = e.config.Resolve(ctx, runOf(t, ev))
			if err != nil {
				return nil, false, e.fail(ctx, r, t, ev, err.Error())
			}
			batch = append(batch, Entry{Key: KeyAgentConfig, Value: raw})
		} else {
			var found bool
			raw, found, err = e.store.Get(ctx, sc, KeyAgentConfig)
			if err != nil {
				return nil, false, fmt.Errorf("dispatch: read agent config: %w", err)
			}
			if found && r.ident.Load() == nil {
				// A start on another replica may have recorded the identity
				// since it was read; a run that has none was not started
				// by this engine and is not entered.
				id, err := e.loadIdentity(ctx, run)
				if err != nil {
					return nil, false, err
				}
				if id == nil {
					return nil, false, refuse("run %s has no recorded identity (no start event recorded one)", t.Run)
				}
				r.ident.CompareAndSwap(nil, id)
				if err := id.admit(t); err != nil {
					return nil, false, err
				}
			}
			if !found {
				if _, ended, err := e.store.Marker(ctx, run, MarkerEnd); err != nil {
					return nil, false, fmt.Errorf("dispatch: read end marker: %w", err)
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
			}
		}
	}
	if h := event.Headers(ev); len(h) > 0 {
		b, err := json.Marshal(h)
		if err != nil {
			return nil, false, fmt.Errorf("dispatch: encode aihub headers: %w", err)
		}
		if start {
			batch = append(batch, Entry{Key: KeyAIHubHeaders, Value: b})
		} else if err := e.store.Set(ctx, sc, KeyAIHubHeaders, b); err != nil {
			return nil, false, fmt.Errorf("dispatch: store aihub headers: %w", err)
		}
	}
	loaded, c := r.cfgLoaded, r.cfg
	if !loaded {
		if c, err = e.config.Decode(raw); err != nil {
			// As in the reference, the configuration is stored before it is
			// validated.
			if err := setMany(ctx, e.store, sc, batch); err != nil {
				return nil, false, fmt.Errorf("dispatch: store agent config: %w", err)
			}
			return nil, false, e.fail(ctx, r, t, ev, err.Error())
		}
	}
	if start {
		if batch, err = e.startEntries(ev, seq, prev, batch); err != nil {
			return nil, false, err
		}
		if err := setMany(ctx, e.store, sc, batch); err != nil {
			return nil, false, fmt.Errorf("dispatch: seed run context: %w", err)
		}
		r.prime(seq)
	}
	// Only once the configuration is stored: a failed write is retried by
	// the redelivery, which must store it again.
	r.cfg, r.cfgLoaded = c, true
	return c, true, nil
}

// startSeq is the run's recorded start sequence, as read before prepare.
type startSeq struct {
	raw []byte
	ok  bool
	err error
}

// startEntries appends the run-context entries of a start event to batch:
// its start sequence, unless prev records an earlier one, and its public
// fields (the reference's to_context_dict).
func (e *Engine) startEntries(ev event.Event, seq uint64, prev *startSeq, batch []Entry) ([]Entry, error) {
	// Keep the earliest start: a second StartEvent in the run must not hide
	// the history before it.
	if prev.err != nil {
		return nil, fmt.Errorf("dispatch: read start sequence: %w", prev.err)
	}
	if p, perr := parseUint(prev.raw); !prev.ok || perr != nil || p > seq {
		batch = append(batch, Entry{Key: KeyStartSeq, Value: strconv.AppendUint(nil, seq, 10)})
	}
	data, err := event.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("dispatch: encode start event: %w", err)
	}
	if err := eachMember(data, func(k string, v []byte) error {
		if strings.HasPrefix(k, "_") || k == "event_id" || k == "created_at" {
			return nil
		}
		batch = append(batch, Entry{Key: k, Value: v})
		return nil
	}); err != nil {
		return nil, fmt.Errorf("dispatch: seed run context: %w", err)
	}
	return batch, nil
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

	argBuf [4][]event.Event
	oneBuf [4]event.Event
	idBuf  [8]string
}

// bind checks availability (R1, D3) and binds the step's and its
// precondition's parameters from the snapshot (§6, D10). nil: not ready.
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
// fails is a failing step (D11): under stop_on_error it ends the run.
func (e *Engine) ready(ctx context.Context, run RunKey, p *plan) (bool, error) {
	s := p.step
	if m := s.MaxExecutions(); m > 0 {
		n, err := e.store.Count(ctx, run, s.Name())
		if err != nil {
			return false, fmt.Errorf("dispatch: read execution counter: %w", err)
		}
		if n >= int64(m) {
			// Only a re-run of this very binding's pending claim may go on
			// (D2: it took its slot already). At the limit Claim creates
			// nothing.
			res, err := e.store.Claim(ctx, run, ClaimRequest{Step: s.Name(), Key: p.b.key, Max: int64(m)})
			if err != nil {
				return false, fmt.Errorf("dispatch: claim %s: %w", s.Name(), err)
			}
			if res.Status != Pending {
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
	e.observer.Executed(Execution{Run: run, Step: s.Name(), Trigger: p.sc.run.Trigger.EventBase().EventID, Inputs: p.inputs, Err: err})
	if !s.StopOnError() {
		e.log.WarnContext(ctx, "dispatch: precondition failed", "run_id", run.Run, "step", s.Name(), "error", err)
		return false, nil
	}
	e.log.ErrorContext(ctx, "dispatch: precondition failed, ending the run", "run_id", run.Run, "step", s.Name(), "error", err)
	exc := &event.ExceptionEvent{Message: err.Error()}
	exc.EventID = p.b.id("exception", 0)
	if _, perr := e.publish(ctx, p.sc.r, p.sc.t, exc, s.Name()); perr != nil {
		return false, perr
	}
	return false, nil
}

// execute claims and runs one ready step, publishes its outputs in order and
// records the outcome (D1, D2).
func (e *Engine) execute(ctx context.Context, r *runEntry, t topic.Agent, trigger event.Event, p *plan) error {
	s := p.step
	run := r.key
	if r.terminated.Load() {
		return nil
	}
	res, err := e.store.Claim(ctx, run, ClaimRequest{Step: s.Name(), Key: p.b.key, Max: int64(s.MaxExecutions())})
	if err != nil {
		return fmt.Errorf("dispatch: claim %s: %w", s.Name(), err)
	}
	if res.Status == Done || res.Status == Limited {
		return nil
	}
	x := Execution{Run: run, Step: s.Name(), Trigger: trigger.EventBase().EventID, Inputs: p.inputs, Rerun: res.Status == Pending}
	outs, callErr := e.call(p)
	if callErr == nil {
		for _, o := range outs {
			if !s.Declares(event.Name(o)) {
				callErr = fmt.Errorf("step %s returned a %s, which it does not declare", s.Name(), event.Name(o))
				break
			}
		}
	}
	if callErr != nil {
		x.Err = callErr
		e.observer.Executed(x)
		msg := callErr.Error()
		if s.StopOnError() {
			e.log.ErrorContext(ctx, "dispatch: step failed, ending the run", "run_id", run.Run, "step", s.Name(), "error", callErr)
			exc := &event.ExceptionEvent{Message: msg}
			exc.EventID = p.b.id("exception", 0)
			if _, err := e.publish(ctx, r, t, exc, s.Name()); err != nil {
				return err
			}
		} else {
			e.log.WarnContext(ctx, "dispatch: step failed (continue on error)", "run_id", run.Run, "step", s.Name(), "error", callErr)
		}
		return e.complete(ctx, run, s.Name(), p.b.key, Outcome{Failed: true, Message: msg})
	}
	now := e.now().UnixNano()
	for i, o := range outs {
		b := o.EventBase()
		b.EventID = p.b.id("out", i)
		if b.CreatedAt == 0 {
			b.CreatedAt = now
		}
		e.completeTopic(o, t)
		if isQuestion(o) {
			if err := e.openQuestion(ctx, run, t, o); err != nil {
				return err
			}
		}
		ok, err := e.publish(ctx, r, t, o, s.Name())
		if err != nil {
			return err
		}
		if ok && e.observed {
			x.Outputs = append(x.Outputs, b.EventID)
		}
	}
	e.observer.Executed(x)
	return e.complete(ctx, run, s.Name(), p.b.key, Outcome{})
}

func (e *Engine) call(p *plan) ([]event.Event, error) {
	if e.tracer == nil {
		return p.step.Call(p.sc, p.args)
	}
	sctx, span := e.tracer.Start(p.sc.Context, "step "+p.step.Name())
	defer span.End()
	p.sc.Context = sctx
	out, err := p.step.Call(p.sc, p.args)
	if err != nil {
		span.RecordError(err)
	}
	return out, err
}

func (e *Engine) complete(ctx context.Context, run RunKey, stepName, key string, o Outcome) error {
	err := e.store.Complete(ctx, run, stepName, key, o)
	if errors.Is(err, ErrNotFound) {
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
	_, err := e.publish(ctx, r, t, exc, "")
	return err
}

// publish publishes ev on the run's subjects unless the run has already
// published or received its terminal event (D4), in which case the event is
// dropped, logged as a protocol violation, and ok is false.
func (e *Engine) publish(ctx context.Context, r *runEntry, t topic.Agent, ev event.Event, stepName string) (ok bool, err error) {
	if ev.EventBase().CreatedAt == 0 {
		ev.EventBase().CreatedAt = e.now().UnixNano()
	}
	r.pubMu.Lock()
	defer r.pubMu.Unlock()
	if r.terminated.Load() {
		e.log.WarnContext(ctx, "dispatch: protocol violation: output after the run's terminal event dropped (R4)",
			"run_id", t.Run, "step", stepName, "event", event.Name(ev), "event_id", ev.EventBase().EventID)
		e.observer.Dropped(Drop{Run: r.key, Step: stepName, Event: ev})
		return false, nil
	}
	if _, err := bus.PublishEvent(ctx, e.bus, t.Event(topic.Control, event.Name(ev), ev.EventBase().EventID), ev, nil); err != nil {
		return false, fmt.Errorf("dispatch: publish %s: %w", event.Name(ev), err)
	}
	if event.IsStop(ev) || event.IsException(ev) {
		r.terminate()
		if _, _, err := e.store.SetMarker(ctx, r.key, MarkerTerminal, "published"); err != nil {
			return true, fmt.Errorf("dispatch: set terminal marker: %w", err)
		}
		r.terminalStored.Store(true)
	}
	return true, nil
}

// completeTopic fills the reply topic of HITL and BITL requests with the
// run's ids and the request's event id, keeping what the step set
// (bus.md §9.1).
func (e *Engine) completeTopic(ev event.Event, t topic.Agent) {
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

// teardown handles a received StopEvent or ExceptionEvent (§13, D4, D5):
// idempotent; deletes the run's state, keeps the end marker, evicts the
// cached history.
func (e *Engine) teardown(ctx context.Context, run RunKey, ev event.Event) error {
	marker := Completed
	if event.IsException(ev) && !event.IsStop(ev) {
		marker = Crashed
	}
	stored := false
	if r := e.cache.peek(run); r != nil {
		r.terminate()
		stored = r.terminalStored.Load()
	}
	if !stored {
		if _, _, err := e.store.SetMarker(ctx, run, MarkerTerminal, "received"); err != nil {
			return fmt.Errorf("dispatch: set terminal marker: %w", err)
		}
	}
	cur, created, err := e.store.SetMarker(ctx, run, MarkerEnd, marker)
	if err != nil {
		return fmt.Errorf("dispatch: set end marker: %w", err)
	}
	if !created {
		if _, cleaned, err := e.store.Marker(ctx, run, MarkerCleaned); err != nil {
			return fmt.Errorf("dispatch: read cleaned marker: %w", err)
		} else if cleaned {
			e.log.InfoContext(ctx, "dispatch: duplicate delivery of terminal event",
				"run_id", run.Run, "event", event.Name(ev), "event_id", ev.EventBase().EventID)
			e.cache.evict(run)
			e.observer.TornDown(Teardown{Run: run, Marker: cur, Duplicate: true})
			return nil
		}
	}
	// After the end marker: an event that finds the configuration deleted
	// must find the run ended.
	if err := e.store.DeleteRun(ctx, run); err != nil {
		return fmt.Errorf("dispatch: delete run state: %w", err)
	}
	if _, _, err := e.store.SetMarker(ctx, run, MarkerCleaned, strconv.FormatInt(e.now().Unix(), 10)); err != nil {
		return fmt.Errorf("dispatch: set cleaned marker: %w", err)
	}
	e.cache.evict(run)
	e.observer.TornDown(Teardown{Run: run, Marker: cur})
	return nil
}

// runControl is the run's control subject pattern.
func runControl(class, run string) (string, error) {
	f, err := topic.RunControl(class, run)
	if err != nil {
		return "", fmt.Errorf("dispatch: run %q: %w", run, err)
	}
	return f, nil
}
