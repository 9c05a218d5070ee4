package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
)

// storeRef holds the store a running Runner keeps its runs in.
type storeRef struct{ s store.Store }

// ErrNotRunning is returned by the run-status methods of a Runner that is
// not running yet.
var ErrNotRunning = errors.New("agent: the runner is not running")

// RunStatus returns the status of run, an id of a run of the runner's
// class, as its store records it: pending, running, waiting (with the open
// question and its deadline), completed, failed (with the exception's
// message), compensating or compensated. A run without a record is an
// error wrapping status.ErrNotFound. It fails with ErrNotRunning before
// Ready.
func (r *Runner) RunStatus(ctx context.Context, run string) (status.Record, error) {
	ref := r.store.Load()
	if ref == nil {
		return status.Record{}, ErrNotRunning
	}
	return status.Read(ctx, ref.s, r.class, run)
}

// ListRuns lists the runs of the runner's class that q selects (by thread
// and state), one page at a time. It fails with ErrNotRunning before
// Ready.
func (r *Runner) ListRuns(ctx context.Context, q status.Query) (status.Page, error) {
	ref := r.store.Load()
	if ref == nil {
		return status.Page{}, ErrNotRunning
	}
	return status.List(ctx, ref.s, r.class, q)
}

// serveStatus answers the class's run-status requests on the bus (any
// replica answers; see status.Serve) while the runner runs.
func (r *Runner) serveStatus(ctx context.Context, res *resources, b bus.Bus, s store.Store) error {
	r.store.Store(&storeRef{s: s})
	if _, ok := s.(store.Statuses); !ok {
		r.log.Info("agent: the store keeps no run status; status requests go unanswered", "store", fmt.Sprintf("%T", s))
		return nil
	}
	sub, err := status.Serve(ctx, b, s, r.class, r.log)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	res.add(sub.Unsubscribe)
	return nil
}
