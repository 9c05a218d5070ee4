package gateway

import (
	"context"
	"slices"
	"sync"
)

// Threads keeps which users belong to which thread. The gateway checks it
// before it publishes into a thread or streams a thread's events, so a user
// only ever sees and addresses conversations they are a member of.
//
// Implementations must be safe for concurrent use. NewMemoryThreads is the
// default; a deployment with several gateway replicas plugs in a shared
// store (a database table, a Redis set per thread, ...).
type Threads interface {
	// Create creates thread with the given members unless it exists. It
	// reports whether it created the thread; an existing thread is left
	// as it is. Creation must be atomic: of two concurrent calls for the
	// same thread, exactly one reports true.
	Create(ctx context.Context, thread string, members ...string) (created bool, err error)
	// IsMember reports whether user belongs to thread; false for a thread
	// that does not exist.
	IsMember(ctx context.Context, thread, user string) (bool, error)
	// AddMember adds user to an existing or new thread.
	AddMember(ctx context.Context, thread, user string) error
}

// MemoryThreads is the in-memory Threads store. Memberships live as long as
// the process; the zero value is not usable, call NewMemoryThreads.
type MemoryThreads struct {
	mu      sync.RWMutex
	members map[string][]string
}

// NewMemoryThreads returns an empty in-memory membership store.
func NewMemoryThreads() *MemoryThreads {
	return &MemoryThreads{members: make(map[string][]string)}
}

// Create implements Threads.
func (m *MemoryThreads) Create(_ context.Context, thread string, members ...string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.members[thread]; ok {
		return false, nil
	}
	m.members[thread] = slices.Clone(members)
	return true, nil
}

// IsMember implements Threads.
func (m *MemoryThreads) IsMember(_ context.Context, thread, user string) (bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Contains(m.members[thread], user), nil
}

// AddMember implements Threads.
func (m *MemoryThreads) AddMember(_ context.Context, thread, user string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.members[thread], user) {
		m.members[thread] = append(m.members[thread], user)
	}
	return nil
}
