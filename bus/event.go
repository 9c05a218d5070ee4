package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/saap-go/agent/retry"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// EventPublisher is what PublishEvent needs of a bus.
type EventPublisher interface {
	Publisher
	StreamPublisher
}

// PublishEvent publishes e for the run addressed by t, routed by its parent
// chain: a control event goes to the stream on the
// control subject with msg id = event_id; a display event goes over
// core NATS to the display subject; an event that is both goes to both,
// control first. The payload is event.Marshal(e); h (may be nil) is sent
// with both. t.Type is ignored; an empty t.Name or t.EventID is filled
// from the event. A display-only event returns a zero PubAck.
//
// Both subjects are built, and e encoded, before anything is sent, so a bad
// token or event fails without a partial publish.
func PublishEvent(ctx context.Context, p EventPublisher, t topic.Agent, e event.Event, h Header) (PubAck, error) {
	if e == nil || e.EventBase() == nil {
		return PubAck{}, errors.New("bus: PublishEvent with a nil event")
	}
	id := e.EventBase().EventID
	if id == "" {
		return PubAck{}, fmt.Errorf("bus: event %s has no event_id (it is the stream msg id)", event.Name(e))
	}
	if t.Name == "" {
		t.Name = event.Name(e)
	}
	if t.EventID == "" {
		t.EventID = id
	}
	control, display := event.IsControl(e), event.IsDisplay(e)
	if !control && !display {
		return PubAck{}, fmt.Errorf("bus: event %s is neither a control nor a display event; it has no agent subject", event.Name(e))
	}
	var controlSubj, displaySubj string
	var err error
	if control {
		t.Type = topic.Control
		if controlSubj, err = t.Subject(); err != nil {
			return PubAck{}, fmt.Errorf("bus: publish %s: %w", event.Name(e), err)
		}
	}
	if display {
		t.Type = topic.Display
		if displaySubj, err = t.Subject(); err != nil {
			return PubAck{}, fmt.Errorf("bus: publish %s: %w", event.Name(e), err)
		}
	}
	data, err := event.Marshal(e)
	if err != nil {
		return PubAck{}, fmt.Errorf("bus: encode %s: %w", event.Name(e), err)
	}
	var ack PubAck
	m := &Msg{Header: h, Data: data} // one for both publishes: buses copy what they keep
	if control {
		m.Subject = controlSubj
		if ack, err = p.PublishStream(ctx, m, id); err != nil {
			return PubAck{}, err
		}
	}
	if display {
		*m = Msg{Subject: displaySubj, Header: h, Data: data}
		if err := p.Publish(ctx, m); err != nil {
			return ack, err
		}
	}
	return ack, nil
}

// ErrPermanent marks a handler error that retrying cannot fix: the message
// is dead-lettered instead of redelivered. Wrap with Permanent.
var ErrPermanent = errors.New("permanent failure")

// Permanent wraps err so that HandleEvents dead-letters the message.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrPermanent, err)
}

// EventHandler handles one decoded event from a durable consumer. ctx
// carries the publisher's trace context.
type EventHandler func(ctx context.Context, d Delivery, e event.Event) error

// HandleEvents adapts h to a Consume handler that decodes each message
// with event.Unmarshal and settles it by h's result:
//
//   - undecodable payload: dead-lettered, never reaches h;
//   - nil: acked;
//   - an error wrapping ErrPermanent: dead-lettered with the error as reason;
//   - any other error: naked with a backoff (1 s doubling to 30 s), so it is
//     retried until MaxDeliver.
//
// If h settles d itself, HandleEvents leaves it so. The event carries the
// message's X-AIHub-* headers (event.Headers). Nothing is dropped silently:
// a dead letter that cannot be published leaves the message to redelivery.
func HandleEvents(ctx context.Context, h EventHandler) func(Delivery) {
	return func(d Delivery) {
		m := d.Msg()
		e, err := event.Unmarshal(m.Data)
		if err != nil {
			deadLetter(ctx, d, "undecodable: "+err.Error())
			return
		}
		if ai := AIHubHeaders(m.Header); ai != nil {
			event.SetHeaders(e, ai)
		}
		err = h(ExtractTrace(ctx, m.Header), d, e)
		switch {
		case err == nil:
			_ = d.Ack(ctx) // ErrSettled if h settled: fine
		case errors.Is(err, ErrPermanent):
			deadLetter(ctx, d, "rejected: "+err.Error())
		default:
			_ = d.Nak(Backoff(d.NumDelivered()))
		}
	}
}

func deadLetter(ctx context.Context, d Delivery, reason string) {
	if err := d.DeadLetter(ctx, reason); err != nil && !errors.Is(err, ErrSettled) {
		_ = d.Nak(Backoff(d.NumDelivered()))
	}
}

// Backoff is the Nak delay after the n-th failed delivery: 1 s, doubling,
// at most 30 s.
func Backoff(n uint64) time.Duration {
	return retry.Infrastructure.Delay(int(min(n, 1<<20)))
}
