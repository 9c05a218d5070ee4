package engine

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// Where the engine keeps the pending deadlines of a class's questions: in
// thread-context scopes whose ids have a dot, so that no thread id (a
// subject token) can name them. Deadlines are grouped by due time in
// buckets of DeadlineBucket: the deadline due at time d is a key of the
// scope DeadlineScope+"."+(d.UnixNano() / DeadlineBucket), and the scope
// DeadlineScope lists the buckets in use (key: the bucket number). A
// starting engine lists the buckets, then the keys of the buckets due
// within one bucket's time only; later buckets are listed when their time
// comes near. So a restart costs the same with many deadlines far ahead.
const (
	DeadlineScope  = "saap.deadlines"
	DeadlineBucket = 10 * time.Minute
)

func indexScope(class string) store.Scope {
	return store.Scope{Kind: store.ThreadScope, Class: class, ID: DeadlineScope}
}

func bucketOf(due int64) int64 { return due / int64(DeadlineBucket) }

func bucketScope(class string, bucket int64) store.Scope {
	return store.Scope{Kind: store.ThreadScope, Class: class, ID: DeadlineScope + "." + strconv.FormatInt(bucket, 10)}
}

// deadlineScope is the scope that holds the deadline key.
func deadlineScope(class, key string) store.Scope {
	due, _ := dueOf(key)
	return bucketScope(class, bucketOf(due))
}

// bucketPrefix marks the scheduler's own entries: "list this bucket".
const bucketPrefix = "\x00bucket."

// PendingDeadlines lists the keys of every pending deadline of class in s,
// all buckets included (for tests and tools; an engine never lists them
// all at once).
func PendingDeadlines(ctx context.Context, s store.Store, class string) ([]string, error) {
	buckets, err := s.Keys(ctx, indexScope(class))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, b := range buckets {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil {
			continue
		}
		keys, err := s.Keys(ctx, bucketScope(class, n))
		if err != nil {
			return nil, err
		}
		out = append(out, keys...)
	}
	return out, nil
}

// timeoutName is the wire name of the timeout event that answers q.
func timeoutName(q event.Event) string {
	switch {
	case event.IsAITLRequest(q):
		return "AgentInTheLoopTimeoutEvent"
	case event.IsBITLRequest(q):
		return "BotInTheLoopTimeoutEvent"
	}
	return "HumanInTheLoopTimeoutEvent"
}

// newTimeout returns the timeout event name of deadline dl.
func newTimeout(dl deadline) event.Event {
	var ev event.Event
	var w *event.WaitTimeoutEvent
	switch dl.Event {
	case "AgentInTheLoopTimeoutEvent":
		// What the reference publishes when a delegate does not answer:
		// an AgentInTheLoopExceptionEvent naming the request.
		secs := strconv.FormatFloat(dl.Seconds, 'f', -1, 64)
		a := &event.AgentInTheLoopTimeoutEvent{TimeoutSeconds: dl.Seconds}
		a.RequestEventID = dl.Request
		a.ExceptionEvent = &event.ExceptionEvent{
			Message:        "the delegate did not answer request " + dl.Request + " within " + secs + " s",
			HTTPStatusCode: 504,
		}
		x := a.ExceptionEvent.EventBase()
		x.EventID, x.CreatedAt = derivedID(dl.EventID, "timeout-exception"), dl.Due
		a.EventID, a.CreatedAt = dl.EventID, dl.Due
		return a
	case "TimerFiredEvent":
		f := &event.TimerFiredEvent{RequestEventID: dl.Request, FireAt: time.Unix(0, dl.Due).UTC(), Name: dl.Timer}
		f.EventID, f.CreatedAt = dl.EventID, dl.Due
		return f
	case "BotInTheLoopTimeoutEvent":
		b := &event.BotInTheLoopTimeoutEvent{}
		ev, w = b, &b.WaitTimeoutEvent
	default:
		h := &event.HumanInTheLoopTimeoutEvent{}
		ev, w = h, &h.WaitTimeoutEvent
	}
	w.EventID, w.CreatedAt = dl.EventID, dl.Due
	w.RequestEventID, w.TimeoutSeconds = dl.Request, dl.Seconds
	return ev
}

// deadline is what the store keeps of one pending timeout: everything the
// timeout event needs, so that any replica can publish it.
type deadline struct {
	AgentID string  `json:"agent_id"`
	Thread  string  `json:"thread_id"`
	Display string  `json:"display_id"`
	Run     string  `json:"run_id"`
	Request string  `json:"request_event_id"`
	Event   string  `json:"event"`    // wire name of the timeout event
	EventID string  `json:"event_id"` // derived from the request: every replica publishes the same
	Seconds float64 `json:"timeout_seconds"`
	Timer   string  `json:"timer_name,omitempty"` // a timer's name
	Due     int64   `json:"due"`                  // Unix nanoseconds
}

// deadlineKey starts with the due time, zero-padded, so that listing the
// keys alone tells when each is due.
func deadlineKey(due int64, run, request string) string {
	return fmt.Sprintf("%019d.%s.%s", due, run, request)
}

func dueOf(key string) (int64, bool) {
	i := strings.IndexByte(key, '.')
	if i <= 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(key[:i], 10, 64)
	return n, err == nil
}

// recordDeadline stores the deadline of question q, asked by the run on t,
// if it carries a timeout, and returns its key ("" if none). The due time
// counts from the request's created_at, which is kept with the step's
// outputs, so a republished request records the same deadline.
func (e *Engine) recordDeadline(ctx context.Context, r *runEntry, t topic.Agent, q event.Event) (string, error) {
	b := q.EventBase()
	created := b.CreatedAt
	if created == 0 {
		created = e.now().UnixNano()
	}
	var name, timer string
	var due int64
	var secs float64
	if tr, ok := q.(*event.TimerRequestEvent); ok {
		at, err := event.TimerDue(tr, created)
		if err != nil {
			return "", Permanent(err)
		}
		name, timer, due = "TimerFiredEvent", tr.Name, at.UnixNano()
		secs = time.Duration(due - created).Seconds()
	} else {
		d, ok, err := event.QuestionTimeout(q)
		if err != nil {
			return "", Permanent(err)
		}
		if !ok {
			return "", nil
		}
		name, due, secs = timeoutName(q), created+int64(d), d.Seconds()
	}
	bnd := bindingOf(e.class, t.Run, "timeout", []string{b.EventID})
	if id := r.ident.Load(); id != nil {
		bnd.secret = id.secret
	}
	dl := deadline{
		AgentID: t.ID, Thread: t.Thread, Display: t.Display, Run: t.Run, Request: b.EventID,
		Event: name, EventID: bnd.id("timeout", 0), Seconds: secs, Timer: timer, Due: due,
	}
	raw, err := json.Marshal(dl)
	if err != nil {
		return "", fmt.Errorf("dispatch: encode deadline: %w", err)
	}
	key := deadlineKey(dl.Due, t.Run, b.EventID)
	if err := e.store.Set(ctx, deadlineScope(e.class, key), key, raw); err != nil {
		return "", fmt.Errorf("dispatch: record deadline of %s: %w", b.EventID, err)
	}
	// After the deadline: a listed bucket always holds what it was listed for.
	if bk := bucketOf(dl.Due); e.timers.indexed(bk) {
		if err := e.store.Set(ctx, indexScope(e.class), strconv.FormatInt(bk, 10), []byte("1")); err != nil {
			return "", fmt.Errorf("dispatch: record deadline bucket of %s: %w", b.EventID, err)
		}
	}
	e.timers.add(dl.Due, key, &dl)
	return key, nil
}

// dropDeadline removes the deadline of an answered question.
func (e *Engine) dropDeadline(ctx context.Context, key string) {
	if key == "" {
		return
	}
	e.timers.cancel(key)
	if err := e.store.Delete(ctx, deadlineScope(e.class, key), key); err != nil {
		// The timer finds the question answered and drops it then.
		e.log.WarnContext(ctx, "dispatch: deadline of an answered question not removed", "deadline", key, "error", err)
	}
}

// dropRunDeadlines removes the pending deadlines of run, which has ended:
// its timers and the timeouts of its questions never fire. r is the run's
// entry, if cached. This process knows the deadlines when it founded the
// run and no other replica wrote its state: then a run without any costs
// nothing here. Otherwise (the run was founded or continued elsewhere, or
// this process restarted) the run's open questions in its run context name
// them: one listing, and one read per question.
func (e *Engine) dropRunDeadlines(ctx context.Context, run store.RunKey, r *runEntry) error {
	var keys []string
	if r != nil && r.founded.Load() && !r.foreign.Load() && e.dirty.live(r.dirtyEpoch.Load()) {
		keys = r.takeDeadlines()
	} else {
		names, err := e.store.Keys(ctx, run.RunContext())
		if err != nil {
			return fmt.Errorf("dispatch: list the open questions of run %s: %w", run.Run, err)
		}
		for _, k := range names {
			if !strings.HasPrefix(k, requestPrefix) {
				continue
			}
			raw, ok, err := e.store.Get(ctx, run.RunContext(), k)
			if err != nil {
				return fmt.Errorf("dispatch: read open question %s of run %s: %w", k, run.Run, err)
			}
			var rt replyTopic
			if !ok || json.Unmarshal(raw, &rt) != nil || rt.Deadline == "" {
				continue
			}
			keys = append(keys, rt.Deadline)
		}
		if r != nil {
			r.takeDeadlines()
		}
	}
	for _, k := range keys {
		e.timers.cancel(k)
		if err := e.store.Delete(ctx, deadlineScope(e.class, k), k); err != nil {
			return fmt.Errorf("dispatch: remove deadline %s of ended run %s: %w", k, run.Run, err)
		}
	}
	if len(keys) > 0 {
		e.log.DebugContext(ctx, "dispatch: deadlines of the ended run removed", "run_id", run.Run, "deadlines", len(keys))
	}
	return nil
}

// Clock is the time source of the timeout scheduler.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once d has passed, on a goroutine of the clock's
	// choosing; Stop on the result prevents a call still pending.
	AfterFunc(d time.Duration, f func()) interface{ Stop() bool }
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
func (wallClock) AfterFunc(d time.Duration, f func()) interface{ Stop() bool } {
	return time.AfterFunc(d, f)
}

// WithTimeoutClock sets the clock the timeout scheduler reads and arms its
// timer on (default: the wall clock). Tests pass a manual clock to make
// timeouts fire when they advance it.
func WithTimeoutClock(c Clock) Option { return func(e *Engine) { e.timers.clock = c } }

// WithTimeoutRescan makes a started scheduler list the store's pending
// deadlines every d (default: never), so that it also fires the deadlines
// another replica recorded and can no longer fire (it was stopped for
// good). Restarted replicas load them anyway.
func WithTimeoutRescan(d time.Duration) Option { return func(e *Engine) { e.timers.rescan = d } }

// WithTimeoutWorkers sets how many due timeouts are published at once
// (default 16; 1 publishes them in due order).
func WithTimeoutWorkers(n int) Option { return func(e *Engine) { e.timers.workers = max(n, 1) } }

// StartTimeouts loads the pending deadlines of the class from the store
// and starts the engine's timeout scheduler: one timer for the earliest
// deadline, whatever the number of paused runs. When a deadline passes, the
// scheduler publishes one timeout event (HumanInTheLoopTimeoutEvent,
// BotInTheLoopTimeoutEvent or AgentInTheLoopTimeoutEvent, carrying
// request_event_id and timeout_seconds) into the waiting run. Its event id
// is derived from the request, so replicas firing the same deadline store
// one event, and the run accepts the first of answer and timeout only.
// Close stops the scheduler.
func (e *Engine) StartTimeouts(ctx context.Context) error {
	return e.timers.start(ctx, false)
}

// StartTimeoutsBackground is StartTimeouts without waiting for the pending
// deadlines to be listed: the scheduler serves new deadlines at once and
// the pending ones as soon as the listing is done (retried until it
// succeeds or Close), so a restart does not wait for them. Close waits for
// the listing to end.
func (e *Engine) StartTimeoutsBackground(ctx context.Context) error {
	return e.timers.start(ctx, true)
}

// PendingTimeouts returns the number of deadlines the scheduler holds (for
// tests and metrics).
// Deadlines in buckets not listed yet (due later) are not counted.
func (e *Engine) PendingTimeouts() int {
	e.timers.mu.Lock()
	defer e.timers.mu.Unlock()
	n := 0
	for k := range e.timers.known {
		if !strings.HasPrefix(k, bucketPrefix) {
			n++
		}
	}
	return n
}

// timeouts is the engine's scheduler: a heap of (due, key) and one timer.
// Entries whose key is no longer known (answered here, or fired) are
// skipped when they come up.
type timeouts struct {
	e       *Engine
	clock   Clock
	rescan  time.Duration
	workers int

	mu      sync.Mutex
	h       dueHeap
	known   map[string]struct{}
	buckets map[int64]struct{} // buckets this engine entered in the index
	timer   interface{ Stop() bool }
	armedAt int64 // due time the timer is set for; 0: none
	started bool
	closed  bool
	ctx     context.Context
	stopCtx context.CancelFunc
	scan    interface{ Stop() bool }
	firing  sync.WaitGroup
	queue   []dueEntry // due, waiting for a worker, in due order
	busy    int        // workers publishing the queue
}

type dueEntry struct {
	due int64
	key string
	dl  *deadline // nil: read from the store when due
}

type dueHeap []dueEntry

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	return h[i].due < h[j].due || h[i].due == h[j].due && h[i].key < h[j].key
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)   { *h = append(*h, x.(dueEntry)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (s *timeouts) add(due int64, key string, dl *deadline) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addLocked(due, key, dl)
}

func (s *timeouts) addLocked(due int64, key string, dl *deadline) {
	if s.closed {
		return
	}
	if s.known == nil {
		s.known = map[string]struct{}{}
	}
	if _, ok := s.known[key]; ok {
		return
	}
	s.known[key] = struct{}{}
	heap.Push(&s.h, dueEntry{due: due, key: key, dl: dl})
	s.armLocked()
}

func (s *timeouts) cancel(key string) {
	s.mu.Lock()
	delete(s.known, key)
	s.mu.Unlock()
}

func (s *timeouts) start(ctx context.Context, background bool) error {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return errors.New("dispatch: StartTimeouts called twice or after Close")
	}
	s.ctx, s.stopCtx = context.WithCancel(context.WithoutCancel(ctx))
	if background {
		// New deadlines are served at once; the pending ones join as soon
		// as they are listed.
		s.started = true
		s.armLocked()
		s.firing.Add(1)
		s.mu.Unlock()
		go s.loadLoop()
		return nil
	}
	s.mu.Unlock()
	if err := s.load(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = true
	s.armLocked()
	if s.rescan > 0 {
		s.scan = s.clock.AfterFunc(s.rescan, s.rescanNow)
	}
	return nil
}

// loadLoop lists the pending deadlines until it succeeds or the scheduler
// stops, then arms the timer and the rescan.
func (s *timeouts) loadLoop() {
	defer s.firing.Done()
	for {
		err := s.load(s.ctx)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		if err == nil {
			s.armLocked()
			if s.rescan > 0 {
				s.scan = s.clock.AfterFunc(s.rescan, s.rescanNow)
			}
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		s.e.log.Warn("dispatch: pending deadlines could not be listed; trying again", "error", err)
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(loadRetry):
		}
	}
}

// loadRetry is the pause before listing the pending deadlines again.
const loadRetry = 2 * time.Second

// load lists the buckets in use and schedules the listing of each, one
// bucket's time before it is due: the buckets due soon are listed at once
// (by the timer), the others when their time comes near.
func (s *timeouts) load(ctx context.Context) error {
	buckets, err := s.e.store.Keys(ctx, indexScope(s.e.class))
	if err != nil {
		return fmt.Errorf("dispatch: list pending deadline buckets: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known == nil {
		s.known = map[string]struct{}{}
	}
	for _, b := range buckets {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil {
			continue
		}
		s.addLocked((n-1)*int64(DeadlineBucket), bucketPrefix+b, nil)
	}
	return nil
}

// loadBucket adds the deadlines of bucket n; it reports false when the
// store failed. A bucket whose time has passed and that holds nothing is
// dropped from the index.
func (s *timeouts) loadBucket(ctx context.Context, n int64) bool {
	keys, err := s.e.store.Keys(ctx, bucketScope(s.e.class, n))
	if err != nil {
		s.e.log.WarnContext(ctx, "dispatch: list deadlines", "bucket", n, "error", err)
		return false
	}
	if len(keys) == 0 && (n+1)*int64(DeadlineBucket) < s.clock.Now().UnixNano() {
		if err := s.e.store.Delete(ctx, indexScope(s.e.class), strconv.FormatInt(n, 10)); err != nil {
			s.e.log.WarnContext(ctx, "dispatch: drop empty deadline bucket", "bucket", n, "error", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		if due, ok := dueOf(k); ok {
			s.addLocked(due, k, nil)
		}
	}
	return true
}

// indexed reports whether bucket n must be entered in the index: the first
// time this engine records a deadline in it. An engine remembers a bounded
// number of buckets; entering one again is harmless.
func (s *timeouts) indexed(n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.buckets[n]; ok {
		return false
	}
	if s.buckets == nil || len(s.buckets) >= 1024 {
		s.buckets = map[int64]struct{}{}
	}
	s.buckets[n] = struct{}{}
	return true
}

func (s *timeouts) rescanNow() {
	s.mu.Lock()
	ctx, closed := s.ctx, s.closed
	s.mu.Unlock()
	if closed {
		return
	}
	if err := s.load(ctx); err != nil {
		s.e.log.Warn("dispatch: rescan of pending deadlines failed", "error", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.armLocked()
		s.scan = s.clock.AfterFunc(s.rescan, s.rescanNow)
	}
}

// armLocked sets the timer for the earliest known deadline.
func (s *timeouts) armLocked() {
	if !s.started || s.closed {
		return
	}
	for len(s.h) > 0 {
		if _, ok := s.known[s.h[0].key]; ok {
			break
		}
		heap.Pop(&s.h) // answered or fired
	}
	if len(s.h) == 0 {
		if s.timer != nil {
			s.timer.Stop()
			s.timer, s.armedAt = nil, 0
		}
		return
	}
	due := s.h[0].due
	if s.timer != nil && s.armedAt == due {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	wait := time.Duration(due - s.clock.Now().UnixNano())
	s.armedAt = due
	s.timer = s.clock.AfterFunc(max(wait, 0), s.fire)
}

// fire takes the deadlines that are due off the heap, sets the timer for
// the next one at once, and queues them for publishing, never waiting: up
// to workers goroutines publish the queue in due order and end when it is
// empty, so a slow publish holds up at most the deadlines behind it in
// the queue, the timer is never late for the next one, and nothing runs
// while nothing is due. A deadline whose publishing failed is tried again
// a second later. With one worker they are published in due order in the
// calling goroutine.
func (s *timeouts) fire() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.timer, s.armedAt = nil, 0
	now := s.clock.Now().UnixNano()
	n := len(s.queue)
	for len(s.h) > 0 && s.h[0].due <= now {
		x := heap.Pop(&s.h).(dueEntry)
		if _, ok := s.known[x.key]; ok {
			s.queue = append(s.queue, x)
		}
	}
	if s.workers <= 1 {
		due := s.queue[n:]
		s.queue = s.queue[:n]
		ctx := s.ctx
		s.firing.Add(1)
		s.mu.Unlock()
		defer s.firing.Done()
		for _, x := range due {
			s.done(x, s.e.fireDeadline(ctx, x.key, x.dl))
		}
		s.mu.Lock()
		s.armLocked()
		s.mu.Unlock()
		return
	}
	s.armLocked()
	for s.busy < s.workers && s.busy < len(s.queue) {
		s.busy++
		s.firing.Add(1)
		go s.publishQueue()
	}
	s.mu.Unlock()
}

// publishQueue publishes queued deadlines until the queue is empty.
func (s *timeouts) publishQueue() {
	defer s.firing.Done()
	s.mu.Lock()
	for len(s.queue) > 0 && !s.closed {
		x := s.queue[0]
		s.queue[0] = dueEntry{}
		s.queue = s.queue[1:]
		if len(s.queue) == 0 {
			s.queue = nil // let the backing array go
		}
		ctx := s.ctx
		s.mu.Unlock()
		ok := s.e.fireDeadline(ctx, x.key, x.dl)
		s.done(x, ok)
		s.mu.Lock()
	}
	s.busy--
	s.mu.Unlock()
}

// done records the end of firing x: forgotten, or back on the heap for a
// retry.
func (s *timeouts) done(x dueEntry, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, known := s.known[x.key]; !known {
		return
	}
	if ok || s.closed {
		delete(s.known, x.key)
		return
	}
	heap.Push(&s.h, dueEntry{due: s.clock.Now().Add(time.Second).UnixNano(), key: x.key, dl: x.dl})
	s.armLocked()
}

func (s *timeouts) stop() {
	s.mu.Lock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.scan != nil {
		s.scan.Stop()
	}
	if s.stopCtx != nil {
		s.stopCtx()
	}
	s.mu.Unlock()
	s.firing.Wait()
}

// fireDeadline publishes the timeout of the deadline stored under key into
// its run and removes the deadline. dl is the deadline as this engine
// recorded it; nil reads it from the store. The run's fence decides: a
// question answered meanwhile (on another replica) or a run that ended
// refuses the timeout, with a log line. It reports false when it must be
// tried again (the store or the bus failed).
func (e *Engine) fireDeadline(ctx context.Context, key string, dl *deadline) bool {
	if b, ok := strings.CutPrefix(key, bucketPrefix); ok {
		n, _ := strconv.ParseInt(b, 10, 64)
		return e.timers.loadBucket(ctx, n)
	}
	if dl == nil {
		raw, ok, err := e.store.Get(ctx, deadlineScope(e.class, key), key)
		if err != nil {
			e.log.WarnContext(ctx, "dispatch: read deadline", "deadline", key, "error", err)
			return false
		}
		if !ok {
			return true // fired or answered elsewhere
		}
		dl = &deadline{}
		if err := json.Unmarshal(raw, dl); err != nil || dl.Run == "" || dl.Request == "" || dl.EventID == "" {
			e.log.ErrorContext(ctx, "dispatch: deadline does not decode; removed", "deadline", key, "error", err)
			return e.removeDeadline(ctx, key)
		}
	}
	// A run that ended gets no timer or timeout after its end: its
	// teardown removes its deadlines, and this covers a teardown that
	// could not (another replica holding the deadline in memory, a store
	// that failed, a run ended before this version).
	run := store.RunKey{Class: e.class, Run: dl.Run}
	ended := false
	if r := e.cache.peek(run); r != nil && r.terminated.Load() {
		ended = true
	} else if _, ok, err := e.store.Marker(ctx, run, store.MarkerTerminal); err != nil {
		e.log.WarnContext(ctx, "dispatch: read the terminal marker of a deadline's run", "run_id", dl.Run, "error", err)
		return false
	} else {
		ended = ok
	}
	if ended {
		e.log.InfoContext(ctx, "dispatch: deadline of an ended run dropped", "run_id", dl.Run,
			"request_event_id", dl.Request, "event", dl.Event)
		return e.removeDeadline(ctx, key)
	}
	ev := newTimeout(*dl)
	data, err := event.Marshal(ev)
	if err != nil {
		e.log.ErrorContext(ctx, "dispatch: encode timeout event; deadline removed", "deadline", key, "error", err)
		return e.removeDeadline(ctx, key)
	}
	t := topic.Agent{Class: e.class, ID: dl.AgentID, Thread: dl.Thread, Display: dl.Display, Run: dl.Run}
	subj, err := t.Event(topic.Control, dl.Event, dl.EventID).Subject()
	if err != nil {
		e.log.ErrorContext(ctx, "dispatch: timeout subject; deadline removed", "deadline", key, "error", err)
		return e.removeDeadline(ctx, key)
	}
	// Its subject ends in its event id, derived from the request: stored
	// once however many replicas fire it, and however late.
	ack, err := e.bus.PublishNew(ctx, &bus.Msg{Subject: subj, Data: data}, dl.EventID)
	if err != nil {
		e.log.WarnContext(ctx, "dispatch: publish timeout event", "run_id", dl.Run, "error", err)
		return false
	}
	if !ack.Duplicate {
		late := e.timers.clock.Now().UnixNano() - dl.Due
		e.log.InfoContext(ctx, "dispatch: deadline passed; event published", "run_id", dl.Run,
			"request_event_id", dl.Request, "event", dl.Event, "event_id", dl.EventID, "late", time.Duration(late))
	}
	return e.removeDeadline(ctx, key)
}

func (e *Engine) removeDeadline(ctx context.Context, key string) bool {
	if err := e.store.Delete(ctx, deadlineScope(e.class, key), key); err != nil {
		e.log.WarnContext(ctx, "dispatch: remove deadline", "deadline", key, "error", err)
		return false
	}
	return true
}
