package status

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// ErrEnded is returned for a cancel of a run that has ended already:
// there is nothing to stop.
var ErrEnded = errors.New("status: the run has ended")

// CheckCancel bounds the texts of a cancel request.
func CheckCancel(reason, requestedBy string) error {
	switch {
	case len(reason) > event.MaxCancelReason:
		return fmt.Errorf("reason of %d bytes, over the limit of %d", len(reason), event.MaxCancelReason)
	case len(requestedBy) > event.MaxCancelBy:
		return fmt.Errorf("requested_by of %d bytes, over the limit of %d", len(requestedBy), event.MaxCancelBy)
	case !utf8.ValidString(reason) || !utf8.ValidString(requestedBy):
		return errors.New("reason and requested_by must be UTF-8")
	}
	return nil
}

// CancelMsg returns the RunCancelRequestedEvent for the run st describes,
// encoded on the run's control subject, and its event id (the message id
// to publish it with).
func CancelMsg(st Record, reason, requestedBy string) (*bus.Msg, string, error) {
	if err := CheckCancel(reason, requestedBy); err != nil {
		return nil, "", fmt.Errorf("status: cancel run %s: %w", st.Run, err)
	}
	display := st.Display
	if display == "" {
		// A record written before records kept the display id: the
		// engine does not fence the display, so the run still stops, but
		// its RunCancelledEvent's display copy goes to this display.
		display = st.Run
	}
	ev := &event.RunCancelRequestedEvent{Reason: reason, RequestedBy: requestedBy}
	event.Stamp(ev)
	t := topic.Agent{Class: st.Class, ID: st.AgentID, Thread: st.Thread, Display: display, Run: st.Run,
		Type: topic.Control, Name: event.Name(ev), EventID: ev.EventID}
	subj, err := t.Subject()
	if err != nil {
		return nil, "", fmt.Errorf("status: cancel run %s: %w", st.Run, err)
	}
	data, err := event.Marshal(ev)
	if err != nil {
		return nil, "", fmt.Errorf("status: cancel run %s: %w", st.Run, err)
	}
	return &bus.Msg{Subject: subj, Data: data}, ev.EventID, nil
}

// PublishCancel publishes a RunCancelRequestedEvent for the run st
// describes on its control subject, with header h, and returns the
// request's event id. It does not look at the run's state: a request for
// an ended run does nothing.
func PublishCancel(ctx context.Context, p bus.StreamPublisher, st Record, reason, requestedBy string, h bus.Header) (string, error) {
	m, id, err := CancelMsg(st, reason, requestedBy)
	if err != nil {
		return "", err
	}
	m.Header = h
	if _, err := p.PublishStream(ctx, m, id); err != nil {
		return "", fmt.Errorf("status: publish the cancel request of run %s: %w", st.Run, err)
	}
	return id, nil
}

// Cancel asks run of class to stop, over the bus: it asks the class's
// replicas for the run's status (Request), and publishes a
// RunCancelRequestedEvent on the run's control subject. It returns the
// status it read. A run that has ended is an error wrapping ErrEnded,
// one without a status record one wrapping ErrNotFound. Cancel returns
// once the request is stored, before the run has stopped; its status
// turns cancelled when it has.
func Cancel(ctx context.Context, b interface {
	bus.Requester
	bus.StreamPublisher
}, class, run, reason, requestedBy string) (Record, error) {
	if err := CheckCancel(reason, requestedBy); err != nil {
		return Record{}, fmt.Errorf("status: cancel run %s: %w", run, err)
	}
	st, err := Request(ctx, b, class, run)
	if err != nil {
		return st, err
	}
	if st.State.Ended() {
		return st, fmt.Errorf("%w: run %s is %s", ErrEnded, run, st.State)
	}
	_, err = PublishCancel(ctx, b, st, reason, requestedBy, nil)
	return st, err
}
