package engine

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/store"
	"github.com/saap-go/agent/topic"
)

// Status returns the status of run (see status.Read).
func (e *Engine) Status(ctx context.Context, run string) (status.Record, error) {
	return status.Read(ctx, e.store, e.class, run)
}

// ListRuns lists the runs of the engine's class (see the function
// status.List).
func (e *Engine) ListRuns(ctx context.Context, q status.Query) (status.Page, error) {
	return status.List(ctx, e.store, e.class, q)
}

// writeStatus stores st as the status of the run on t. A failure is
// logged, not returned: the status is a view of the run, and the run must
// not fail for it.
func (e *Engine) writeStatus(ctx context.Context, r *runEntry, t topic.Agent, st status.Record) {
	if r == nil {
		r = e.cache.peek(store.RunKey{Class: e.class, Run: t.Run})
	}
	if r != nil && !e.local {
		r.settleStatus()
	}
	if e.putStatus(ctx, t, st) && r != nil {
		r.state.Store(stateOf(st.State))
	}
}

// putStatus stores st and reports whether it was stored.
func (e *Engine) putStatus(ctx context.Context, t topic.Agent, st status.Record) bool {
	ss, ok := e.store.(store.Statuses)
	if !ok {
		return false
	}
	st.Class, st.Run, st.AgentID, st.Thread, st.Display = e.class, t.Run, t.ID, t.Thread, t.Display
	st.Updated = e.now().UTC()
	raw, err := encodeStatus(&st)
	if err == nil {
		err = ss.PutStatus(ctx, store.RunKey{Class: e.class, Run: t.Run}, t.Thread, raw)
	}
	if err != nil {
		e.log.WarnContext(ctx, "dispatch: the run's status could not be recorded", "run_id", t.Run, "status", st.State, "error", err)
		return false
	}
	return true
}

// writeStatusSoon writes st as writeStatus does, but off the caller's
// path when the store is remote: pending and running are views of a run
// that is about to move on, and a step should not wait for them. The run's
// writes stay in order (each waits for the one before), a write that a
// later one supersedes before it starts is skipped, and nothing is written
// once the run ended here (settleStatus).
func (e *Engine) writeStatusSoon(ctx context.Context, r *runEntry, t topic.Agent, st status.Record) {
	if _, ok := e.store.(store.Statuses); !ok {
		return
	}
	if e.local {
		e.writeStatus(ctx, r, t, st)
		return
	}
	e.writeStatusAsync(ctx, r, t, st)
}

// writeStatusAsync is writeStatusSoon for a remote store. The write waits
// for the status delay first (WithStatusDelay), so that a run that moves on
// within it (most do: pending and running last as long as its steps) writes
// only the status it ends with.
func (e *Engine) writeStatusAsync(ctx context.Context, r *runEntry, t topic.Agent, st status.Record) {
	e.statusMu.Lock()
	closed := e.statusClosed
	if !closed {
		e.statusWG.Add(1)
	}
	e.statusMu.Unlock()
	if closed {
		return // the engine is closed: the status stays as it was
	}
	ptr := stateOf(st.State)
	r.state.Store(ptr)
	r.statusMu.Lock()
	prev := r.statusDone
	done := make(chan struct{})
	r.statusDone = done
	gen := r.statusGen.Add(1)
	write := func() {
		defer e.statusWG.Done()
		defer close(done)
		if prev != nil {
			<-prev
		}
		if r.statusGen.Load() != gen || r.terminated.Load() {
			return
		}
		// The handling's values, not its end (the event is acked first);
		// Close ends the write, so that a dead server cannot hold up a
		// shutdown.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusWriteTimeout)
		defer cancel()
		defer context.AfterFunc(e.statusCtx, cancel)()
		if !e.putStatus(wctx, t, st) {
			r.state.CompareAndSwap(ptr, nil) // the next step tries again
		}
	}
	if e.statusDelay <= 0 {
		r.statusMu.Unlock()
		e.pool.Go(write)
		return
	}
	q := queuedStatus{run: write, fired: new(atomic.Bool)}
	q.timer = time.AfterFunc(e.statusDelay, func() {
		q.fired.Store(true)
		e.pool.Go(write)
	})
	// Writes whose delay has passed are on their way: only the waiting
	// ones are kept for settleStatus.
	kept := r.statusWait[:0]
	for _, w := range r.statusWait {
		if !w.fired.Load() {
			kept = append(kept, w)
		}
	}
	r.statusWait = append(kept, q)
	r.statusMu.Unlock()
}

// queuedStatus is a status write waiting for the status delay.
type queuedStatus struct {
	timer *time.Timer
	run   func()
	fired *atomic.Bool
}

// statusWriteTimeout bounds a status write made off the run's path.
const statusWriteTimeout = 30 * time.Second

// DefaultStatusDelay is how long a run's pending and running status waits
// before it is written (see WithStatusDelay).
const DefaultStatusDelay = 100 * time.Millisecond

// WithStatusDelay sets how long a run's pending and running status waits
// before it is written: a run that moves on within it writes only its next
// status (default DefaultStatusDelay). The status index lags a run by up to
// this much plus one store write; its final status is written when its
// terminal event is handled. 0 writes at once.
func WithStatusDelay(d time.Duration) Option { return func(e *Engine) { e.statusDelay = d } }

// settleStatus waits for the run's queued status writes: those not yet
// started are skipped, one in flight ends first. Call it after the run is
// marked terminated and before its final status is written.
func (r *runEntry) settleStatus() {
	r.statusGen.Add(1)
	r.statusMu.Lock()
	prev := r.statusDone
	waiting := r.statusWait
	r.statusWait = nil
	r.statusMu.Unlock()
	for _, q := range waiting {
		if q.timer.Stop() {
			q.run() // skipped at once: a later generation supersedes it
		}
	}
	if prev != nil {
		<-prev
	}
}

// stateOf returns a shared pointer to s, for runEntry.state.
func stateOf(s status.State) *status.State {
	for i := range knownStates {
		if knownStates[i] == s {
			return &knownStates[i]
		}
	}
	return &s
}

var knownStates = [...]status.State{status.Pending, status.Running, status.Waiting, status.Completed, status.Failed, status.Compensating, status.Compensated, status.Cancelled}

// noteStart records a started run as pending: no step has run yet (the
// first one records running).
func (e *Engine) noteStart(ctx context.Context, r *runEntry, t topic.Agent) {
	e.writeStatusSoon(ctx, r, t, status.Record{State: status.Pending})
}

// noteRunning records the run as running unless this process knows it
// recorded so already, or the run has ended.
func (e *Engine) noteRunning(ctx context.Context, r *runEntry, t topic.Agent) {
	if r.terminated.Load() {
		return
	}
	if p := r.state.Load(); p != nil && *p == status.Running {
		return
	}
	e.writeStatusSoon(ctx, r, t, status.Record{State: status.Running})
}

// noteWaiting records the run as waiting for question q, whose deadline
// key is dl ("" without a timeout).
func (e *Engine) noteWaiting(ctx context.Context, r *runEntry, t topic.Agent, q event.Event, dl string) {
	oq := &status.Question{EventID: q.EventBase().EventID, Event: event.Name(q)}
	if due, ok := dueOf(dl); ok && dl != "" {
		d := time.Unix(0, due).UTC()
		oq.Deadline = &d
	}
	e.writeStatus(ctx, r, t, status.Record{State: status.Waiting, Question: oq})
}

// noteEnd records the final status of a run whose terminal event ev was
// handled: completed for a stop, cancelled for a RunCancelledEvent,
// failed with the exception's message.
func (e *Engine) noteEnd(ctx context.Context, t topic.Agent, ev event.Event) {
	st := status.Record{State: status.Completed}
	switch {
	case event.IsCancelled(ev):
		st.State = status.Cancelled
	case event.IsException(ev) && !event.IsStop(ev):
		st = status.Record{State: status.Failed, Error: exceptionMessage(ev)}
	}
	e.writeStatus(ctx, nil, t, st)
}

// exceptionMessage is the message member of an exception event.
func exceptionMessage(ev event.Event) string {
	if x, ok := ev.(*event.ExceptionEvent); ok {
		return x.Message
	}
	data, err := event.Marshal(ev)
	if err != nil {
		return ""
	}
	var m struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(data, &m)
	return m.Message
}

// endedStatus reads the recorded status of run and reports whether it is
// final already (a redelivered terminal event).
func (e *Engine) endedStatus(ctx context.Context, run store.RunKey) (status.Record, bool) {
	ss, ok := e.store.(store.Statuses)
	if !ok {
		return status.Record{}, false
	}
	raw, found, err := ss.Status(ctx, run)
	if err != nil || !found {
		return status.Record{}, false
	}
	var st status.Record
	if json.Unmarshal(raw, &st) != nil {
		return status.Record{}, false
	}
	return st, st.State.Ended()
}

// encodeStatus is json.Marshal(st), without its allocations for the records
// written on every run (no question, error or step lists).
func encodeStatus(st *status.Record) ([]byte, error) {
	if st.Question != nil || st.Error != "" || st.Compensated != nil || st.CompensationFailed != nil ||
		st.Updated.Year() < 0 || st.Updated.Year() > 9999 {
		return marshalStatus(*st)
	}
	b := make([]byte, 0, 176+len(st.Class)+len(st.Run)+len(st.AgentID)+len(st.Thread)+len(st.Display))
	b = append(b, `{"agent_class":`...)
	b = appendJSONString(b, st.Class)
	b = append(b, `,"run_id":`...)
	b = appendJSONString(b, st.Run)
	b = append(b, `,"agent_id":`...)
	b = appendJSONString(b, st.AgentID)
	b = append(b, `,"thread_id":`...)
	b = appendJSONString(b, st.Thread)
	if st.Display != "" {
		b = append(b, `,"display_id":`...)
		b = appendJSONString(b, st.Display)
	}
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(st.State))
	b = append(b, `,"updated_at":"`...)
	b = st.Updated.AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...), nil
}

// marshalStatus is json.Marshal of a copy, so that only this path moves a
// record to the heap.
func marshalStatus(st status.Record) ([]byte, error) { return json.Marshal(st) }
