package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
)

// MemoryStore is a Store kept in process memory. It is what tests and the
// agenttest harness use; a production deployment with more than one replica
// needs a shared store (NATS KV or Redis).
type MemoryStore struct {
	mu      sync.Mutex
	runs    map[RunKey]*memRun
	markers map[markerID]string
	threads map[Scope]map[string][]byte
	watches map[watchKey][]*memWatch
	status  memStatus // run status records (StatusStore)
}

type watchKey struct{ class, name string }

// memWatch is a MarkerWatch of a MemoryStore: SetMarker calls fn.
type memWatch struct {
	m       *MemoryStore
	k       watchKey
	mu      sync.Mutex // held while fn runs: one call at a time, none after Stop
	fn      func(run string)
	stopped bool
}

func (w *memWatch) Live() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.stopped
}

func (w *memWatch) Stop() {
	w.m.mu.Lock()
	ws := w.m.watches[w.k]
	for i, x := range ws {
		if x == w {
			w.m.watches[w.k] = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	w.m.mu.Unlock()
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
}

func (w *memWatch) call(run string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.fn(run)
	}
}

// WatchMarker implements MarkerWatcher: fn is called by SetMarker, after
// the marker is set and before SetMarker returns.
func (m *MemoryStore) WatchMarker(ctx context.Context, class, name string, fn func(run string)) (MarkerWatch, error) {
	if class == "" || name == "" || fn == nil {
		return nil, fmt.Errorf("dispatch: WatchMarker needs a class, a name and a function (class %q, name %q)", class, name)
	}
	w := &memWatch{m: m, k: watchKey{class, name}, fn: fn}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.watches == nil {
		m.watches = map[watchKey][]*memWatch{}
	}
	m.watches[w.k] = append(m.watches[w.k], w)
	return w, nil
}

type memRun struct {
	claims   map[claimID]memClaim
	counters map[string]int64
	context  map[string][]byte
}

type memClaim struct {
	o    Outcome
	done bool
}

type claimID struct{ step, key string }

type markerID struct {
	run  RunKey
	name string
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{
		runs:    map[RunKey]*memRun{},
		markers: map[markerID]string{},
		threads: map[Scope]map[string][]byte{},
	}
}

var (
	_ Store         = (*MemoryStore)(nil)
	_ MarkerWatcher = (*MemoryStore)(nil)
)

func (m *MemoryStore) run(k RunKey, create bool) *memRun {
	r := m.runs[k]
	if r == nil && create {
		r = &memRun{}
		m.runs[k] = r
	}
	return r
}

// Claim implements Store.
func (m *MemoryStore) Claim(ctx context.Context, run RunKey, req ClaimRequest) (ClaimResult, error) {
	if err := checkRun(run); err != nil {
		return ClaimResult{}, err
	}
	if req.Step == "" || req.Key == "" {
		return ClaimResult{}, fmt.Errorf("dispatch: claim needs a step and a key (step %q, key %q)", req.Step, req.Key)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.run(run, true)
	id := claimID{req.Step, req.Key}
	n := r.counters[req.Step]
	if c, ok := r.claims[id]; ok {
		if c.done {
			return ClaimResult{Status: Done, Outcome: c.o.clone(), Count: n}, nil
		}
		return ClaimResult{Status: Pending, Count: n}, nil
	}
	if req.Max > 0 && n >= req.Max {
		return ClaimResult{Status: Limited, Count: n}, nil
	}
	if r.claims == nil {
		r.claims = map[claimID]memClaim{}
	}
	if r.counters == nil {
		r.counters = map[string]int64{}
	}
	r.claims[id] = memClaim{}
	n++
	r.counters[req.Step] = n
	return ClaimResult{Status: Claimed, Count: n}, nil
}

// Complete implements Store.
func (m *MemoryStore) Complete(ctx context.Context, run RunKey, step, key string, o Outcome) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.run(run, false)
	id := claimID{step, key}
	if r == nil {
		return fmt.Errorf("dispatch: claim %s/%s of run %s/%s: %w", step, key, run.Class, run.Run, ErrNotFound)
	}
	if _, ok := r.claims[id]; !ok {
		return fmt.Errorf("dispatch: claim %s/%s of run %s/%s: %w", step, key, run.Class, run.Run, ErrNotFound)
	}
	r.claims[id] = memClaim{o: o.clone(), done: true}
	return nil
}

// Record implements Store. Unlike Complete, it keeps o's output buffers
// without copying them: the caller must not change them afterwards.
func (m *MemoryStore) Record(ctx context.Context, run RunKey, step, key string, o Outcome) (ClaimResult, error) {
	if err := checkRun(run); err != nil {
		return ClaimResult{}, err
	}
	if step == "" || key == "" {
		return ClaimResult{}, fmt.Errorf("dispatch: record needs a step and a key (step %q, key %q)", step, key)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.run(run, true)
	id := claimID{step, key}
	if c, ok := r.claims[id]; ok && c.done {
		return ClaimResult{Status: Done, Outcome: c.o.clone()}, nil
	} else if r.claims == nil {
		r.claims = map[claimID]memClaim{}
	}
	// No counter: the step's claims count its executions (see Count).
	// The engine hands its encoded outputs over and never changes them:
	// keeping them without a copy saves one per output.
	r.claims[id] = memClaim{o: o, done: true}
	return ClaimResult{Status: Claimed}, nil
}

// clone copies the kept outputs, so that neither side's buffers are shared.
func (o Outcome) clone() Outcome {
	if o.Outputs != nil {
		outs := make([]json.RawMessage, len(o.Outputs))
		for i, b := range o.Outputs {
			outs[i] = slices.Clone(b)
		}
		o.Outputs = outs
	}
	return o
}

// Count implements Store.
func (m *MemoryStore) Count(ctx context.Context, run RunKey, step string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.run(run, false)
	if r == nil {
		return 0, nil
	}
	// A limited step's counter is its count; Record writes no counter,
	// but every execution it or Claim counted has a claim.
	var claims int64
	for id := range r.claims {
		if id.step == step {
			claims++
		}
	}
	return max(r.counters[step], claims), nil
}

// SetMarker implements Store.
func (m *MemoryStore) SetMarker(ctx context.Context, run RunKey, name, value string) (string, bool, error) {
	if err := checkRun(run); err != nil {
		return "", false, err
	}
	if name == "" {
		return "", false, fmt.Errorf("dispatch: marker of run %s/%s needs a name", run.Class, run.Run)
	}
	m.mu.Lock()
	if v, ok := m.markers[markerID{run, name}]; ok {
		m.mu.Unlock()
		return v, false, nil
	}
	m.markers[markerID{run, name}] = value
	ws := m.watches[watchKey{run.Class, name}]
	m.mu.Unlock()
	for _, w := range ws {
		w.call(run.Run)
	}
	return value, true, nil
}

// Marker implements Store.
func (m *MemoryStore) Marker(ctx context.Context, run RunKey, name string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.markers[markerID{run, name}]
	return v, ok, nil
}

// scope returns the map of s; with create it makes it.
func (m *MemoryStore) scope(s Scope, create bool) map[string][]byte {
	switch s.Kind {
	case RunScope:
		r := m.run(RunKey{s.Class, s.ID}, create)
		if r == nil {
			return nil
		}
		if r.context == nil && create {
			r.context = map[string][]byte{}
		}
		return r.context
	default:
		t := m.threads[s]
		if t == nil && create {
			t = map[string][]byte{}
			m.threads[s] = t
		}
		return t
	}
}

// Get implements Store.
func (m *MemoryStore) Get(ctx context.Context, s Scope, key string) ([]byte, bool, error) {
	if err := checkScope(s, key); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.scope(s, false)[key]
	if !ok {
		return nil, false, nil
	}
	return slices.Clone(v), true, nil
}

// Set implements Store.
func (m *MemoryStore) Set(ctx context.Context, s Scope, key string, value []byte) error {
	if err := checkScope(s, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.scope(s, true)[key] = slices.Clone(value)
	return nil
}

// SetMany implements BatchSetter.
func (m *MemoryStore) SetMany(ctx context.Context, s Scope, entries []Entry) error {
	for _, en := range entries {
		if err := checkScope(s, en.Key); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	sc := m.scope(s, true)
	for _, en := range entries {
		sc[en.Key] = slices.Clone(en.Value)
	}
	return nil
}

// Delete implements Store.
func (m *MemoryStore) Delete(ctx context.Context, s Scope, key string) error {
	if err := checkScope(s, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.scope(s, false), key)
	return nil
}

// Keys implements Store.
func (m *MemoryStore) Keys(ctx context.Context, s Scope) ([]string, error) {
	if err := checkScope(s, "-"); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	sc := m.scope(s, false)
	keys := make([]string, 0, len(sc))
	for k := range sc {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys, nil
}

// Incr implements Store.
func (m *MemoryStore) Incr(ctx context.Context, s Scope, key string, delta int64) (int64, error) {
	if err := checkScope(s, key); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	sc := m.scope(s, true)
	var n int64
	if v, ok := sc[key]; ok {
		var err error
		if n, err = strconv.ParseInt(string(v), 10, 64); err != nil {
			return 0, fmt.Errorf("dispatch: incr %s %q: %w", s.Kind, key, ErrNotInteger)
		}
	}
	n += delta
	sc[key] = strconv.AppendInt(nil, n, 10)
	return n, nil
}

// DeleteRun implements Store.
func (m *MemoryStore) DeleteRun(ctx context.Context, run RunKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.runs, run)
	return nil
}

func checkRun(run RunKey) error {
	if run.Class == "" || run.Run == "" {
		return fmt.Errorf("dispatch: run key needs a class and a run id (class %q, run %q)", run.Class, run.Run)
	}
	return nil
}

func checkScope(s Scope, key string) error {
	if s.Kind != RunScope && s.Kind != ThreadScope {
		return fmt.Errorf("dispatch: invalid scope kind %d", int(s.Kind))
	}
	if s.Class == "" || s.ID == "" {
		return fmt.Errorf("dispatch: %s scope needs a class and an id (class %q, id %q)", s.Kind, s.Class, s.ID)
	}
	if key == "" {
		return fmt.Errorf("dispatch: empty key in %s scope %s/%s", s.Kind, s.Class, s.ID)
	}
	return nil
}
