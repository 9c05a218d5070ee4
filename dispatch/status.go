package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// RunState is where a run stands.
type RunState string

// Run states. A run moves from pending (its start event was handled, no
// step ran yet) through running and waiting (an open question) to
// completed or failed; a failed run whose completed steps declared
// compensations goes on through compensating to compensated.
const (
	StatePending      RunState = "pending"
	StateRunning      RunState = "running"
	StateWaiting      RunState = "waiting"
	StateCompleted    RunState = "completed"
	StateFailed       RunState = "failed"
	StateCompensating RunState = "compensating"
	StateCompensated  RunState = "compensated"
)

// Ended reports whether s is a final state: completed, failed or
// compensated.
func (s RunState) Ended() bool {
	return s == StateCompleted || s == StateFailed || s == StateCompensated
}

// Valid reports whether s is one of the run states.
func (s RunState) Valid() bool {
	switch s {
	case StatePending, StateRunning, StateWaiting, StateCompleted, StateFailed, StateCompensating, StateCompensated:
		return true
	}
	return false
}

// RunStatus is the status record of one run, as the engine keeps it: one
// small value per run, replaced at each transition.
type RunStatus struct {
	Class   string   `json:"agent_class"`
	Run     string   `json:"run_id"`
	AgentID string   `json:"agent_id"`
	Thread  string   `json:"thread_id"`
	State   RunState `json:"status"`
	// Question is the open question of a waiting run.
	Question *OpenQuestion `json:"question,omitempty"`
	// Error is the message of the ExceptionEvent that failed the run.
	Error string `json:"error,omitempty"`
	// Compensated and CompensationFailed name the steps whose compensation
	// ran, or was given up, in the order they ran.
	Compensated        []string `json:"compensated_steps,omitempty"`
	CompensationFailed []string `json:"compensation_failed_steps,omitempty"`
	// Updated is when the record was written.
	Updated time.Time `json:"updated_at"`
}

// OpenQuestion is the question a waiting run asked.
type OpenQuestion struct {
	EventID string `json:"event_id"`
	Event   string `json:"event"` // wire name of the request
	// Deadline is when the question times out, if it carries a timeout.
	Deadline *time.Time `json:"deadline,omitempty"`
}

// ErrNoStatus is returned when a run has no status record: it never
// started here, or its record outlived the store's retention.
var ErrNoStatus = errors.New("dispatch: no status for this run")

// StatusStore is implemented by stores that keep the status record of each
// run: one value per run, replaced at every transition, found by run and
// listed by class or by thread. Records expire with the store's retention
// of run state (the NATS KV bucket's TTL, the Redis expiry), so the index
// never grows with ended runs beyond what the operator keeps. The three
// stores of this module implement it; with a Store that does not, runs
// have no status.
type StatusStore interface {
	// PutStatus stores value as the status record of run in thread,
	// replacing the previous one. The caller does not change value
	// afterwards, so the store may keep it.
	PutStatus(ctx context.Context, run RunKey, thread string, value []byte) error
	// Status returns the record of run, and false if there is none.
	Status(ctx context.Context, run RunKey) ([]byte, bool, error)
	// ListStatus returns up to limit records of class (of thread only,
	// unless thread is ""), in ascending order of run id, starting after
	// run id after ("" for the first). limit ≤ 0 means no limit.
	ListStatus(ctx context.Context, class, thread, after string, limit int) ([]StatusEntry, error)
}

// StatusEntry is one record of StatusStore.ListStatus.
type StatusEntry struct {
	Run   string
	Value []byte
}

// ReadStatus returns the status of run of class from s. It returns an error
// wrapping ErrNoStatus when there is no record, and one saying so when s
// keeps no status.
func ReadStatus(ctx context.Context, s Store, class, run string) (RunStatus, error) {
	ss, ok := s.(StatusStore)
	if !ok {
		return RunStatus{}, fmt.Errorf("dispatch: the store %T keeps no run status", s)
	}
	if err := topic.ValidateToken("agent_class", class); err != nil {
		return RunStatus{}, fmt.Errorf("dispatch: status: %w", err)
	}
	if err := topic.ValidateToken("run_id", run); err != nil {
		return RunStatus{}, fmt.Errorf("dispatch: status: %w", err)
	}
	raw, found, err := ss.Status(ctx, RunKey{Class: class, Run: run})
	if err != nil {
		return RunStatus{}, fmt.Errorf("dispatch: read status of run %s: %w", run, err)
	}
	if !found {
		return RunStatus{}, fmt.Errorf("%w: run %s of %s", ErrNoStatus, run, class)
	}
	var st RunStatus
	if err := json.Unmarshal(raw, &st); err != nil {
		return RunStatus{}, fmt.Errorf("dispatch: status of run %s: %w", run, err)
	}
	return st, nil
}

// RunQuery selects runs for ListRuns.
type RunQuery struct {
	// Thread restricts the list to one thread; "" lists the whole class.
	Thread string `json:"thread_id,omitempty"`
	// States keeps only runs in one of these states; empty keeps all.
	States []RunState `json:"states,omitempty"`
	// After is the cursor: the Next of the previous page, "" for the first.
	After string `json:"after,omitempty"`
	// Limit is the page size: 0 means DefaultPageSize, at most MaxPageSize.
	Limit int `json:"limit,omitempty"`
}

// Page sizes of ListRuns.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// RunPage is one page of ListRuns, in ascending order of run id.
type RunPage struct {
	Runs []RunStatus `json:"runs"`
	// Next is the cursor of the next page; "" on the last page.
	Next string `json:"next,omitempty"`
}

// ListRuns lists the runs of class in s that q selects, one page at a
// time. The cost is proportional to the runs the store keeps (within its
// retention), not to the page.
func ListRuns(ctx context.Context, s Store, class string, q RunQuery) (RunPage, error) {
	ss, ok := s.(StatusStore)
	if !ok {
		return RunPage{}, fmt.Errorf("dispatch: the store %T keeps no run status", s)
	}
	if err := topic.ValidateToken("agent_class", class); err != nil {
		return RunPage{}, fmt.Errorf("dispatch: list runs: %w", err)
	}
	if q.Thread != "" {
		if err := topic.ValidateToken("thread_id", q.Thread); err != nil {
			return RunPage{}, fmt.Errorf("dispatch: list runs: %w", err)
		}
	}
	for _, st := range q.States {
		if !st.Valid() {
			return RunPage{}, fmt.Errorf("dispatch: list runs: %q is not a run status (pending, running, waiting, completed, failed, compensating, compensated)", st)
		}
	}
	switch {
	case q.Limit < 0:
		return RunPage{}, fmt.Errorf("dispatch: list runs: limit %d is negative", q.Limit)
	case q.Limit == 0:
		q.Limit = DefaultPageSize
	case q.Limit > MaxPageSize:
		q.Limit = MaxPageSize
	}
	page := RunPage{Runs: []RunStatus{}}
	after := q.After
	for {
		// Read one more than asked, to know whether a next page exists.
		batch := q.Limit + 1
		entries, err := ss.ListStatus(ctx, class, q.Thread, after, batch)
		if err != nil {
			return RunPage{}, fmt.Errorf("dispatch: list runs of %s: %w", class, err)
		}
		for _, en := range entries {
			var st RunStatus
			if err := json.Unmarshal(en.Value, &st); err != nil {
				return RunPage{}, fmt.Errorf("dispatch: status of run %s: %w", en.Run, err)
			}
			if len(q.States) > 0 && !slices.Contains(q.States, st.State) {
				after = en.Run
				continue
			}
			if len(page.Runs) == q.Limit {
				page.Next = page.Runs[len(page.Runs)-1].Run
				return page, nil
			}
			page.Runs = append(page.Runs, st)
			after = en.Run
		}
		if len(entries) < batch {
			return page, nil
		}
	}
}

// Status returns the status of run (see ReadStatus).
func (e *Engine) Status(ctx context.Context, run string) (RunStatus, error) {
	return ReadStatus(ctx, e.store, e.class, run)
}

// ListRuns lists the runs of the engine's class (see the function
// ListRuns).
func (e *Engine) ListRuns(ctx context.Context, q RunQuery) (RunPage, error) {
	return ListRuns(ctx, e.store, e.class, q)
}

// writeStatus stores st as the status of the run on t. A failure is
// logged, not returned: the status is a view of the run, and the run must
// not fail for it.
func (e *Engine) writeStatus(ctx context.Context, r *runEntry, t topic.Agent, st RunStatus) {
	if r == nil {
		r = e.cache.peek(RunKey{Class: e.class, Run: t.Run})
	}
	if r != nil && !e.local {
		r.settleStatus()
	}
	if e.putStatus(ctx, t, st) && r != nil {
		r.state.Store(stateOf(st.State))
	}
}

// putStatus stores st and reports whether it was stored.
func (e *Engine) putStatus(ctx context.Context, t topic.Agent, st RunStatus) bool {
	ss, ok := e.store.(StatusStore)
	if !ok {
		return false
	}
	st.Class, st.Run, st.AgentID, st.Thread = e.class, t.Run, t.ID, t.Thread
	st.Updated = e.now().UTC()
	raw, err := st.encode()
	if err == nil {
		err = ss.PutStatus(ctx, RunKey{Class: e.class, Run: t.Run}, t.Thread, raw)
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
func (e *Engine) writeStatusSoon(ctx context.Context, r *runEntry, t topic.Agent, st RunStatus) {
	if _, ok := e.store.(StatusStore); !ok {
		return
	}
	if e.local {
		e.writeStatus(ctx, r, t, st)
		return
	}
	e.writeStatusAsync(ctx, r, t, st)
}

// writeStatusAsync is writeStatusSoon for a remote store.
func (e *Engine) writeStatusAsync(ctx context.Context, r *runEntry, t topic.Agent, st RunStatus) {
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
	r.statusMu.Unlock()
	e.pool.Go(func() {
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
	})
}

// statusWriteTimeout bounds a status write made off the run's path.
const statusWriteTimeout = 30 * time.Second

// settleStatus waits for the run's queued status writes: those not yet
// started are skipped, one in flight ends first. Call it after the run is
// marked terminated and before its final status is written.
func (r *runEntry) settleStatus() {
	r.statusGen.Add(1)
	r.statusMu.Lock()
	prev := r.statusDone
	r.statusMu.Unlock()
	if prev != nil {
		<-prev
	}
}

// stateOf returns a shared pointer to s, for runEntry.state.
func stateOf(s RunState) *RunState {
	for i := range knownStates {
		if knownStates[i] == s {
			return &knownStates[i]
		}
	}
	return &s
}

var knownStates = [...]RunState{StatePending, StateRunning, StateWaiting, StateCompleted, StateFailed, StateCompensating, StateCompensated}

// noteStart records a started run as pending: no step has run yet (the
// first one records running).
func (e *Engine) noteStart(ctx context.Context, r *runEntry, t topic.Agent) {
	e.writeStatusSoon(ctx, r, t, RunStatus{State: StatePending})
}

// noteRunning records the run as running unless this process knows it
// recorded so already, or the run has ended.
func (e *Engine) noteRunning(ctx context.Context, r *runEntry, t topic.Agent) {
	if r.terminated.Load() {
		return
	}
	if p := r.state.Load(); p != nil && *p == StateRunning {
		return
	}
	e.writeStatusSoon(ctx, r, t, RunStatus{State: StateRunning})
}

// noteWaiting records the run as waiting for question q, whose deadline
// key is dl ("" without a timeout).
func (e *Engine) noteWaiting(ctx context.Context, r *runEntry, t topic.Agent, q event.Event, dl string) {
	oq := &OpenQuestion{EventID: q.EventBase().EventID, Event: event.Name(q)}
	if due, ok := dueOf(dl); ok && dl != "" {
		d := time.Unix(0, due).UTC()
		oq.Deadline = &d
	}
	e.writeStatus(ctx, r, t, RunStatus{State: StateWaiting, Question: oq})
}

// noteEnd records the final status of a run whose terminal event ev was
// handled: completed for a stop, failed with the exception's message.
func (e *Engine) noteEnd(ctx context.Context, t topic.Agent, ev event.Event) {
	st := RunStatus{State: StateCompleted}
	if event.IsException(ev) && !event.IsStop(ev) {
		st = RunStatus{State: StateFailed, Error: exceptionMessage(ev)}
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
func (e *Engine) endedStatus(ctx context.Context, run RunKey) (RunStatus, bool) {
	ss, ok := e.store.(StatusStore)
	if !ok {
		return RunStatus{}, false
	}
	raw, found, err := ss.Status(ctx, run)
	if err != nil || !found {
		return RunStatus{}, false
	}
	var st RunStatus
	if json.Unmarshal(raw, &st) != nil {
		return RunStatus{}, false
	}
	return st, st.State.Ended()
}

// encode is json.Marshal(st), without its allocations for the records
// written on every run (no question, error or step lists).
func (st *RunStatus) encode() ([]byte, error) {
	if st.Question != nil || st.Error != "" || st.Compensated != nil || st.CompensationFailed != nil ||
		st.Updated.Year() < 0 || st.Updated.Year() > 9999 {
		return marshalStatus(*st)
	}
	b := make([]byte, 0, 160+len(st.Class)+len(st.Run)+len(st.AgentID)+len(st.Thread))
	b = append(b, `{"agent_class":`...)
	b = appendJSONString(b, st.Class)
	b = append(b, `,"run_id":`...)
	b = appendJSONString(b, st.Run)
	b = append(b, `,"agent_id":`...)
	b = appendJSONString(b, st.AgentID)
	b = append(b, `,"thread_id":`...)
	b = appendJSONString(b, st.Thread)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(st.State))
	b = append(b, `,"updated_at":"`...)
	b = st.Updated.AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...), nil
}

// marshalStatus is json.Marshal of a copy, so that only this path moves a
// record to the heap.
func marshalStatus(st RunStatus) ([]byte, error) { return json.Marshal(st) }
