package agent_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"
)

// statusFailing is a store whose status reads fail while fail is set.
type statusFailing struct {
	store.Store
	fail atomic.Bool
}

var errStoreDown = errors.New("store down")

func (s *statusFailing) Status(ctx context.Context, run store.RunKey) ([]byte, bool, error) {
	if s.fail.Load() {
		return nil, false, errStoreDown
	}
	return s.Store.Status(ctx, run)
}

// Health names the part at fault: the runner before Run and after it, the
// store while it does not answer.
func TestRunnerHealth(t *testing.T) {
	st := &statusFailing{Store: memstore.New()}
	r, err := agent.New(&linear{class: uniqueClass("Health")}, agent.WithBus(memory.New(memory.Options{})),
		agent.WithStore(st), agent.Standalone(), quiet(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	component := func(err error) string {
		var he *agent.HealthError
		if !errors.As(err, &he) {
			t.Fatalf("Health: %v, want a *HealthError", err)
		}
		return he.Component
	}
	if err := r.Health(ctx); !errors.Is(err, agent.ErrNotRunning) || component(err) != "runner" {
		t.Errorf("Health before Run: %v, want ErrNotRunning from the runner", err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	select {
	case <-r.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	if err := r.Health(ctx); err != nil {
		t.Errorf("Health when running: %v", err)
	}
	st.fail.Store(true)
	if err := r.Health(ctx); !errors.Is(err, errStoreDown) || component(err) != "store" {
		t.Errorf("Health with the store down: %v, want the store's error", err)
	}
	st.fail.Store(false)
	if err := r.Health(ctx); err != nil {
		t.Errorf("Health with the store back: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := r.Health(ctx); component(err) != "runner" || err.Error() != "agent: runner: stopped" {
		t.Errorf("Health after Run: %v, want the runner stopped", err)
	}
}
