package engine

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/store"
	"github.com/saap-go/agent/topic"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
)

// DefaultCacheSize bounds the runs whose history an engine keeps in memory,
// for every runner that does not choose (agent.WithCacheSize).
const DefaultCacheSize = 1000

// runCache is a bounded LRU of run histories. Nothing else per run
// lives in the process.
type runCache struct {
	mu   sync.Mutex
	max  int
	runs map[store.RunKey]*list.Element
	lru  list.List // front: most recently used; values are *runEntry
}

func newRunCache(max int) *runCache {
	return &runCache{max: max, runs: map[store.RunKey]*list.Element{}}
}

// get returns the entry of run, creating it.
func (c *runCache) get(run store.RunKey) *runEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.runs[run]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*runEntry)
	}
	r := &runEntry{key: run}
	c.runs[run] = c.lru.PushFront(r)
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.runs, old.Value.(*runEntry).key)
	}
	return r
}

// peek returns the entry of run if it is cached.
func (c *runCache) peek(run store.RunKey) *runEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.runs[run]; ok {
		return el.Value.(*runEntry)
	}
	return nil
}

// all returns the cached entries, most recently used first.
func (c *runCache) all() []*runEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*runEntry, 0, c.lru.Len())
	for el := c.lru.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(*runEntry))
	}
	return out
}

func (c *runCache) evict(run store.RunKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.runs[run]; ok {
		c.lru.Remove(el)
		delete(c.runs, run)
	}
}

// runEntry is the cached history of one run: its control events with their
// stream sequences, complete up to the high-water mark hw.
type runEntry struct {
	key store.RunKey
	// ident is the run's identity as recorded at its start, once known
	// here: events are checked against it without a store read.
	ident atomic.Pointer[runIdentity]

	mu     sync.Mutex
	filter string      // the run's control subject pattern
	t      topic.Agent // the topic of the first event admitted, with filter
	primed bool        // hw was set from the run's start sequence (or found unknown)
	hw     uint64      // every run event with seq ≤ hw is in events
	events []histEvent
	// Indexes of a long history (nil while the run has few events and
	// names, which named and indexOf find by scanning): wire name →
	// indexes into events in ascending seq, and event id → index.
	byName map[string][]int32
	ids    map[string]int32
	// The name index of a short history.
	nameKeys [8]string
	nameVals [8][]int32
	nNames   int

	// Inline storage for a short run's history, so that adding its events
	// allocates nothing: the first events, and the first index of each name
	// (capped one-element slices; a second index reallocates).
	evBuf   [8]histEvent
	idxBuf  [8]int32
	idxUsed int

	// terminated is set once this process published or received the run's
	// terminal event; the store's store.MarkerTerminal tells other replicas.
	terminated atomic.Bool
	// terminalStored is set once this process stored store.MarkerTerminal for the
	// run; markers are write-once, so teardown need not write it again.
	terminalStored atomic.Bool
	// termEpoch is the epoch of the terminal-marker watch under which this
	// process read the run's marker and found it unset (see termWatch).
	termEpoch atomic.Uint64
	// founded is set when this process recorded the run's identity: it
	// handled the run's first start. dirty is set once the run has state
	// in the store (see tracked), dirtyMarked once this process told the
	// founder so, and dirtyEpoch is the epoch of the dirty-marker watch
	// under which the run was founded.
	founded     atomic.Bool
	dirty       atomic.Bool
	dirtyMarked atomic.Bool
	dirtyEpoch  atomic.Uint64
	pubMu       sync.Mutex // orders publishing against terminal events
	// foreign is set once another replica told (MarkerDirty) that it
	// wrote the run's state: it may have recorded deadlines this process
	// does not know. deadlines are the keys of the deadlines this process
	// recorded for the run and that are still pending.
	foreign   atomic.Bool
	dlMu      sync.Mutex
	deadlines []string

	actMu  sync.Mutex
	active []*runCtx // contexts of running executions
	actBuf [2]*runCtx

	cfgMu     sync.Mutex
	cfgLoaded bool
	cfg       any
	cfgRaw    []byte // cfg as resolved or stored (the run context's _agent_config)

	// start is the latest StartEvent this process handled or read for the
	// run, and fields its public members: the run context's values that
	// the stream holds (see state).
	startMu     sync.Mutex
	start       event.Event
	startSeq    uint64
	startFields map[string]json.RawMessage

	// published holds the ids of the control events this process
	// published for the run (outputs it need not look for in the stream).
	published idSet

	// state is the status this process last recorded for the run, so
	// that running is written once, not per step.
	state atomic.Pointer[status.State]
	// statusDone is closed when the last status write queued for the run
	// has ended; statusGen counts writes, so that a queued write a later
	// one supersedes is skipped.
	statusMu   sync.Mutex
	statusDone chan struct{}
	statusGen  atomic.Uint64
	statusWait []queuedStatus // writes waiting for the status delay

	// seed is the start event's write of the run context while it is in
	// flight (see Engine.seed); nil once none is.
	seedMu sync.Mutex
	seed   *pendingWrite
}

// pendingWrite is a store write in flight: err is set before done closes.
type pendingWrite struct {
	done chan struct{}
	err  error
}

// waitSeed waits for the run context's start write in flight, if any, and
// returns its error.
func (r *runEntry) waitSeed(ctx context.Context) error {
	if done, err := r.seedResult(ctx.Done()); done {
		return err
	}
	return context.Cause(ctx)
}

// seedFailure returns the error of a run context start write that has
// failed, without waiting for one in flight.
func (r *runEntry) seedFailure() error {
	_, err := r.seedResult(alwaysReady)
	return err
}

// alwaysReady is a channel that is always ready.
var alwaysReady = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// seedResult returns the start write's error once it is done (or when
// there is none), and done false if stop is ready first; a write that is
// done wins over a ready stop.
func (r *runEntry) seedResult(stop <-chan struct{}) (done bool, err error) {
	r.seedMu.Lock()
	w := r.seed
	r.seedMu.Unlock()
	if w == nil {
		return true, nil
	}
	select {
	case <-w.done:
		return true, w.err
	default:
	}
	select {
	case <-w.done:
		return true, w.err
	case <-stop:
		return false, nil
	}
}

// dropFailedSeed forgets the start write in flight if it has failed.
func (r *runEntry) dropFailedSeed() {
	r.seedMu.Lock()
	defer r.seedMu.Unlock()
	if w := r.seed; w != nil {
		select {
		case <-w.done:
			if w.err != nil {
				r.seed = nil
			}
		default:
		}
	}
}

// terminate marks the run ended in this process and cancels the
// contexts of its running steps.
// addDeadline notes a deadline recorded for the run.
func (r *runEntry) addDeadline(key string) {
	r.dlMu.Lock()
	if !slices.Contains(r.deadlines, key) {
		r.deadlines = append(r.deadlines, key)
	}
	r.dlMu.Unlock()
}

// dropDeadline forgets a deadline that is no longer pending.
func (r *runEntry) dropDeadline(key string) {
	r.dlMu.Lock()
	r.deadlines = slices.DeleteFunc(r.deadlines, func(k string) bool { return k == key })
	r.dlMu.Unlock()
}

// takeDeadlines returns the run's pending deadlines and forgets them.
func (r *runEntry) takeDeadlines() []string {
	r.dlMu.Lock()
	defer r.dlMu.Unlock()
	d := r.deadlines
	r.deadlines = nil
	return d
}

func (r *runEntry) terminate() {
	r.terminated.Store(true)
	r.actMu.Lock()
	defer r.actMu.Unlock()
	for _, c := range r.active {
		c.end(ErrRunEnded)
	}
	r.active = r.active[:0]
}

// track makes c the context of executions: ctx, cancelled with ErrRunEnded
// when the run ends. Call r.untrack(c) when they finish.
func (r *runEntry) track(c *runCtx, ctx context.Context) {
	c.Context = ctx
	r.actMu.Lock()
	defer r.actMu.Unlock()
	if r.terminated.Load() {
		c.end(ErrRunEnded)
		return
	}
	if r.active == nil {
		r.active = r.actBuf[:0]
	}
	r.active = append(r.active, c)
}

func (r *runEntry) untrack(c *runCtx) {
	c.end(nil)
	r.actMu.Lock()
	defer r.actMu.Unlock()
	for i, a := range r.active {
		if a == c {
			r.active = append(r.active[:i], r.active[i+1:]...)
			break
		}
	}
}

// runCtx is the context steps see: its parent until the run ends or the
// executions return. The cancellable context behind it is made only when
// something waits on it (store.Done) or asks after its end, so a step that never
// does costs no allocation.
type runCtx struct {
	context.Context // the parent
	mu              sync.Mutex
	c               context.Context // nil until needed
	cancel          context.CancelCauseFunc
	ended           bool
	cause           error
}

// derived returns the cancellable context, made now if need be.
func (c *runCtx) derived() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		c.c, c.cancel = context.WithCancelCause(c.Context)
		if c.ended {
			c.cancel(c.cause)
		}
	}
	return c.c
}

// end cancels c with cause (nil: context.Canceled); the first end wins.
func (c *runCtx) end(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	c.ended, c.cause = true, cause
	if c.cancel != nil {
		c.cancel(cause)
	}
}

func (c *runCtx) Done() <-chan struct{} { return c.derived().Done() }

func (c *runCtx) Err() error {
	c.mu.Lock()
	d, ended := c.c, c.ended
	c.mu.Unlock()
	switch {
	case d != nil:
		return d.Err()
	case ended:
		return c.derived().Err()
	}
	return c.Context.Err()
}

func (c *runCtx) Value(key any) any {
	c.mu.Lock()
	d, ended := c.c, c.ended
	c.mu.Unlock()
	if d == nil && ended {
		d = c.derived() // so that context.Cause finds the run's cause
	}
	if d != nil {
		return d.Value(key)
	}
	return c.Context.Value(key)
}

type histEvent struct {
	seq uint64
	ev  event.Event
}

// add inserts ev at seq unless an event with the same id is known (the
// reference's store de-duplicates by event_id; the first copy wins).
func (r *runEntry) add(seq uint64, ev event.Event) {
	id := ev.EventBase().EventID
	if _, dup := r.indexOf(id); dup {
		return
	}
	name := event.Name(ev)
	i := len(r.events)
	if i > 0 && r.events[i-1].seq > seq {
		// Out of order (only when the stream lost the trigger): insert and
		// rebuild the name index.
		i, _ = slices.BinarySearchFunc(r.events, seq, func(h histEvent, s uint64) int { return cmpU64(h.seq, s) })
		r.events = slices.Insert(r.events, i, histEvent{seq, ev})
		r.reindex()
		return
	}
	if r.events == nil {
		r.events = r.evBuf[:0]
	}
	r.events = append(r.events, histEvent{seq, ev})
	if idx := r.named(name); idx != nil || r.idxUsed == len(r.idxBuf) {
		r.setNamed(name, append(idx, int32(i)))
	} else {
		k := r.idxUsed
		r.idxUsed++
		r.idxBuf[k] = int32(i)
		r.setNamed(name, r.idxBuf[k:k+1:k+1])
	}
	r.setIndex(id, int32(i))
}

func (r *runEntry) reindex() {
	r.byName, r.ids, r.nNames = nil, nil, 0
	for i, h := range r.events {
		n := event.Name(h.ev)
		r.setNamed(n, append(r.named(n), int32(i)))
		r.setIndex(h.ev.EventBase().EventID, int32(i))
	}
}

// named returns the indexes of the events named name, in ascending seq.
func (r *runEntry) named(name string) []int32 {
	if r.byName != nil {
		return r.byName[name]
	}
	for i := range r.nNames {
		if r.nameKeys[i] == name {
			return r.nameVals[i]
		}
	}
	return nil
}

func (r *runEntry) setNamed(name string, idx []int32) {
	if r.byName == nil {
		for i := range r.nNames {
			if r.nameKeys[i] == name {
				r.nameVals[i] = idx
				return
			}
		}
		if r.nNames < len(r.nameKeys) {
			r.nameKeys[r.nNames], r.nameVals[r.nNames] = name, idx
			r.nNames++
			return
		}
		r.byName = make(map[string][]int32, 2*len(r.nameKeys))
		for i := range r.nNames {
			r.byName[r.nameKeys[i]] = r.nameVals[i]
		}
	}
	r.byName[name] = idx
}

// indexOf returns the index of the event with id.
func (r *runEntry) indexOf(id string) (int32, bool) {
	if r.ids != nil {
		i, ok := r.ids[id]
		return i, ok
	}
	for i, h := range r.events {
		if h.ev.EventBase().EventID == id {
			return int32(i), true
		}
	}
	return 0, false
}

// setIndex records that the event with id is at index i, which r.events
// already holds. A short history needs no map: indexOf scans it.
func (r *runEntry) setIndex(id string, i int32) {
	if r.ids == nil {
		if len(r.events) <= len(r.evBuf) {
			return
		}
		r.ids = make(map[string]int32, 2*len(r.events))
		for j, h := range r.events {
			r.ids[h.ev.EventBase().EventID] = int32(j)
		}
	}
	r.ids[id] = i
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// load makes the history complete up to seq, the trigger's sequence, reading
// the run's control events from the stream after the high-water mark. The
// trigger itself is taken as decoded from its delivery. It holds r.mu.
func (e *Engine) load(ctx context.Context, r *runEntry, seq uint64, trigger event.Event) error {
	// Unprimed, the history is read from the stream's start: the filter's
	// subjects are the run's alone, so the server finds its first event
	// without reading the others.
	r.primed = true
	if r.filter == "" {
		return fmt.Errorf("dispatch: history of run %s read before its subjects are known", r.key.Run)
	}
	for r.hw < seq {
		if r.hw+1 == seq {
			// Nothing can sit between the history and the trigger.
			r.add(seq, trigger)
			r.hw = seq
			break
		}
		m, err := e.bus.NextMsg(ctx, e.stream, r.filter, r.hw+1)
		if errors.Is(err, bus.ErrNotFound) {
			break
		}
		if err != nil {
			return fmt.Errorf("dispatch: load history of run %s: %w", r.key.Run, err)
		}
		if m.Seq == seq {
			r.add(seq, trigger)
		} else if ev, err := event.Unmarshal(m.Data); err != nil {
			e.log.WarnContext(ctx, "dispatch: skipping an undecodable event in the run's history",
				"subject", m.Subject, "seq", m.Seq, "error", err)
		} else {
			r.add(m.Seq, ev)
		}
		if m.Seq <= r.hw { // a bus that does not honour seq: avoid looping
			return fmt.Errorf("dispatch: NextMsg(%d) returned seq %d", r.hw+1, m.Seq)
		}
		r.hw = m.Seq
	}
	// The trigger is part of its own snapshot even if the stream lost it.
	r.add(seq, trigger)
	r.hw = max(r.hw, seq)
	return nil
}

// addTrigger adds the trigger at seq without reading the stream: the
// high-water mark moves only if nothing can sit between it and seq, so the
// next load still reads any gap. It holds r.mu.
func (r *runEntry) addTrigger(seq uint64, trigger event.Event) {
	r.add(seq, trigger)
	if r.hw+1 == seq && r.primed {
		r.hw = seq
	}
}

// snapshot is the view of one evaluation: the run's events with seq ≤ upTo.
type snapshot struct {
	r        *runEntry
	upTo     uint64
	trigName string
	trigIdx  int32 // index of the trigger's (first) copy in r.events
}

// prime records the stream sequence of the run's StartEvent, where its
// history begins, unless the history is already known.
func (r *runEntry) prime(startSeq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.primed && r.hw == 0 && startSeq > 0 {
		r.hw = startSeq - 1
		r.primed = true
	}
}

func (r *runEntry) snapshot(upTo uint64, trigger event.Event) snapshot {
	return snapshot{r: r, upTo: upTo, trigName: event.Name(trigger), trigIdx: r.trigIndex(trigger)}
}

func (r *runEntry) trigIndex(trigger event.Event) int32 {
	i, _ := r.indexOf(trigger.EventBase().EventID)
	return i
}

// prefix returns the indexes of events named name with seq ≤ upTo.
func (s *snapshot) prefix(name string) []int32 {
	idx := s.r.named(name)
	if len(idx) == 0 || s.r.events[idx[len(idx)-1]].seq <= s.upTo {
		return idx
	}
	n, _ := slices.BinarySearchFunc(idx, s.upTo, func(i int32, seq uint64) int {
		if s.r.events[i].seq <= seq {
			return -1
		}
		return 1
	})
	return idx[:n]
}

// count returns the number of snapshot events whose name is one of names.
func (s *snapshot) count(names []string) int {
	n := 0
	for _, name := range names {
		n += len(s.prefix(name))
	}
	return n
}

// single binds one event: the trigger if it matches, else the latest match
// by stream sequence; nil if none.
func (s *snapshot) single(names []string) event.Event {
	best := int32(-1)
	for _, name := range names {
		p := s.prefix(name)
		if len(p) == 0 {
			continue
		}
		if name == s.trigName {
			return s.r.events[s.trigIdx].ev
		}
		if last := p[len(p)-1]; last > best {
			best = last
		}
	}
	if best < 0 {
		return nil
	}
	return s.r.events[best].ev
}

// list appends the matching events in stream order to dst.
func (s *snapshot) list(dst []event.Event, names []string) []event.Event {
	if len(names) == 1 {
		idx := s.prefix(names[0])
		if dst == nil && len(idx) > 0 {
			dst = make([]event.Event, 0, len(idx))
		}
		for _, i := range idx {
			dst = append(dst, s.r.events[i].ev)
		}
		return dst
	}
	var all []int32
	for _, name := range names {
		all = append(all, s.prefix(name)...)
	}
	slices.Sort(all) // indexes are in stream order
	for _, i := range all {
		dst = append(dst, s.r.events[i].ev)
	}
	return dst
}

// setFilter sets the run's control subject pattern from the topic of an
// event admitted into the run: agent.<class>.<agent id>.<thread>.*.<run>.
// control_event.*.*. The literal tokens before the run make the server's
// lookup of the run's events independent of the stream's size (a leading
// wildcard would not be). It holds r.mu.
func (r *runEntry) setFilter(t topic.Agent) error {
	if r.filter != "" {
		return nil
	}
	f, err := topic.AgentPattern{Class: t.Class, ID: t.ID, Thread: t.Thread, Run: t.Run, Type: topic.Control}.Subject()
	if err != nil {
		return fmt.Errorf("dispatch: run %q: %w", t.Run, err)
	}
	r.filter, r.t = f, t
	return nil
}

// loadTail makes the history complete up to the stream's last event of the
// run, past the trigger: for a redelivery, which must see whether an
// earlier handling published a step's outputs. It holds r.mu.
func (e *Engine) loadTail(ctx context.Context, r *runEntry, seq uint64, trigger event.Event) error {
	if err := e.load(ctx, r, seq, trigger); err != nil {
		return err
	}
	for {
		m, err := e.bus.NextMsg(ctx, e.stream, r.filter, r.hw+1)
		if errors.Is(err, bus.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("dispatch: load history of run %s: %w", r.key.Run, err)
		}
		if m.Seq <= r.hw {
			return fmt.Errorf("dispatch: NextMsg(%d) returned seq %d", r.hw+1, m.Seq)
		}
		if ev, err := event.Unmarshal(m.Data); err != nil {
			e.log.WarnContext(ctx, "dispatch: skipping an undecodable event in the run's history",
				"subject", m.Subject, "seq", m.Seq, "error", err)
		} else {
			r.add(m.Seq, ev)
		}
		r.hw = m.Seq
	}
}

// setStart records ev, a StartEvent at seq, as the run's latest start.
func (r *runEntry) setStart(seq uint64, ev event.Event) {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	if r.start == nil || seq >= r.startSeq {
		r.start, r.startSeq, r.startFields = ev, seq, nil
	}
}

// idSet is a small set of event ids: a run publishes few control events
// from one process.
type idSet struct {
	mu  sync.Mutex
	ids []string
}

func (s *idSet) add(id string) {
	s.mu.Lock()
	s.ids = append(s.ids, id)
	s.mu.Unlock()
}

func (s *idSet) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.ids, id)
}
