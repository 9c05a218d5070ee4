package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	core "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/saap-go/agent/gateway"
)

// task is what the adapter keeps about an A2A task: who owns it, which
// run it is, and the HITL question it waits on, if any.
type task struct {
	owner   string
	class   string
	agentID string
	thread  string
	display string
	run     string
	// question is the event id of the open HITL request; response the
	// name of the event that answers it; hitlType its hitl_type.
	question string
	response string
	hitlType string
}

// tasks is the in-memory table of tasks. The a2asrv handler keeps the
// tasks themselves; this table says whose they are.
type tasks struct {
	mu sync.Mutex
	m  map[core.TaskID]*task
}

// maxTasks bounds the table; beyond it the oldest half is forgotten (their
// ids then answer "task not found").
const maxTasks = 1 << 16

func newTasks() *tasks { return &tasks{m: make(map[core.TaskID]*task)} }

func (t *tasks) get(id core.TaskID) (task, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	x, ok := t.m[id]
	if !ok {
		return task{}, false
	}
	return *x, true
}

// put records x for id unless id is already recorded for another owner.
func (t *tasks) put(id core.TaskID, x task) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.m[id]; ok && old.owner != x.owner {
		return false
	}
	if len(t.m) >= maxTasks {
		n := 0
		for k := range t.m {
			delete(t.m, k)
			if n++; n >= maxTasks/2 {
				break
			}
		}
	}
	t.m[id] = &x
	return true
}

// guard is the call interceptor that makes every task private to the
// user who created it: a task id of another user, or of another agent
// than the URL's, is "not found", exactly like an id that never existed,
// so a caller cannot probe which ids exist.
type guard struct {
	a2asrv.PassthroughCallInterceptor
	s *Server
}

// Before implements a2asrv.CallInterceptor.
func (g *guard) Before(ctx context.Context, call *a2asrv.CallContext, req *a2asrv.Request) (context.Context, error) {
	user, ok := gateway.UserFrom(ctx)
	if !ok {
		return ctx, fmt.Errorf("a2a: unauthenticated call: %w", core.ErrInvalidRequest)
	}
	call.User = &a2asrv.AuthenticatedUser{UserName: user.ID}
	tg, _ := ctx.Value(targetKey{}).(target)
	var id core.TaskID
	switch p := req.Payload.(type) {
	case *core.TaskQueryParams:
		id = p.ID
	case *core.TaskIDParams:
		id = p.ID
	case *core.MessageSendParams:
		if p.Message == nil || p.Message.TaskID == "" {
			return ctx, nil
		}
		id = p.Message.TaskID
	case *core.GetTaskPushConfigParams:
		id = p.TaskID
	case *core.ListTaskPushConfigParams:
		id = p.TaskID
	case *core.DeleteTaskPushConfigParams:
		id = p.TaskID
	case *core.TaskPushConfig:
		id = p.TaskID
	default:
		return ctx, nil
	}
	x, ok := g.s.tasks.get(id)
	if !ok || x.owner != user.ID || x.class != tg.class || x.agentID != tg.id {
		return ctx, fmt.Errorf("task %q: %w", id, core.ErrTaskNotFound)
	}
	return ctx, nil
}

// taskStore keeps the a2asrv tasks as their JSON: one encoding per save
// and one decoding per read isolate the stored task from the handler's
// copy, at less cost than the SDK's in-memory store, which copies through
// gob on both.
type taskStore struct {
	mu sync.RWMutex
	m  map[core.TaskID][]byte
}

func newTaskStore() *taskStore { return &taskStore{m: make(map[core.TaskID][]byte)} }

// Save implements a2asrv.TaskStore.
func (s *taskStore) Save(_ context.Context, t *core.Task) error {
	if t == nil || t.ID == "" || t.ContextID == "" {
		return fmt.Errorf("a2a: task without id or context id: %w", core.ErrInvalidParams)
	}
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("a2a: encode task %s: %w", t.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[t.ID]; !ok && len(s.m) >= maxTasks {
		n := 0
		for k := range s.m {
			delete(s.m, k)
			if n++; n >= maxTasks/2 {
				break
			}
		}
	}
	s.m[t.ID] = data
	return nil
}

// Get implements a2asrv.TaskStore.
func (s *taskStore) Get(_ context.Context, id core.TaskID) (*core.Task, error) {
	s.mu.RLock()
	data, ok := s.m[id]
	s.mu.RUnlock()
	if !ok {
		return nil, core.ErrTaskNotFound
	}
	var t core.Task
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("a2a: decode task %s: %w", id, err)
	}
	return &t, nil
}
