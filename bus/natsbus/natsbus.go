package natsbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"

	"github.com/saap-go/agent/bus"
)

// Bus is a bus.Bus over a NATS connection with JetStream.
type Bus struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	owned bool
	cfg   Config
	retry Retry
	log   *slog.Logger

	mu        sync.Mutex
	closed    bool
	shut      atomic.Bool  // closed, readable without mu on the publish path
	maxPay    atomic.Int64 // the server's max_payload, refreshed on reconnect
	subs      map[*subscription]struct{}
	consumers map[*consumer]struct{}
	dlReady   bool // the dead-letter stream is known to exist

	lost chan struct{} // closed when the connection is closed for good
}

var _ bus.Bus = (*Bus)(nil)

// Connect dials cfg.URL and returns a Bus that owns the connection (Close
// closes it). Reconnection never gives up; in-flight stream publishes are
// retried per cfg.Retry.
func Connect(cfg Config) (*Bus, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	var self atomic.Pointer[Bus]
	opts, err := cfg.options(log, func(nc *nats.Conn) {
		if b := self.Load(); b != nil {
			b.maxPay.Store(nc.MaxPayload())
		}
	})
	if err != nil {
		return nil, err
	}
	url := cfg.URL
	if url == "" {
		url = nats.DefaultURL
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("natsbus: connect to %s: %w", url, err)
	}
	b, err := New(nc, cfg)
	if err != nil {
		nc.Close()
		return nil, err
	}
	b.owned = true
	self.Store(b)
	return b, nil
}

// New returns a Bus over an existing connection, which it does not own:
// Close leaves nc open. Only cfg's Retry, MaxPending, DeadLetters and Logger
// apply.
func New(nc *nats.Conn, cfg Config) (*Bus, error) {
	if nc == nil {
		return nil, errors.New("natsbus: nil connection")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	retry := cfg.Retry.orDefault()
	maxPending := cfg.MaxPending
	if maxPending <= 0 {
		maxPending = DefaultMaxPending
	}
	if cfg.DeadLetters == (bus.DeadLetters{}) {
		cfg.DeadLetters = bus.DefaultDeadLetters()
	}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(maxPending),
		jetstream.WithPublishAsyncTimeout(retry.AckTimeout),
	)
	if err != nil {
		return nil, fmt.Errorf("natsbus: %w", err)
	}
	b := &Bus{
		nc: nc, js: js, cfg: cfg, retry: retry, log: log,
		subs:      map[*subscription]struct{}{},
		consumers: map[*consumer]struct{}{},
		lost:      make(chan struct{}),
	}
	b.maxPay.Store(nc.MaxPayload())
	// Chain, not replace, a closed handler the caller may have set.
	prev := nc.ClosedHandler()
	var once sync.Once
	nc.SetClosedHandler(func(c *nats.Conn) {
		once.Do(func() { close(b.lost) })
		if prev != nil {
			prev(c)
		}
	})
	if nc.IsClosed() {
		once.Do(func() { close(b.lost) })
	}
	return b, nil
}

// The capabilities beyond bus.Bus that the SDK uses when a bus has them.
// A wrapper of a Bus (for metrics, policy, tests) keeps every feature by
// forwarding these methods too.
type (
	// JetStreamer gives the JetStream context: the runner keeps its state
	// in JetStream KV on it, reconciles drifted consumers, and the
	// delegators create their consumers through it.
	JetStreamer interface{ JetStream() jetstream.JetStream }
	// Conner gives the NATS connection: the gateway's health reports it.
	Conner interface{ Conn() *nats.Conn }
	// ClosedReporter tells when the connection closed for good: the
	// runner then stops with an error instead of waiting.
	ClosedReporter interface{ Closed() <-chan struct{} }
)

// Closed is closed once the connection is closed for good: by Close, by
// its owner, or by the client giving up on it (nats.go does after some
// server errors, such as a protocol line over the server's limit). Nothing
// sent through b after that arrives; a runner should stop and report it.
func (b *Bus) Closed() <-chan struct{} { return b.lost }

// Conn returns the underlying connection.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// JetStream returns the JetStream context the bus uses.
func (b *Bus) JetStream() jetstream.JetStream { return b.js }

// ServerVersion is the connected server's version, e.g. "2.9.10".
func (b *Bus) ServerVersion() string { return b.nc.ConnectedServerVersion() }

// MaxPayload is the server's max_payload, as announced when the bus was
// made (and on each reconnect, for a bus made by Connect). Read without a
// lock: it is checked on every publish.
func (b *Bus) MaxPayload() int { return int(b.maxPay.Load()) }

// Close stops the consumers and subscriptions started through b and, if b
// owns the connection, closes it. Do not call it from a handler.
func (b *Bus) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.shut.Store(true)
	subs, cons := b.subs, b.consumers
	b.subs, b.consumers = nil, nil
	b.mu.Unlock()
	for c := range cons {
		_ = c.Stop()
	}
	for s := range subs {
		_ = s.Unsubscribe()
	}
	if b.owned {
		b.nc.Close()
	}
	return nil
}

func (b *Bus) isClosed() bool { return b.shut.Load() }

// outgoing checks m before any I/O and returns the nats.Msg to send, with
// the trace context of ctx injected.
func (b *Bus) outgoing(ctx context.Context, m *bus.Msg) (*nats.Msg, error) {
	if err := bus.CheckMsg(m, b.MaxPayload()); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if b.isClosed() {
		return nil, bus.ErrClosed
	}
	h := bus.InjectTrace(ctx, m.Header.Clone())
	return &nats.Msg{Subject: m.Subject, Reply: m.Reply, Header: nats.Header(h), Data: m.Data}, nil
}

// hasTrace reports whether ctx has trace context or baggage to propagate.
func hasTrace(ctx context.Context) bool {
	return trace.SpanContextFromContext(ctx).IsValid() || baggage.FromContext(ctx).Len() > 0
}

func incoming(m *nats.Msg) *bus.Msg {
	return &bus.Msg{Subject: m.Subject, Reply: m.Reply, Header: bus.Header(m.Header), Data: m.Data}
}

// mapErr turns nats.go errors callers branch on into the bus's sentinels.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse):
		return fmt.Errorf("%w (%w)", bus.ErrNoResponders, err)
	case errors.Is(err, nats.ErrConnectionClosed):
		return fmt.Errorf("%w (%w)", bus.ErrClosed, err)
	case errors.Is(err, nats.ErrMaxPayload):
		return fmt.Errorf("%w (%w)", bus.ErrPayloadTooLarge, err)
	case errors.Is(err, nats.ErrBadSubject):
		return fmt.Errorf("%w (%w)", bus.ErrInvalidSubject, err)
	}
	return err
}

// Publish sends m over core NATS; see bus.Publisher.
func (b *Bus) Publish(ctx context.Context, m *bus.Msg) error {
	if m != nil && len(m.Header) == 0 && m.Reply == "" && !hasTrace(ctx) {
		// Fast path without a nats.Msg: the common display-event publish.
		if err := bus.CheckMsg(m, b.MaxPayload()); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if b.isClosed() {
			return bus.ErrClosed
		}
		if err := b.nc.Publish(m.Subject, m.Data); err != nil {
			return fmt.Errorf("publish to %q: %w", m.Subject, mapErr(err))
		}
		return nil
	}
	nm, err := b.outgoing(ctx, m)
	if err != nil {
		return err
	}
	if err := b.nc.PublishMsg(nm); err != nil {
		return fmt.Errorf("publish to %q: %w", m.Subject, mapErr(err))
	}
	return nil
}

// PublishStream publishes m with JetStream, asynchronously, and waits for
// its PubAck; see bus.StreamPublisher. A missing ack, a timeout or an error
// is retried per the bus's Retry policy; a bad message is not.
func (b *Bus) PublishStream(ctx context.Context, m *bus.Msg, msgID string) (bus.PubAck, error) {
	return b.publishStream(ctx, m, msgID, false)
}

// PublishNew stores m unless the stream holds a message on its subject; see
// bus.StreamPublisher.
func (b *Bus) PublishNew(ctx context.Context, m *bus.Msg, msgID string) (bus.PubAck, error) {
	return b.publishStream(ctx, m, msgID, true)
}

// expectNew is the header that makes the stream refuse a message on a
// subject it holds a message on.
const expectNew = "Nats-Expected-Last-Subject-Sequence"

func (b *Bus) publishStream(ctx context.Context, m *bus.Msg, msgID string, fresh bool) (bus.PubAck, error) {
	nm, err := b.outgoing(ctx, m)
	if err != nil {
		return bus.PubAck{}, err
	}
	nm.Reply = ""
	if fresh {
		if nm.Header == nil {
			nm.Header = nats.Header{}
		}
		nm.Header[expectNew] = []string{"0"}
	}
	var opts []jetstream.PublishOpt
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	var last error
	for attempt := 1; ; attempt++ {
		msg := nm
		if attempt > 1 { // the client may still hold the message it sent
			msg = &nats.Msg{Subject: nm.Subject, Header: nats.Header(bus.Header(nm.Header).Clone()), Data: nm.Data}
		}
		ack, err := b.publishOnce(ctx, msg, opts)
		if err == nil {
			return bus.PubAck{Stream: ack.Stream, Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
		}
		if seq, taken := subjectTaken(err); fresh && taken {
			// Stored before: by another publisher, or by an attempt of
			// this call whose PubAck was lost.
			return bus.PubAck{Seq: seq, Duplicate: true}, nil
		}
		last = err
		if ctx.Err() != nil || !retryable(err) || attempt >= b.retry.Attempts {
			break
		}
		b.log.Warn("bus: stream publish failed, retrying", "subject", m.Subject,
			"attempt", attempt, "of", b.retry.Attempts, "err", err)
		t := time.NewTimer(b.retry.Pause)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	if ctx.Err() != nil && !errors.Is(last, ctx.Err()) {
		last = fmt.Errorf("%w (last error: %w)", ctx.Err(), last)
	}
	return bus.PubAck{}, fmt.Errorf("stream publish to %q: %w", m.Subject, mapErr(last))
}

func (b *Bus) publishOnce(ctx context.Context, msg *nats.Msg, opts []jetstream.PublishOpt) (*jetstream.PubAck, error) {
	fut, err := b.js.PublishMsgAsync(msg, opts...)
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(b.retry.AckTimeout)
	defer t.Stop()
	select {
	case ack := <-fut.Ok():
		return ack, nil
	case err := <-fut.Err():
		return nil, err
	case <-t.C:
		return nil, fmt.Errorf("no PubAck within %s", b.retry.AckTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// subjectTaken reports whether err is the stream's refusal of a message
// published with Nats-Expected-Last-Subject-Sequence 0, and the sequence of
// the message that holds the subject when the server says it (a replicated
// stream does not).
func subjectTaken(err error) (uint64, bool) {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return 0, false
	}
	switch apiErr.ErrorCode {
	case jetstream.JSErrCodeStreamWrongLastSequence:
		// "wrong last sequence: 12"
		d := apiErr.Description
		if i := strings.LastIndexByte(d, ' '); i >= 0 {
			if n, err := strconv.ParseUint(d[i+1:], 10, 64); err == nil {
				return n, true
			}
		}
		return 0, true
	case jetstream.JSErrCodeStreamWrongLastSequenceConstant:
		return 0, true
	}
	return 0, false
}

func retryable(err error) bool {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrMaxPayload),
		errors.Is(err, nats.ErrBadSubject), errors.Is(err, nats.ErrBadHeaderMsg):
		return false
	}
	return true
}

// subscription is a core subscription.
type subscription struct {
	b      *Bus
	sub    *nats.Subscription
	closed atomic.Bool
}

// Subscribe subscribes h to pattern (with a queue group if queue is set);
// see bus.Subscriber. It returns once the server has the subscription (a
// flush), so a message published afterwards from any connection reaches
// it. ctx bounds that wait; if the connection is down, the subscription is
// made on reconnect and Subscribe does not wait for it.
func (b *Bus) Subscribe(ctx context.Context, pattern, queue string, h func(*bus.Msg)) (bus.Subscription, error) {
	if err := bus.CheckSubscribe(pattern, queue, h); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &subscription{b: b}
	cb := func(m *nats.Msg) {
		if !s.closed.Load() {
			h(incoming(m))
		}
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, bus.ErrClosed
	}
	var err error
	if queue == "" {
		s.sub, err = b.nc.Subscribe(pattern, cb)
	} else {
		s.sub, err = b.nc.QueueSubscribe(pattern, queue, cb)
	}
	if err != nil {
		b.mu.Unlock()
		return nil, fmt.Errorf("subscribe to %q: %w", pattern, mapErr(err))
	}
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	fctx, cancel := bus.RequestContext(ctx)
	defer cancel()
	// A caller that gave up meanwhile (a program shutting down) or a bus
	// closed under it expects no confirmation: nothing to warn about.
	if err := b.nc.FlushWithContext(fctx); err != nil && ctx.Err() == nil && !errors.Is(err, nats.ErrConnectionClosed) {
		b.log.Warn("bus: subscription not confirmed by the server yet", "pattern", pattern, "err", err)
	}
	return s, nil
}

// Unsubscribe stops delivery; see bus.Subscription.
func (s *subscription) Unsubscribe() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.b.mu.Lock()
	delete(s.b.subs, s)
	s.b.mu.Unlock()
	if err := s.sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
		return err
	}
	return nil
}

// Request sends m and waits for the first reply; see bus.Requester.
// Without a deadline on ctx it waits bus.DefaultRequestTimeout.
func (b *Bus) Request(ctx context.Context, m *bus.Msg) (*bus.Msg, error) {
	nm, err := b.outgoing(ctx, m)
	if err != nil {
		return nil, err
	}
	nm.Reply = ""
	ctx, cancel := bus.RequestContext(ctx)
	defer cancel()
	r, err := b.nc.RequestMsgWithContext(ctx, nm)
	if err != nil {
		return nil, fmt.Errorf("request to %q: %w", m.Subject, mapErr(err))
	}
	reply := incoming(r)
	if err := bus.ReplyError(m.Subject, reply); err != nil {
		return reply, err
	}
	return reply, nil
}
