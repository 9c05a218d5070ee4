package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
)

// storeRef holds the store a running Runner keeps its runs in, and its bus.
type storeRef struct {
	s store.Store
	b bus.Bus
}

// ErrNotRunning is returned by the run-status methods of a Runner that is
// not running yet.
var ErrNotRunning = errors.New("agent: the runner is not running")

// RunStatus returns the status of run, an id of a run of the runner's
// class, as its store records it: pending, running, waiting (with the open
// question and its deadline), completed, failed (with the exception's
// message), compensating, compensated or cancelled. A run without a record is an
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

// CancelRun asks run, an id of a run of the runner's class, to stop: it
// publishes a RunCancelRequestedEvent on the run's control subjects, which
// any replica of the class acts on. The run's running steps see their
// context cancelled (its cause step.ErrRunEnded), no step of it starts
// after, the compensations of its completed steps run, and it ends with a
// RunCancelledEvent (a StopEvent) and the status cancelled. CancelRun
// returns the run's status as it was, once the request is stored, without
// waiting for the run to stop. A run that has ended is an error wrapping
// status.ErrEnded, one without a record an error wrapping
// status.ErrNotFound. It fails with ErrNotRunning before Ready.
func (r *Runner) CancelRun(ctx context.Context, run, reason string) (status.Record, error) {
	ref := r.store.Load()
	if ref == nil {
		return status.Record{}, ErrNotRunning
	}
	if err := status.CheckCancel(reason, ""); err != nil {
		return status.Record{}, fmt.Errorf("agent: cancel run %s: %w", run, err)
	}
	st, err := status.Read(ctx, ref.s, r.class, run)
	if err != nil {
		return st, err
	}
	if st.State.Ended() {
		return st, fmt.Errorf("%w: run %s is %s", status.ErrEnded, run, st.State)
	}
	_, err = status.PublishCancel(ctx, ref.b, st, reason, "", nil)
	return st, err
}

// serveStatus answers the class's run-status requests on the bus (any
// replica answers; see status.Serve) while the runner runs.
func (r *Runner) serveStatus(ctx context.Context, res *resources, b bus.Bus, s store.Store) error {
	r.store.Store(&storeRef{s: s, b: b})
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
