package memory

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"

	"github.com/saap-go/agent/store"
)

// memStatus holds a Store's status records. Nothing expires: the
// memory store serves tests and single processes.
type memStatus struct {
	mu      sync.Mutex
	records map[store.RunKey][]byte
	threads map[store.RunKey]string
}

// PutStatus implements store.Statuses.
func (m *Store) PutStatus(ctx context.Context, run store.RunKey, thread string, value []byte) error {
	if err := checkRun(run); err != nil {
		return err
	}
	if thread == "" {
		return errors.New("memory: a status record needs a thread")
	}
	ms := &m.status
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.records == nil {
		ms.records, ms.threads = map[store.RunKey][]byte{}, map[store.RunKey]string{}
	}
	ms.records[run] = value // kept, as Record keeps outputs: the engine never changes it
	ms.threads[run] = thread
	return nil
}

// Status implements store.Statuses.
func (m *Store) Status(ctx context.Context, run store.RunKey) ([]byte, bool, error) {
	if err := checkRun(run); err != nil {
		return nil, false, err
	}
	ms := &m.status
	ms.mu.Lock()
	defer ms.mu.Unlock()
	v, ok := ms.records[run]
	return slices.Clone(v), ok, nil
}

// ListStatus implements store.Statuses.
func (m *Store) ListStatus(ctx context.Context, class, thread, after string, limit int) ([]store.StatusEntry, error) {
	if class == "" {
		return nil, errors.New("memory: listing status records needs a class")
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
	out := make([]store.StatusEntry, len(runs))
	for i, r := range runs {
		out[i] = store.StatusEntry{Run: r, Value: slices.Clone(ms.records[store.RunKey{Class: class, Run: r}])}
	}
	return out, nil
}
