package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/saap-go/agent/store"
)

// Store is a store.Store kept in process memory. It is what tests and the
// agenttest harness use; a production deployment with more than one replica
// needs a shared store (NATS KV or Redis).
type Store struct {
	mu      sync.Mutex
	runs    map[store.RunKey]*memRun
	markers map[markerID]string
	threads map[store.Scope]map[string][]byte
	watches map[watchKey][]*memWatch
	status  memStatus // run status records (store.Statuses)
}

type watchKey struct{ class, name string }

// memWatch is a store.MarkerWatch of a Store: SetMarker calls fn.
type memWatch struct {
	m       *Store
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

// WatchMarker implements store.Watcher: fn is called by SetMarker, after
// the marker is set and before SetMarker returns.
func (m *Store) WatchMarker(ctx context.Context, class, name string, fn func(run string)) (store.MarkerWatch, error) {
	if class == "" || name == "" || fn == nil {
		return nil, fmt.Errorf("memory: WatchMarker needs a class, a name and a function (class %q, name %q)", class, name)
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
	o    store.Outcome
	done bool
}

type claimID struct{ step, key string }

type markerID struct {
	run  store.RunKey
	name string
}

// New returns an empty Store.
func New() *Store {
	return &Store{
		runs:    map[store.RunKey]*memRun{},
		markers: map[markerID]string{},
		threads: map[store.Scope]map[string][]byte{},
	}
}

var (
	_ store.Store = (*Store)(nil)
)

func (m *Store) run(k store.RunKey, create bool) *memRun {
	r := m.runs[k]
	if r == nil && create {
		r = &memRun{}
		m.runs[k] = r
	}
	return r
}

// Claim implements store.Store.
func (m *Store) Claim(ctx context.Context, run store.RunKey, req store.ClaimRequest) (store.ClaimResult, error) {
	if err := checkRun(run); err != nil {
		return store.ClaimResult{}, err
	}
	if req.Step == "" || req.Key == "" {
		return store.ClaimResult{}, fmt.Errorf("memory: claim needs a step and a key (step %q, key %q)", req.Step, req.Key)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.run(run, true)
	id := claimID{req.Step, req.Key}
	n := r.counters[req.Step]
	if c, ok := r.claims[id]; ok {
		if c.done {
			return store.ClaimResult{Status: store.Done, Outcome: clone(c.o), Count: n}, nil
		}
		return store.ClaimResult{Status: store.Pending, Count: n}, nil
	}
	if req.Max > 0 && n >= req.Max {
		return store.ClaimResult{Status: store.Limited, Count: n}, nil
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
	return store.ClaimResult{Status: store.Claimed, Count: n}, nil
}

// Complete implements store.Store.
func (m *Store) Complete(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.run(run, false)
	id := claimID{step, key}
	if r == nil {
		return fmt.Errorf("memory: claim %s/%s of run %s/%s: %w", step, key, run.Class, run.Run, store.ErrNotFound)
	}
	if _, ok := r.claims[id]; !ok {
		return fmt.Errorf("memory: claim %s/%s of run %s/%s: %w", step, key, run.Class, run.Run, store.ErrNotFound)
	}
	r.claims[id] = memClaim{o: clone(o), done: true}
	return nil
}

// Record implements store.Store. Unlike Complete, it keeps o's output buffers
// without copying them: the caller must not change them afterwards.
func (m *Store) Record(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) (store.ClaimResult, error) {
	if err := checkRun(run); err != nil {
		return store.ClaimResult{}, err
	}
	if step == "" || key == "" {
		return store.ClaimResult{}, fmt.Errorf("memory: record needs a step and a key (step %q, key %q)", step, key)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.run(run, true)
	id := claimID{step, key}
	if c, ok := r.claims[id]; ok && c.done {
		return store.ClaimResult{Status: store.Done, Outcome: clone(c.o)}, nil
	} else if r.claims == nil {
		r.claims = map[claimID]memClaim{}
	}
	// No counter: the step's claims count its executions (see Count).
	// The engine hands its encoded outputs over and never changes them:
	// keeping them without a copy saves one per output.
	r.claims[id] = memClaim{o: o, done: true}
	return store.ClaimResult{Status: store.Claimed}, nil
}

// clone copies the kept outputs, so that neither side's buffers are shared.
func clone(o store.Outcome) store.Outcome {
	if o.Outputs != nil {
		outs := make([]json.RawMessage, len(o.Outputs))
		for i, b := range o.Outputs {
			outs[i] = slices.Clone(b)
		}
		o.Outputs = outs
	}
	return o
}

// Count implements store.Store.
func (m *Store) Count(ctx context.Context, run store.RunKey, step string) (int64, error) {
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

// SetMarker implements store.Store.
func (m *Store) SetMarker(ctx context.Context, run store.RunKey, name, value string) (string, bool, error) {
	if err := checkRun(run); err != nil {
		return "", false, err
	}
	if name == "" {
		return "", false, fmt.Errorf("memory: marker of run %s/%s needs a name", run.Class, run.Run)
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

// Marker implements store.Store.
func (m *Store) Marker(ctx context.Context, run store.RunKey, name string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.markers[markerID{run, name}]
	return v, ok, nil
}

// scope returns the map of s; with create it makes it.
func (m *Store) scope(s store.Scope, create bool) map[string][]byte {
	switch s.Kind {
	case store.RunScope:
		r := m.run(store.RunKey{Class: s.Class, Run: s.ID}, create)
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

// Get implements store.Store.
func (m *Store) Get(ctx context.Context, s store.Scope, key string) ([]byte, bool, error) {
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

// Set implements store.Store.
func (m *Store) Set(ctx context.Context, s store.Scope, key string, value []byte) error {
	if err := checkScope(s, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.scope(s, true)[key] = slices.Clone(value)
	return nil
}

// SetMany implements BatchSetter.
func (m *Store) SetMany(ctx context.Context, s store.Scope, entries []store.Entry) error {
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

// Delete implements store.Store.
func (m *Store) Delete(ctx context.Context, s store.Scope, key string) error {
	if err := checkScope(s, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.scope(s, false), key)
	return nil
}

// Keys implements store.Store.
func (m *Store) Keys(ctx context.Context, s store.Scope) ([]string, error) {
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

// Incr implements store.Store.
func (m *Store) Incr(ctx context.Context, s store.Scope, key string, delta int64) (int64, error) {
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
			return 0, fmt.Errorf("memory: incr %s %q: %w", s.Kind, key, store.ErrNotInteger)
		}
	}
	n += delta
	sc[key] = strconv.AppendInt(nil, n, 10)
	return n, nil
}

// DeleteRun implements store.Store.
func (m *Store) DeleteRun(ctx context.Context, run store.RunKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.runs, run)
	return nil
}

func checkRun(run store.RunKey) error {
	if run.Class == "" || run.Run == "" {
		return fmt.Errorf("memory: run key needs a class and a run id (class %q, run %q)", run.Class, run.Run)
	}
	return nil
}

func checkScope(s store.Scope, key string) error {
	if s.Kind != store.RunScope && s.Kind != store.ThreadScope {
		return fmt.Errorf("memory: invalid scope kind %d", int(s.Kind))
	}
	if s.Class == "" || s.ID == "" {
		return fmt.Errorf("memory: %s scope needs a class and an id (class %q, id %q)", s.Kind, s.Class, s.ID)
	}
	if key == "" {
		return fmt.Errorf("memory: empty key in %s scope %s/%s", s.Kind, s.Class, s.ID)
	}
	return nil
}

// InProcess reports true: the store's calls cost no round trip.
func (m *Store) InProcess() bool { return true }
