package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Compensation (sagas). A step declared with step.Compensate leaves a
// record in the run context when it completes: the ids of the events it
// bound and the outputs it produced. When the run fails, the handling of
// its ExceptionEvent runs the compensations of the recorded steps before
// the run's state is deleted: newest completion first, each under a claim
// of its own (step "undo.<step>", so that a redelivery after a crash skips
// the compensations that completed and re-runs the one that was cut
// short), publishing a StepCompensatedEvent for each and a
// RunCompensatedEvent at the end. A compensation that fails is retried
// through redeliveries of the ExceptionEvent, with the engine's backoff,
// until the outage budget is nearly spent; then it is given up: a
// StepCompensationFailedEvent, a dead letter holding its record, and the
// other compensations go on.

// undoPrefix starts the run-context keys of compensation records, and
// undoTryPrefix the counters of failed compensation attempts.
const (
	undoPrefix    = "_undo."
	undoTryPrefix = "_undo_try."
	undoStep      = "undo." // claim namespace of compensations: no step name has a dot
)

// undoRecord is what a completed compensable step leaves in the run
// context.
type undoRecord struct {
	Step string `json:"step"`
	Key  string `json:"key"` // the execution's claim key
	// In holds the bound event ids, one list per parameter.
	In [][]string `json:"in"`
	// Out holds the outputs, encoded, in order.
	Out []json.RawMessage `json:"out"`
	// At is the wall-clock time of completion (Unix ns), which orders
	// records the stream cannot.
	At int64 `json:"at"`

	order uint64 // the newest stream sequence among its control outputs and inputs
}

// recordUndo keeps the record of a compensable step's execution before its
// outputs are published. The outputs are already encoded and go in as
// they are; inputs are kept as ids, which the run's history resolves. The
// record is built by hand: it is on the path of every compensable step.
func (e *Engine) recordUndo(ctx context.Context, run store.RunKey, p *plan, outs []json.RawMessage) error {
	name := p.step.Name()
	n := 64 + len(name) + len(p.b.key)
	for _, o := range outs {
		n += len(o) + 1
	}
	n += 28 * len(p.inputs)
	buf := make([]byte, 0, n)
	buf = append(buf, `{"step":`...)
	buf = appendJSONString(buf, name)
	buf = append(buf, `,"key":`...)
	buf = appendJSONString(buf, p.b.key)
	buf = append(buf, `,"in":[`...)
	for i, a := range p.args {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '[')
		for j, ev := range a {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = appendJSONString(buf, ev.EventBase().EventID)
		}
		buf = append(buf, ']')
	}
	buf = append(buf, `],"out":[`...)
	for i, o := range outs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, o...)
	}
	buf = append(buf, `],"at":`...)
	buf = strconv.AppendInt(buf, time.Now().UnixNano(), 10)
	buf = append(buf, '}')
	if err := e.store.Set(ctx, run.RunContext(), undoPrefix+name+"."+p.b.key, buf); err != nil {
		return fmt.Errorf("dispatch: keep the compensation record of %s: %w", name, err)
	}
	return nil
}

// appendJSONString appends s as a JSON string: plain ids as they are, any
// other text through encoding/json.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x7f || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(buf, q...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// compensable reports whether a step of the workflow declares a
// compensation.
func (e *Engine) compensable() bool {
	for _, s := range e.w.Steps() {
		if s.HasCompensation() {
			return true
		}
	}
	return false
}

// finish handles the run's terminal event ev at stream sequence seq:
// compensations (for a failure or a cancel), teardown, final status.
func (e *Engine) finish(ctx context.Context, run store.RunKey, t topic.Agent, ev event.Event, seq uint64, d bus.Delivery) error {
	cancelled := event.IsCancelled(ev)
	failed := event.IsException(ev) && !event.IsStop(ev) || cancelled
	again := d != nil && d.NumDelivered() > 1
	if cancelled {
		if _, ended := e.endedStatus(ctx, run); ended {
			// The run ended before its cancel was handled (a stop that
			// raced the cancel) or this is a redelivery: its status stays.
			return e.teardown(ctx, run, t, ev, again)
		}
	}
	if !failed || !e.compensable() {
		r := e.cache.peek(run) // teardown evicts it
		if err := e.teardown(ctx, run, t, ev, again); err != nil {
			return err
		}
		if r != nil && !e.local {
			r.settleStatus() // no pending or running after the end
		}
		e.noteEnd(ctx, t, ev)
		return nil
	}
	if _, ended := e.endedStatus(ctx, run); ended {
		return e.teardown(ctx, run, t, ev, again) // a redelivery: only its teardown may be left
	}
	if d != nil && e.heartbeat > 0 {
		defer e.beats.remove(e.beats.add(d))
	}
	ran, err := e.compensate(ctx, run, t, ev, seq, d)
	if err != nil {
		return err
	}
	r := e.cache.peek(run)
	if err := e.teardown(ctx, run, t, ev, again); err != nil {
		return err
	}
	if r != nil && !e.local {
		r.settleStatus()
	}
	if !ran {
		e.noteEnd(ctx, t, ev)
	}
	return nil
}

// compensate runs the compensations recorded in the run, newest first,
// and reports whether there were any. An error means a compensation must
// be tried again (or the store failed): the ExceptionEvent is redelivered.
func (e *Engine) compensate(ctx context.Context, run store.RunKey, t topic.Agent, ev event.Event, seq uint64, d bus.Delivery) (bool, error) {
	sc := run.RunContext()
	keys, err := e.store.Keys(ctx, sc)
	if err != nil {
		return false, fmt.Errorf("dispatch: list compensation records: %w", err)
	}
	var recs []*undoRecord
	for _, k := range keys {
		if !strings.HasPrefix(k, undoPrefix) {
			continue
		}
		raw, ok, err := e.store.Get(ctx, sc, k)
		if err != nil {
			return false, fmt.Errorf("dispatch: read compensation record: %w", err)
		}
		if !ok {
			continue
		}
		var rec undoRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			e.log.ErrorContext(ctx, "dispatch: a compensation record does not decode", "run_id", run.Run, "key", k, "error", err)
			continue
		}
		recs = append(recs, &rec)
	}
	if len(recs) == 0 {
		return false, nil
	}
	msg := exceptionMessage(ev)
	e.writeStatus(ctx, nil, t, status.Record{State: status.Compensating, Error: msg})

	// The run's history gives the inputs back and orders the records by
	// where their outputs landed in the stream.
	r := e.cache.get(run)
	r.mu.Lock()
	err = r.setFilter(t)
	if err == nil {
		err = e.load(ctx, r, seq, ev)
	}
	byID := make(map[string]histEvent, len(r.events))
	for _, h := range r.events {
		byID[h.ev.EventBase().EventID] = h
	}
	r.mu.Unlock()
	if err != nil {
		return false, err
	}
	for _, rec := range recs {
		for _, ids := range rec.In {
			for _, id := range ids {
				rec.order = max(rec.order, byID[id].seq)
			}
		}
		for _, o := range rec.Out {
			var b struct {
				ID string `json:"event_id"`
			}
			if json.Unmarshal(o, &b) == nil {
				rec.order = max(rec.order, byID[b.ID].seq)
			}
		}
	}
	slices.SortFunc(recs, func(a, b *undoRecord) int {
		if a.order != b.order {
			return cmpU64(b.order, a.order)
		}
		if a.At != b.At {
			return cmpU64(uint64(b.At), uint64(a.At))
		}
		return strings.Compare(b.Step+b.Key, a.Step+a.Key)
	})

	id, err := e.loadIdentity(ctx, run)
	if err != nil {
		return false, err
	}
	cfg, err := e.runConfig(ctx, run, runOf(t, ev))
	if err != nil {
		return false, err
	}
	var done, gaveUp []string
	for _, rec := range recs {
		ok, err := e.undo(ctx, r, t, ev, seq, id, cfg, rec, byID, d)
		if err != nil {
			return true, err
		}
		if ok {
			done = append(done, rec.Step)
		} else {
			gaveUp = append(gaveUp, rec.Step)
		}
	}
	final := &event.RunCompensatedEvent{CompensatedSteps: done, FailedSteps: gaveUp}
	if final.CompensatedSteps == nil {
		final.CompensatedSteps = []string{}
	}
	if final.FailedSteps == nil {
		final.FailedSteps = []string{}
	}
	b := bindingOf(e.class, run.Run, undoStep, []string{ev.EventBase().EventID})
	if id != nil {
		b.secret = id.secret
	}
	final.EventID = b.id("compensated", 0)
	if err := e.publishAfterEnd(ctx, t, final); err != nil {
		return true, err
	}
	st := status.Record{State: status.Compensated, Error: msg, Compensated: done, CompensationFailed: gaveUp}
	switch {
	case event.IsCancelled(ev):
		st.State = status.Cancelled
	case len(gaveUp) > 0:
		st.State = status.Failed
	}
	e.writeStatus(ctx, nil, t, st)
	e.log.InfoContext(ctx, "dispatch: run compensated", "run_id", run.Run, "compensated", done, "failed", gaveUp)
	return true, nil
}

// runConfig decodes the run's stored configuration for compensations; a
// static resolver's, which is not stored, is resolved again.
func (e *Engine) runConfig(ctx context.Context, run store.RunKey, rr step.Run) (any, error) {
	raw, ok, err := e.store.Get(ctx, run.RunContext(), KeyAgentConfig)
	if err != nil {
		return nil, fmt.Errorf("dispatch: read agent config: %w", err)
	}
	if !ok && e.static {
		if raw, err = e.config.Resolve(ctx, rr); err != nil {
			return nil, nil // as a run that failed on it
		}
		ok = true
	}
	if !ok {
		return nil, nil
	}
	cfg, err := e.config.Decode(raw)
	if err != nil {
		return nil, nil // the run failed on it; compensations run without
	}
	return cfg, nil
}

// undo runs one compensation unless its claim says it ran. ok is false
// when it was given up.
func (e *Engine) undo(ctx context.Context, r *runEntry, t topic.Agent, trigger event.Event, seq uint64, id *runIdentity, cfg any,
	rec *undoRecord, byID map[string]histEvent, d bus.Delivery) (ok bool, err error) {
	run := r.key
	s := e.w.Step(rec.Step)
	claimStep := undoStep + rec.Step
	res, err := e.store.Claim(ctx, run, store.ClaimRequest{Step: claimStep, Key: rec.Key})
	if err != nil {
		return false, fmt.Errorf("dispatch: claim the compensation of %s: %w", rec.Step, err)
	}
	if res.Status == store.Done {
		return !res.Outcome.Failed, nil
	}
	b := bindingOf(e.class, run.Run, claimStep, []string{rec.Key})
	if id != nil {
		b.secret = id.secret
	}
	key := idempotencyKey(e.class, run.Run, claimStep, b.key)
	tries, _, _ := e.store.Get(ctx, run.RunContext(), undoTryPrefix+rec.Key)
	n, _ := strconv.Atoi(string(tries))
	attempts := n + 1

	var callErr error
	if s == nil || !s.HasCompensation() {
		callErr = fmt.Errorf("the workflow has no compensation for step %s any more", rec.Step)
	} else if args, outs, derr := e.undoArgs(s, rec, byID); derr != nil {
		callErr = derr
	} else {
		sc := &stepContext{Context: ctx, e: e, r: r, t: t, seq: seq, run: runOf(t, trigger), step: claimStep, b: &b, cfg: cfg}
		callErr = s.Undo(sc, args, outs)
	}
	if callErr == nil {
		ev := &event.StepCompensatedEvent{Step: rec.Step, IdempotencyKey: key, Attempts: attempts}
		ev.EventID = b.id("compensated", 0)
		if err := e.publishAfterEnd(ctx, t, ev); err != nil {
			return false, err
		}
		return true, e.complete(ctx, run, claimStep, rec.Key, store.Outcome{})
	}
	ref := b.id("exception", 0)
	if !e.giveUpUndo(attempts, d, callErr) {
		if _, err := e.store.Incr(ctx, run.RunContext(), undoTryPrefix+rec.Key, 1); err != nil {
			return false, fmt.Errorf("dispatch: count the attempts of the compensation of %s: %w", rec.Step, err)
		}
		e.log.WarnContext(ctx, "dispatch: compensation failed, will retry", failAttrs(run, claimStep, ref, callErr)...)
		return false, fmt.Errorf("dispatch: compensation of %s failed (attempt %d): %w", rec.Step, attempts, callErr)
	}
	e.log.ErrorContext(ctx, "dispatch: compensation failed, giving it up", failAttrs(run, claimStep, ref, callErr)...)
	failed := &event.StepCompensationFailedEvent{Step: rec.Step, IdempotencyKey: key, Attempts: attempts,
		Message: clipMessage(publicMessage(callErr, ref))}
	failed.EventID = ref
	if err := e.publishAfterEnd(ctx, t, failed); err != nil {
		return false, err
	}
	if err := e.deadLetterUndo(ctx, t, failed, rec, callErr, attempts); err != nil {
		return false, err
	}
	return false, e.complete(ctx, run, claimStep, rec.Key, store.Outcome{Failed: true, Message: callErr.Error()})
}

// giveUpUndo decides whether a failed compensation is given up now: a
// permanent error at once; else on the last attempt the engine's outage
// budget and MaxDeliver leave before the ExceptionEvent itself would be
// given up.
func (e *Engine) giveUpUndo(attempts int, d bus.Delivery, err error) bool {
	last := max(int(e.last)-1, 1)
	if IsPermanent(err) || attempts >= last {
		return true
	}
	return d != nil && d.NumDelivered() >= uint64(last)
}

// undoArgs rebuilds a compensation's arguments from its record: inputs
// from the run's history, outputs decoded.
func (e *Engine) undoArgs(s *step.Step, rec *undoRecord, byID map[string]histEvent) ([][]event.Event, []event.Event, error) {
	if len(rec.In) != len(s.Params()) {
		return nil, nil, Permanent(fmt.Errorf("the record of step %s binds %d parameters, the step has %d", rec.Step, len(rec.In), len(s.Params())))
	}
	args := make([][]event.Event, len(rec.In))
	for i, ids := range rec.In {
		args[i] = make([]event.Event, 0, len(ids))
		for _, id := range ids {
			h, ok := byID[id]
			if !ok {
				return nil, nil, Permanent(fmt.Errorf("input %s of step %s is not in the run's history", id, rec.Step))
			}
			args[i] = append(args[i], h.ev)
		}
	}
	outs := make([]event.Event, 0, len(rec.Out))
	for _, raw := range rec.Out {
		ev, err := event.Unmarshal(raw)
		if err != nil {
			return nil, nil, Permanent(fmt.Errorf("an output of step %s does not decode: %w", rec.Step, err))
		}
		outs = append(outs, ev)
	}
	return args, outs, nil
}

// publishAfterEnd publishes a compensation event on the run's control
// subject. The run has ended, so publish would drop it; the id is derived,
// so a redelivery publishes the same event, which the stream
// de-duplicates.
func (e *Engine) publishAfterEnd(ctx context.Context, t topic.Agent, ev event.Event) error {
	b := ev.EventBase()
	if b.CreatedAt == 0 {
		b.CreatedAt = e.now().UnixNano()
	}
	name := event.Name(ev)
	subj, err := t.Event(topic.Control, name, b.EventID).Subject()
	if err != nil {
		return Permanent(fmt.Errorf("dispatch: publish %s: %w", name, err))
	}
	data, err := event.Marshal(ev)
	if err != nil {
		return Permanent(fmt.Errorf("dispatch: encode %s: %w", name, err))
	}
	if _, err := e.bus.PublishStream(ctx, &bus.Msg{Subject: subj, Data: data}, b.EventID); err != nil {
		return fmt.Errorf("dispatch: publish %s: %w", name, err)
	}
	return nil
}

// deadLetterUndo keeps the record of a compensation that was given up on
// the dead-letter stream, with the reason, under the subject of its
// StepCompensationFailedEvent.
func (e *Engine) deadLetterUndo(ctx context.Context, t topic.Agent, failed *event.StepCompensationFailedEvent, rec *undoRecord, cause error, attempts int) error {
	dl := bus.DefaultDeadLetters()
	if err := e.bus.EnsureStream(ctx, dl.StreamConfig()); err != nil {
		return fmt.Errorf("dispatch: dead-letter stream: %w", err)
	}
	subj, err := t.Event(topic.Control, event.Name(failed), failed.EventID).Subject()
	if err != nil {
		return Permanent(err)
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return Permanent(fmt.Errorf("dispatch: encode compensation record: %w", err))
	}
	reason := fmt.Sprintf("dispatch: compensation of step %s given up after %d attempts: %v", rec.Step, attempts, cause)
	if len(reason) > maxReason {
		reason = reason[:maxReason] + "…"
	}
	letter, _ := dl.Letter(&bus.Msg{Subject: subj, Data: data}, e.stream, 0, uint64(attempts), reason)
	if mp := e.bus.MaxPayload(); mp > 0 {
		letter = bus.Fit(letter, mp)
	}
	if _, err := e.bus.PublishStream(ctx, letter, "deadletter:"+failed.EventID); err != nil {
		if errors.Is(err, bus.ErrPayloadTooLarge) {
			return Permanent(err)
		}
		return fmt.Errorf("dispatch: dead-letter the compensation of %s: %w", rec.Step, err)
	}
	return nil
}
