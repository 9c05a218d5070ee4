package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// Bus is what the responder needs from a transport: core subscribe and
// publish.
type Bus interface {
	bus.Publisher
	bus.Subscriber
}

// Option configures Serve.
type Option func(*serveOptions)

type serveOptions struct {
	log *slog.Logger
}

// WithLogger sets the logger for requests that cannot be answered (nil:
// slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *serveOptions) { o.log = l } }

// ErrTooLarge is returned by Serve when the response does not fit in the
// bus's maximum payload, so the gateway could never receive it.
var ErrTooLarge = errors.New("discovery: response larger than the bus's max payload")

// Responder answers class-discovery requests for one agent class.
type Responder struct {
	sub      bus.Subscription
	stopCtx  func() bool
	stopOnce sync.Once
	err      error
	done     chan struct{}
}

// Serve subscribes to class-discovery requests and answers those addressed
// to resp's class or to every class (class token "*") with resp, on
// class_discovery.agent.<Class>.*.response.<call_id> over core NATS, as the
// gateway expects within its 10 s window. Each answer is
// resp with a fresh event_id and created_at.
//
// Serve returns once the subscription is in place. The responder answers
// until ctx is done or Stop is called. Requests with a malformed subject or
// a wildcard call id are logged and skipped.
func Serve(ctx context.Context, b Bus, resp *event.AgentClassDiscoveryResponseEvent, opts ...Option) (*Responder, error) {
	if b == nil || resp == nil {
		return nil, errors.New("discovery: Serve needs a bus and a response")
	}
	o := serveOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.Default()
	}
	class := resp.AgentClass
	if err := topic.ValidateToken("class", class); err != nil {
		return nil, fmt.Errorf("discovery: response agent_class: %w", err)
	}
	body, err := event.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("discovery: encoding the response: %w", err)
	}
	if mp, ok := b.(interface{ MaxPayload() int }); ok && mp.MaxPayload() > 0 && len(body) > mp.MaxPayload() {
		return nil, fmt.Errorf("%w: %d bytes, the bus accepts %d", ErrTooLarge, len(body), mp.MaxPayload())
	}
	template := *resp

	handle := func(m *bus.Msg) {
		req, err := topic.ParseDiscovery(m.Subject)
		if err != nil {
			o.log.Debug("discovery: skipping a request with a malformed subject", "subject", m.Subject, "error", err)
			return
		}
		if req.Class != topic.AnyClass && req.Class != class {
			return // addressed to another class
		}
		subject, err := topic.Discovery{Kind: topic.KindAgent, Class: class, Dir: topic.DirResponse, CallID: req.CallID}.Subject()
		if err != nil {
			o.log.Warn("discovery: cannot answer a request", "subject", m.Subject, "error", err)
			return
		}
		answer := template
		answer.EventID = event.NewID()
		answer.CreatedAt = time.Now().UnixNano()
		data, err := event.Marshal(&answer)
		if err == nil {
			err = b.Publish(ctx, &bus.Msg{Subject: subject, Data: data})
		}
		if err != nil && ctx.Err() == nil {
			o.log.Warn("discovery: answering failed", "subject", subject, "error", err)
		}
	}
	sub, err := b.Subscribe(ctx, topic.DiscoveryRequests(topic.KindAgent), "", handle)
	if err != nil {
		return nil, fmt.Errorf("discovery: subscribing to requests: %w", err)
	}
	r := &Responder{sub: sub, done: make(chan struct{})}
	r.stopCtx = context.AfterFunc(ctx, func() { _ = r.unsubscribe() })
	return r, nil
}

// Stop ends the responder; no answer is sent after it returns. It is safe
// to call more than once.
func (r *Responder) Stop() error {
	r.stopCtx()
	return r.unsubscribe()
}

// Done is closed once the responder has stopped, by Stop or because its
// context ended.
func (r *Responder) Done() <-chan struct{} { return r.done }

func (r *Responder) unsubscribe() error {
	r.stopOnce.Do(func() {
		r.err = r.sub.Unsubscribe()
		close(r.done)
	})
	return r.err
}

// Announce publishes resp once, unsolicited, on
// class_discovery.agent.<Class>.*.announce.<event_id> over core NATS, with a
// fresh event_id and created_at. A runner calls it when it starts so that a
// gateway listening on topic.DiscoveryAnnouncements learns about the class
// at once rather than at its next discovery cycle. The reference's gateway
// does not listen there, so it keeps discovering the class by request.
func Announce(ctx context.Context, b bus.Publisher, resp *event.AgentClassDiscoveryResponseEvent) error {
	if b == nil || resp == nil {
		return errors.New("discovery: Announce needs a bus and a response")
	}
	answer := *resp
	answer.EventID = event.NewID()
	answer.CreatedAt = time.Now().UnixNano()
	subject, err := topic.DiscoveryAnnounce(topic.KindAgent, answer.AgentClass, answer.EventID)
	if err != nil {
		return fmt.Errorf("discovery: announcing: %w", err)
	}
	data, err := event.Marshal(&answer)
	if err != nil {
		return fmt.Errorf("discovery: encoding the announcement: %w", err)
	}
	if err := b.Publish(ctx, &bus.Msg{Subject: subject, Data: data}); err != nil {
		return fmt.Errorf("discovery: announcing on %s: %w", subject, err)
	}
	return nil
}
