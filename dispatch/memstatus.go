package dispatch

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
)

// memStatus holds a MemoryStore's status records. Nothing expires: the
// memory store serves tests and single processes.
type memStatus struct {
	mu      sync.Mutex
	records map[RunKey][]byte
	threads map[RunKey]string
}

var _ StatusStore = (*MemoryStore)(nil)

// PutStatus implements StatusStore.
func (m *MemoryStore) PutStatus(ctx context.Context, run RunKey, thread string, value []byte) error {
	if err := checkRun(run); err != nil {
		return err
	}
	if thread == "" {
		return errors.New("dispatch: a status record needs a thread")
	}
	ms := &m.status
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.records == nil {
		ms.records, ms.threads = map[RunKey][]byte{}, map[RunKey]string{}
	}
	ms.records[run] = value // kept, as Record keeps outputs: the engine never changes it
	ms.threads[run] = thread
	return nil
}

// Status implements StatusStore.
func (m *MemoryStore) Status(ctx context.Context, run RunKey) ([]byte, bool, error) {
	if err := checkRun(run); err != nil {
		return nil, false, err
	}
	ms := &m.status
	ms.mu.Lock()
	defer ms.mu.Unlock()
	v, ok := ms.records[run]
	return slices.Clone(v), ok, nil
}

// ListStatus implements StatusStore.
func (m *MemoryStore) ListStatus(ctx context.Context, class, thread, after string, limit int) ([]StatusEntry, error) {
	if class == "" {
		return nil, errors.New("dispatch: listing status records needs a class")
	}
	ms := &m.status
	ms.mu.Lock()
	defer ms.mu.Unlock()
	var runs []string
	for k := range ms.records {
		if k.Class == class && k.Run > after && (thread == "" || ms.threads[k] == thread) {
			runs = append(runs, k.Run)
		}
	}
	sort.Strings(runs)
	if limit > 0 && len(runs) > limit {
		runs = runs[:limit]
	}
	out := make([]StatusEntry, len(runs))
	for i, r := range runs {
		out[i] = StatusEntry{Run: r, Value: slices.Clone(ms.records[RunKey{Class: class, Run: r}])}
	}
	return out, nil
}
