package engine

import (
	"context"
	"fmt"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/topic"
)

// Cancellation. A RunCancelRequestedEvent on a run's control subject is
// fenced like any event of the run (agent id and thread); for a run that
// has not ended, the engine publishes the run's RunCancelledEvent, a
// StopEvent, whose id is derived from the run alone: however many
// requests come, from however many replicas, the stream keeps one. Its
// publish sets the terminal marker, so the same mechanism that keeps
// steps from starting after any terminal event keeps them from starting
// after a cancel, and cancels the contexts of the run's running steps:
// here at once, on other replicas through their watch of the terminal
// markers. The RunCancelledEvent's handling (finish) runs the
// compensations of the completed steps and records the run as cancelled.

// ErrEnded is returned by Cancel for a run that has ended already.
var ErrEnded = status.ErrEnded

// cancelRun handles a RunCancelRequestedEvent of a run that has not ended,
// with its identity id (nil: no start recorded one).
func (e *Engine) cancelRun(ctx context.Context, r *runEntry, t topic.Agent, ev event.Event, id *runIdentity) error {
	if id == nil {
		return refuse("run %s has no recorded identity: there is no run to cancel", t.Run)
	}
	req, ok := ev.(*event.RunCancelRequestedEvent)
	if !ok {
		return refuse("cancel request of run %s is a %T, not a RunCancelRequestedEvent", t.Run, ev)
	}
	if err := status.CheckCancel(req.Reason, req.RequestedBy); err != nil {
		return refuse("cancel request of run %s: %v", t.Run, err)
	}
	b := bindingOf(e.class, t.Run, "", []string{"cancel"})
	b.secret = id.secret
	stop := &event.RunCancelledEvent{Reason: req.Reason, RequestedBy: req.RequestedBy, RequestEventID: req.EventID}
	stop.EventID = b.id("cancelled", 0)
	e.log.InfoContext(ctx, "dispatch: cancelling the run", "run_id", t.Run, "requested_by", req.RequestedBy, "reason", req.Reason)
	if _, err := e.publish(ctx, r, t, stop, origin{}); err != nil {
		return err
	}
	return nil
}

// Cancel asks run to stop: it publishes a RunCancelRequestedEvent on the
// run's control subject, addressed from the run's status record, and
// returns that record. Any replica of the class acts on it. A run that has
// ended is an error wrapping ErrEnded; one without a status record, one
// wrapping status.ErrNotFound. Cancel returns once the request is stored
// in the stream, before the run has stopped: its status turns cancelled
// when it has.
func (e *Engine) Cancel(ctx context.Context, run, reason, requestedBy string) (status.Record, error) {
	st, err := e.Status(ctx, run)
	if err != nil {
		return st, err
	}
	if st.State.Ended() {
		return st, fmt.Errorf("%w: run %s is %s", ErrEnded, run, st.State)
	}
	_, err = status.PublishCancel(ctx, e.bus, st, reason, requestedBy, nil)
	return st, err
}
