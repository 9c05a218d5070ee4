package bus

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Header holds NATS message headers. Keys are kept exactly as given (NATS
// headers are case-sensitive); use Lookup for a case-insensitive lookup.
type Header map[string][]string

// Get returns the first value of key (exact match), or "".
func (h Header) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Set replaces the values of key.
func (h Header) Set(key, value string) { h[key] = []string{value} }

// Add appends value to the values of key.
func (h Header) Add(key, value string) { h[key] = append(h[key], value) }

// Lookup returns the first value of key, matched case-insensitively (an
// exact match wins), or "".
func (h Header) Lookup(key string) string {
	if v := h.Get(key); v != "" {
		return v
	}
	for k, v := range h {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// Clone returns a deep copy of h; nil stays nil.
func (h Header) Clone() Header {
	if h == nil {
		return nil
	}
	c := make(Header, len(h))
	for k, v := range h {
		c[k] = append([]string(nil), v...)
	}
	return c
}

// wireSize is the size of h as NATS encodes it ("NATS/1.0\r\n", one
// "key: value\r\n" line per value, a closing "\r\n"); 0 for no headers.
func (h Header) wireSize() int {
	if len(h) == 0 {
		return 0
	}
	n := len("NATS/1.0\r\n\r\n")
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// Msg is one message as it crosses the bus. A bus copies what a publisher
// passes (the publisher may reuse its buffers once the call returns); a Msg
// a bus hands out (to a subscriber, in a Delivery, from NextMsg) may share
// its Header and Data with other receivers of the same message, so treat
// them as read-only: Clone the header to change it.
type Msg struct {
	Subject string
	Reply   string
	Header  Header
	Data    []byte
}

// PubAck is the stream's acknowledgement of a stream publish.
type PubAck struct {
	Stream    string
	Seq       uint64
	Duplicate bool // the stream already held a message with the same msg id
}

// Publisher sends messages over core NATS: fire and forget, no persistence.
type Publisher interface {
	// Publish sends m. It refuses an invalid subject or an oversize payload
	// before any I/O.
	Publish(ctx context.Context, m *Msg) error
}

// StreamPublisher sends messages to JetStream and waits for the stream's ack.
type StreamPublisher interface {
	// PublishStream stores m in the stream that captures its subject, with
	// msgID as Nats-Msg-Id (de-duplicated within the stream's window). It
	// retries per the bus's retry policy and returns when the ack arrived,
	// the retries are exhausted, or ctx is done.
	PublishStream(ctx context.Context, m *Msg, msgID string) (PubAck, error)
	// PublishNew is PublishStream that stores m only if the stream holds no
	// message on m.Subject: for subjects that end in a unique id (every
	// agent event's does), a de-duplication that lasts as long as the
	// stream keeps the message, however long after the duplicate window.
	// When the subject is taken it stores nothing and returns Duplicate
	// true (with the stored message's Seq where the server tells it, else
	// 0). On NATS it is one publish with Nats-Expected-Last-Subject-Sequence
	// 0, which the stream's leader checks.
	PublishNew(ctx context.Context, m *Msg, msgID string) (PubAck, error)
}

// Subscription is a live core subscription.
type Subscription interface {
	// Unsubscribe stops delivery: once it returns no further message is
	// handed to the handler, though a call already under way may still be
	// running. It is idempotent.
	Unsubscribe() error
}

// Subscriber receives core NATS messages (which include copies of messages
// published to streams, as on a real server).
type Subscriber interface {
	// Subscribe calls h for every message whose subject matches the pattern
	// (NATS wildcard rules). With a non-empty queue, each message goes to one
	// member of the queue group. h must not block for long. Subscribe
	// returns once the subscription is in place: a message published
	// afterwards, from anywhere, reaches it.
	Subscribe(ctx context.Context, pattern, queue string, h func(*Msg)) (Subscription, error)
}

// Requester does request/reply.
type Requester interface {
	// Request sends m and waits for one reply until ctx is done (without a
	// deadline: DefaultRequestTimeout). A reply that is an error reply (see
	// ReplyError) is returned with a *RemoteError; no subscriber at all is
	// ErrNoResponders, at once.
	Request(ctx context.Context, m *Msg) (*Msg, error)
}

// Storage is where a stream keeps its messages.
type Storage int

// Storage kinds.
const (
	FileStorage Storage = iota
	MemoryStorage
)

// StreamConfig describes a stream. Retention is always "limits" and discard
// "old", as the protocol's streams use.
type StreamConfig struct {
	Name       string
	Subjects   []string
	Storage    Storage
	MaxMsgs    int64         // 0 or -1: unlimited
	MaxAge     time.Duration // 0: unlimited
	Duplicates time.Duration // de-duplication window for Nats-Msg-Id; 0: 2 min (server default)

	err error // set by AgentStream for an invalid class; reported by Validate
}

// ConsumerConfig describes a durable consumer shared by a queue group.
type ConsumerConfig struct {
	Stream        string
	Durable       string // also the queue group / deliver group
	FilterSubject string
	AckWait       time.Duration // 0 → 30 s
	MaxDeliver    int           // 0 → 5
	MaxAckPending int           // 0 → 1000, the NATS default

	err error // set by RunnerConsumer for an invalid class; reported by Validate
}

// Consumer defaults, the reference runner's settings.
const (
	DefaultAckWait       = 30 * time.Second
	DefaultMaxDeliver    = 5
	DefaultMaxAckPending = 1000
)

// WithDefaults returns c with zero fields set to their defaults.
func (c ConsumerConfig) WithDefaults() ConsumerConfig {
	if c.AckWait <= 0 {
		c.AckWait = DefaultAckWait
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = DefaultMaxDeliver
	}
	if c.MaxAckPending <= 0 {
		c.MaxAckPending = DefaultMaxAckPending
	}
	return c
}

// Delivery is one delivery of a stream message to a durable consumer.
// Exactly one of Ack, Nak, Term or DeadLetter should settle it; InProgress may
// be called any number of times before that.
type Delivery interface {
	// Msg is the stored message; Msg().Header carries its headers
	// (Nats-Msg-Id, trace context, X-AIHub-*).
	Msg() *Msg
	// Seq is the message's stream sequence.
	Seq() uint64
	// NumDelivered counts deliveries of this message, starting at 1.
	NumDelivered() uint64
	// Ack settles the message for good. ctx bounds the call; on NATS the
	// ack is sent, not confirmed (a lost ack causes one redelivery).
	Ack(ctx context.Context) error
	// Nak asks for redelivery after delay (0: at once). The redelivery
	// counts towards MaxDeliver.
	Nak(delay time.Duration) error
	// InProgress resets the ack-wait timer.
	InProgress() error
	// Term stops redelivery of the message without dead-lettering it.
	Term(reason string) error
	// DeadLetter terminates the message and republishes it, with its
	// original subject, headers and reason, to the dead-letter subject.
	DeadLetter(ctx context.Context, reason string) error
}

// Consumer is a running durable consumption.
// A LossReporter is a Consumer that tells when the server removed it: Lost
// yields an error wrapping ErrConsumerLost once, and the consumer delivers
// nothing more. The runner then recreates what it owns.
type LossReporter interface {
	Lost() <-chan error
}

type Consumer interface {
	// Stop stops taking new messages and returns once the handler calls in
	// flight have returned; do not call it from the handler. Messages
	// fetched ahead but never handed to the handler are given back at once
	// (nak'ed), or dead-lettered at their last delivery (MaxDeliver), which a
	// nak would end; deliveries the handler left unsettled are redelivered
	// after their AckWait. Deliveries may still be settled after Stop.
	Stop() error
}

// StoredMsg is a message read back from a stream.
type StoredMsg struct {
	Msg
	Seq  uint64
	Time time.Time
}

// StreamInfo is a stream's configuration and state as the bus reports it.
type StreamInfo struct {
	Config   StreamConfig
	Msgs     uint64 // messages stored now
	FirstSeq uint64
	LastSeq  uint64
}

// Streams manages streams and durable consumption.
type Streams interface {
	// EnsureStream creates the stream if no stream of that name exists. An
	// existing stream is left as it is, even if its configuration differs
	// (the reference never reconciles streams).
	EnsureStream(ctx context.Context, cfg StreamConfig) error
	// StreamInfo returns the configuration and state of stream name, or an
	// error wrapping ErrNotFound.
	StreamInfo(ctx context.Context, name string) (*StreamInfo, error)
	// DeleteStream removes stream name and its consumers; ErrNotFound if absent.
	DeleteStream(ctx context.Context, name string) error
	// Consume starts (or joins) the durable consumer and calls h for each
	// delivery. The consumer is created if absent; if it exists and its
	// AckWait, MaxDeliver, MaxAckPending or filter drifted from cfg, it is
	// updated. Calls of h on one Consumer are serial, as on a NATS
	// subscription; several Consume calls with the same durable share its
	// messages like a queue group. ctx bounds the set-up only.
	Consume(ctx context.Context, cfg ConsumerConfig, h func(Delivery)) (Consumer, error)
	// DeleteConsumer removes a durable consumer; ErrNotFound if absent.
	DeleteConsumer(ctx context.Context, stream, durable string) error
	// NextMsg returns the first message of stream with sequence ≥ seq whose
	// subject matches filter, or ErrNotFound. On NATS it is one round trip.
	NextMsg(ctx context.Context, stream, filter string, seq uint64) (*StoredMsg, error)
	// HasSubject reports whether stream still holds a message published on
	// exactly subject (no wildcards). It tells whether a message with a
	// unique subject (an agent event's ends in its event id) was stored,
	// however long ago, where the stream's duplicate window has long
	// passed. A missing stream is an error wrapping ErrNotFound. On NATS it
	// is one round trip.
	HasSubject(ctx context.Context, stream, subject string) (bool, error)
}

// Bus is everything the SDK needs from a transport.
type Bus interface {
	Publisher
	StreamPublisher
	Subscriber
	Requester
	Streams
	// MaxPayload is the largest payload the bus accepts, in bytes.
	MaxPayload() int
	Close() error
}

// Errors callers branch on.
var (
	ErrNotFound        = errors.New("bus: not found")
	ErrNoResponders    = errors.New("bus: no responders")
	ErrClosed          = errors.New("bus: closed")
	ErrInvalidSubject  = errors.New("bus: invalid subject")
	ErrPayloadTooLarge = errors.New("bus: payload too large")
	// ErrConsumerLost is what a LossReporter reports: the server removed
	// the consumer (it, or its stream, was deleted), which delivers
	// nothing more.
	ErrConsumerLost = errors.New("bus: consumer lost")
	// ErrSettled is returned when a delivery that was already acked,
	// naked, terminated or dead-lettered is settled again.
	ErrSettled = errors.New("bus: delivery already settled")
)

// MessageReader reads a stream's stored messages; every Bus is one.
type MessageReader interface {
	NextMsg(ctx context.Context, stream, filter string, seq uint64) (*StoredMsg, error)
}

// ReadAll returns the messages of stream whose subject matches filter, in
// stream order, one NextMsg each: for a run's events, not a whole stream.
// A missing stream, like one without a match, gives none.
func ReadAll(ctx context.Context, r MessageReader, stream, filter string) ([]*StoredMsg, error) {
	var out []*StoredMsg
	for seq := uint64(1); ; {
		m, err := r.NextMsg(ctx, stream, filter, seq)
		if errors.Is(err, ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, m)
		seq = m.Seq + 1
	}
}
