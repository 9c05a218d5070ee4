package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
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
func (e *Engine) cancelRun(ctx context.Context, r *runEntry, t topic.Agent, ev event.Event, seq uint64, id *runIdentity) error {
	if id == nil {
		// A cancel that closely follows its run's start may be handled
		// beside the start, before it recorded the run: if the stream
		// holds the run's start before the cancel, the cancel is handed
		// back and tried again. Without one there is no run to cancel.
		started, err := e.startedBefore(ctx, t, seq)
		if err != nil {
			return err
		}
		if started {
			return fmt.Errorf("dispatch: cancel of run %s: its start is being handled; the cancel is tried again", t.Run)
		}
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
	// The delegates first: once the run's end is published, a redelivered
	// request finds the run ended and would not reach them.
	if err := e.cancelDelegates(ctx, r, t, req, seq); err != nil {
		return err
	}
	if _, err := e.publish(ctx, r, t, stop, origin{}); err != nil {
		return err
	}
	return nil
}

// cancelDelegates asks the delegate runs of the run's open agent-in-the-loop
// questions to stop: a RunCancelRequestedEvent with the caller's reason
// and requester on each delegate run's control subject, which the delegate
// class's runners handle as any cancel (and pass on to their own
// delegates). Its id is derived from the question, so every delivery of
// the caller's cancel, on every replica, stores one request per delegate.
// A workflow that never delegates reads nothing here.
func (e *Engine) cancelDelegates(ctx context.Context, r *runEntry, t topic.Agent, req *event.RunCancelRequestedEvent, seq uint64) error {
	if !e.delegates {
		return nil
	}
	r.mu.Lock()
	if err := r.setFilter(t); err != nil {
		r.mu.Unlock()
		return err
	}
	if err := e.load(ctx, r, seq, req); err != nil {
		r.mu.Unlock()
		return err
	}
	var asked []*event.AgentInTheLoopRequestEvent
	answered := map[string]bool{}
	for _, h := range r.events {
		switch {
		case h.seq > seq:
		case event.IsAITLRequest(h.ev):
			if q := aitlRequest(h.ev); q != nil {
				asked = append(asked, q)
			}
		case isAnswer(h.ev):
			if id, _ := answerOf(h.ev); id != "" {
				answered[id] = true
			}
		}
	}
	r.mu.Unlock()
	for _, q := range asked {
		if answered[q.EventID] {
			continue
		}
		dt, err := hitl.DelegateTopic(t, q)
		if err != nil {
			continue // never delegated: the delegator refused it
		}
		c := &event.RunCancelRequestedEvent{Reason: req.Reason, RequestedBy: req.RequestedBy}
		c.EventID, c.CreatedAt = derivedID(q.EventID, "delegate-cancel"), e.now().UnixNano()
		data, err := event.Marshal(c)
		if err != nil {
			return fmt.Errorf("dispatch: encode the delegate's cancel request: %w", err)
		}
		dt.Type, dt.Name, dt.EventID = topic.Control, event.Name(c), c.EventID
		subj, err := dt.Subject()
		if err != nil {
			continue // DelegateTopic checked it
		}
		if _, err := e.bus.PublishNew(ctx, &bus.Msg{Subject: subj, Data: data}, c.EventID); err != nil {
			return fmt.Errorf("dispatch: cancel delegate run %s of class %s: %w", dt.Run, dt.Class, err)
		}
		e.log.InfoContext(ctx, "dispatch: delegate run asked to stop with its caller", "run_id", t.Run,
			"request_event_id", q.EventID, "delegate_class", dt.Class, "delegate_run_id", dt.Run)
	}
	return nil
}

// aitlRequest returns ev's AgentInTheLoopRequestEvent: ev itself or the
// one a subclass embeds; nil if none.
func aitlRequest(ev event.Event) *event.AgentInTheLoopRequestEvent {
	if q, ok := ev.(*event.AgentInTheLoopRequestEvent); ok {
		return q
	}
	v := reflect.ValueOf(ev)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := v.Elem().FieldByName("AgentInTheLoopRequestEvent")
	if !f.IsValid() || !f.CanAddr() {
		return nil
	}
	q, _ := f.Addr().Interface().(*event.AgentInTheLoopRequestEvent)
	return q
}

// startedBefore reports whether the stream holds a start event of t's run
// (with t's agent id and thread) before sequence seq (0: anywhere). It
// reads the run's events from the stream's start: it serves only a cancel
// of a run this process does not know, which is rare.
func (e *Engine) startedBefore(ctx context.Context, t topic.Agent, seq uint64) (bool, error) {
	f, err := topic.AgentPattern{Class: t.Class, ID: t.ID, Thread: t.Thread, Run: t.Run, Type: topic.Control}.Subject()
	if err != nil {
		return false, Permanent(err)
	}
	for next := uint64(1); ; {
		m, err := e.bus.NextMsg(ctx, e.stream, f, next)
		if errors.Is(err, bus.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("dispatch: look for the start of run %s: %w", t.Run, err)
		}
		if seq != 0 && m.Seq >= seq {
			return false, nil
		}
		if ev, err := event.Unmarshal(m.Data); err == nil && event.IsStart(ev) {
			return true, nil
		}
		next = m.Seq + 1
	}
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
