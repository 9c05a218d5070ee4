package natsbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/internal/jsfault"
)

func streamConfig(c bus.StreamConfig, replicas int) jetstream.StreamConfig {
	sc := jetstream.StreamConfig{
		Name:       c.Name,
		Subjects:   append([]string(nil), c.Subjects...),
		Retention:  jetstream.LimitsPolicy,
		Discard:    jetstream.DiscardOld,
		Storage:    jetstream.FileStorage,
		MaxMsgs:    c.MaxMsgs,
		MaxAge:     c.MaxAge,
		Duplicates: c.Duplicates,
		Replicas:   max(replicas, 1),
	}
	if c.MaxMsgs == 0 {
		sc.MaxMsgs = -1
	}
	if c.Storage == bus.MemoryStorage {
		sc.Storage = jetstream.MemoryStorage
	}
	return sc
}

func mapStreamErr(name string, err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("stream %q: %w", name, bus.ErrNotFound)
	}
	return fmt.Errorf("stream %q: %w", name, mapErr(err))
}

// EnsureStream creates the stream if none of that name exists; see
// bus.Streams. Like the reference it looks the stream up by name only and
// never updates an existing one.
func (b *Bus) EnsureStream(ctx context.Context, cfg bus.StreamConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	_, err := b.js.Stream(ctx, cfg.Name)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return mapStreamErr(cfg.Name, err)
	}
	err = jsfault.Retry(ctx, func() error {
		_, err := b.js.CreateStream(ctx, streamConfig(cfg, b.cfg.Replicas))
		return err
	})
	if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("create stream %q: %w", cfg.Name, mapErr(err))
	}
	return nil
}

// StreamInfo returns the stream's configuration and state; see bus.Streams.
func (b *Bus) StreamInfo(ctx context.Context, name string) (*bus.StreamInfo, error) {
	s, err := b.js.Stream(ctx, name)
	if err != nil {
		return nil, mapStreamErr(name, err)
	}
	info := s.CachedInfo()
	c := info.Config
	out := &bus.StreamInfo{
		Config: bus.StreamConfig{
			Name: c.Name, Subjects: c.Subjects, MaxMsgs: c.MaxMsgs,
			MaxAge: c.MaxAge, Duplicates: c.Duplicates,
		},
		Msgs:     info.State.Msgs,
		FirstSeq: info.State.FirstSeq,
		LastSeq:  info.State.LastSeq,
	}
	if c.Storage == jetstream.MemoryStorage {
		out.Config.Storage = bus.MemoryStorage
	}
	if c.Retention != jetstream.LimitsPolicy || c.Discard != jetstream.DiscardOld {
		b.log.Warn("bus: stream is not limits/discard-old", "stream", name,
			"retention", c.Retention.String(), "discard", c.Discard.String())
	}
	return out, nil
}

// DeleteStream removes the stream; see bus.Streams.
func (b *Bus) DeleteStream(ctx context.Context, name string) error {
	if err := b.js.DeleteStream(ctx, name); err != nil {
		return mapStreamErr(name, err)
	}
	return nil
}

// DeleteConsumer removes the durable; see bus.Streams.
func (b *Bus) DeleteConsumer(ctx context.Context, stream, durable string) error {
	err := b.js.DeleteConsumer(ctx, stream, durable)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return fmt.Errorf("consumer %q on stream %q: %w", durable, stream, bus.ErrNotFound)
	}
	return mapStreamErr(stream, err)
}

// msgGetRequest is JetStream's STREAM.MSG.GET request; next_by_subj
// (nats-server 2.9+) returns the first message at or after seq that
// matches the subject, wildcards allowed.
type msgGetRequest struct {
	Seq       uint64 `json:"seq"`
	NextBySub string `json:"next_by_subj"`
}

// lastBySubjRequest asks STREAM.MSG.GET for the last message stored on a
// subject.
type lastBySubjRequest struct {
	LastBySubj string `json:"last_by_subj"`
}

// HasSubject reports whether the stream holds a message on exactly subject,
// in one request to $JS.API.STREAM.MSG.GET.<stream>; see bus.Streams.
func (b *Bus) HasSubject(ctx context.Context, stream, subject string) (bool, error) {
	if err := bus.ValidateSubject(subject); err != nil {
		return false, err
	}
	req, _ := json.Marshal(lastBySubjRequest{LastBySubj: subject})
	ctx, cancel := bus.RequestContext(ctx)
	defer cancel()
	r, err := b.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, req)
	if err != nil {
		return false, fmt.Errorf("stream %q: look up subject: %w", stream, mapErr(err))
	}
	var resp msgGetResponse
	if err := json.Unmarshal(r.Data, &resp); err != nil {
		return false, fmt.Errorf("stream %q: look up subject: bad response: %w", stream, err)
	}
	if e := resp.Error; e != nil {
		switch {
		case e.ErrCode == errCodeStreamNotFound:
			return false, fmt.Errorf("stream %q: %w", stream, bus.ErrNotFound)
		case e.ErrCode == errCodeNoMessage || e.Code == 404:
			return false, nil
		}
		return false, fmt.Errorf("stream %q: look up subject: %s (code %d, err_code %d)", stream, e.Description, e.Code, e.ErrCode)
	}
	return resp.Message != nil, nil
}

type msgGetResponse struct {
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
	Message *struct {
		Subject string    `json:"subject"`
		Seq     uint64    `json:"seq"`
		Header  []byte    `json:"hdrs"`
		Data    []byte    `json:"data"`
		Time    time.Time `json:"time"`
	} `json:"message"`
}

// JetStream API error codes NextMsg tells apart.
const (
	errCodeNoMessage      = 10037
	errCodeStreamNotFound = 10059
)

// NextMsg returns the first stored message with sequence ≥ seq matching
// filter, in one request to $JS.API.STREAM.MSG.GET.<stream>; see
// bus.Streams.
func (b *Bus) NextMsg(ctx context.Context, stream, filter string, seq uint64) (*bus.StoredMsg, error) {
	if filter == "" {
		filter = ">"
	}
	if err := bus.ValidatePattern(filter); err != nil {
		return nil, err
	}
	req, _ := json.Marshal(msgGetRequest{Seq: max(seq, 1), NextBySub: filter})
	ctx, cancel := bus.RequestContext(ctx)
	defer cancel()
	r, err := b.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, req)
	if err != nil {
		return nil, fmt.Errorf("stream %q: get next message: %w", stream, mapErr(err))
	}
	var resp msgGetResponse
	if err := json.Unmarshal(r.Data, &resp); err != nil {
		return nil, fmt.Errorf("stream %q: get next message: bad response: %w", stream, err)
	}
	if e := resp.Error; e != nil {
		switch {
		case e.ErrCode == errCodeNoMessage || (e.Code == 404 && e.ErrCode != errCodeStreamNotFound):
			return nil, fmt.Errorf("stream %q: no message matching %q from sequence %d: %w", stream, filter, seq, bus.ErrNotFound)
		case e.ErrCode == errCodeStreamNotFound:
			return nil, fmt.Errorf("stream %q: %w", stream, bus.ErrNotFound)
		}
		return nil, fmt.Errorf("stream %q: get next message: %s (code %d, err_code %d)", stream, e.Description, e.Code, e.ErrCode)
	}
	if resp.Message == nil {
		return nil, fmt.Errorf("stream %q: get next message: empty response", stream)
	}
	m := resp.Message
	out := &bus.StoredMsg{Msg: bus.Msg{Subject: m.Subject, Data: m.Data}, Seq: m.Seq, Time: m.Time}
	if len(m.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(m.Header)
		if err != nil {
			return nil, fmt.Errorf("stream %q: message %d: bad headers: %w", stream, m.Seq, err)
		}
		out.Header = bus.Header(h)
	}
	return out, nil
}

// consumer is one Consume call.
type consumer struct {
	b       *Bus
	cc      jetstream.ConsumeContext
	jc      jetstream.Consumer
	cfg     bus.ConsumerConfig
	lost    chan error // one report when the server removed the consumer
	mu      sync.Mutex // held while the handler runs
	stopped bool
	// stopping is set by Stop before it waits for the handler, so messages
	// buffered behind the call in flight are held, not handed over.
	stopping atomic.Bool
	once     sync.Once

	// held are the messages that came in while stopping. They are nak'ed
	// only once the subscription is gone: a nak while the pull request is
	// open makes the server deliver the message straight back to it, which
	// spends one of its deliveries each time and may leave the last one in
	// a subscription that is closing, to wait for AckWait.
	heldMu   sync.Mutex
	held     []jetstream.Msg
	released bool // held were given back: later ones are at once

	maxDeliver int // the consumer's MaxDeliver; -1: no limit

	probing atomic.Bool    // a probe of the consumer's existence is under way
	probes  sync.WaitGroup // Stop waits for them
}

// hold keeps m, pulled while stopping, until release; after release it
// gives m back at once.
func (c *consumer) hold(m jetstream.Msg) {
	c.heldMu.Lock()
	if !c.released {
		c.held = append(c.held, m)
		c.heldMu.Unlock()
		return
	}
	c.heldMu.Unlock()
	c.giveBack(m)
}

// release gives the held messages back, so that another consumer gets them
// at once rather than after AckWait.
func (c *consumer) release() {
	c.heldMu.Lock()
	held := c.held
	c.held, c.released = nil, true
	c.heldMu.Unlock()
	for _, m := range held {
		c.giveBack(m)
	}
}

// giveBack hands m, which was never handed to the handler, back to the
// server (see bus.HandBack).
func (c *consumer) giveBack(m jetstream.Msg) {
	ctx, cancel := context.WithTimeout(context.Background(), bus.HandBackTimeout)
	defer cancel()
	d := c.b.delivery(m)
	if lettered, err := bus.HandBack(ctx, d, c.maxDeliver, "the consumer stopped"); err != nil && lettered {
		c.b.log.Error("bus: a message at its last delivery could not be dead-lettered when its consumer stopped; it will not be delivered again",
			"stream", d.meta().Stream, "seq", d.Seq(), "subject", d.msg.Subject, "error", err)
	} // a failed nak only delays the message
}

func consumerConfig(c bus.ConsumerConfig) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       c.Durable,
		FilterSubject: c.FilterSubject,
		AckPolicy:     jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		ReplayPolicy:  jetstream.ReplayInstantPolicy,
		AckWait:       c.AckWait,
		MaxDeliver:    c.MaxDeliver,
		MaxAckPending: c.MaxAckPending,
	}
}

// durable returns the consumer, created if absent and updated if its
// AckWait, MaxDeliver, MaxAckPending or filter drifted from cfg.
func (b *Bus) durable(ctx context.Context, cfg bus.ConsumerConfig) (jetstream.Consumer, error) {
	s, err := b.js.Stream(ctx, cfg.Stream)
	if err != nil {
		return nil, mapStreamErr(cfg.Stream, err)
	}
	for range 3 {
		c, err := s.Consumer(ctx, cfg.Durable)
		if errors.Is(err, jetstream.ErrNotPullConsumer) {
			c, err = b.takeOver(ctx, s, cfg)
			if errors.Is(err, errRetakeOver) {
				continue
			}
		}
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			err = jsfault.Retry(ctx, func() (err error) {
				c, err = s.CreateConsumer(ctx, consumerConfig(cfg))
				return err
			})
			if errors.Is(err, jetstream.ErrConsumerExists) {
				continue // another replica won the race
			}
		}
		if err != nil {
			return nil, fmt.Errorf("consumer %q on stream %q: %w", cfg.Durable, cfg.Stream, mapErr(err))
		}
		have := c.CachedInfo().Config
		if have.AckWait == cfg.AckWait && have.MaxDeliver == cfg.MaxDeliver &&
			have.MaxAckPending == cfg.MaxAckPending && have.FilterSubject == cfg.FilterSubject {
			return c, nil
		}
		b.log.Info("bus: reconciling drifted consumer", "stream", cfg.Stream, "consumer", cfg.Durable,
			"ack_wait", have.AckWait, "max_deliver", have.MaxDeliver, "max_ack_pending", have.MaxAckPending,
			"filter", have.FilterSubject)
		have.AckWait, have.MaxDeliver, have.MaxAckPending = cfg.AckWait, cfg.MaxDeliver, cfg.MaxAckPending
		have.FilterSubject = cfg.FilterSubject
		c, err = s.UpdateConsumer(ctx, have)
		if err != nil {
			return nil, fmt.Errorf("update consumer %q on stream %q: %w", cfg.Durable, cfg.Stream, mapErr(err))
		}
		return c, nil
	}
	return nil, fmt.Errorf("consumer %q on stream %q: created and deleted concurrently", cfg.Durable, cfg.Stream)
}

// errRetakeOver: the push consumer changed while it was being taken over.
var errRetakeOver = errors.New("consumer changed during the take-over")

// takeOver replaces a push consumer of the durable's name, the reference
// runner's (a Python class moving to a Go runner), by a pull consumer that
// starts right after its acknowledgement floor: the events the reference
// runner handled are not replayed and none it left unacknowledged is
// skipped. (Events above the floor that it acknowledged out of order are
// delivered again; the step claims absorb them.) The push consumer is
// deleted, so reference runners still bound to it stop receiving.
func (b *Bus) takeOver(ctx context.Context, s jetstream.Stream, cfg bus.ConsumerConfig) (jetstream.Consumer, error) {
	pc, err := b.js.PushConsumer(ctx, cfg.Stream, cfg.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrNotPushConsumer) {
		return nil, errRetakeOver // another replica replaced it first
	}
	if err != nil {
		return nil, fmt.Errorf("push consumer %q on stream %q: %w", cfg.Durable, cfg.Stream, mapErr(err))
	}
	info, err := pc.Info(ctx)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, errRetakeOver
	}
	if err != nil {
		return nil, fmt.Errorf("push consumer %q on stream %q: %w", cfg.Durable, cfg.Stream, mapErr(err))
	}
	start := info.AckFloor.Stream + 1
	if err := s.DeleteConsumer(ctx, cfg.Durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("deleting the push consumer %q on stream %q: %w", cfg.Durable, cfg.Stream, mapErr(err))
	}
	jc := consumerConfig(cfg)
	jc.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
	jc.OptStartSeq = start
	nc, err := s.CreateConsumer(ctx, jc)
	if errors.Is(err, jetstream.ErrConsumerExists) {
		return nil, errRetakeOver // another replica created the pull consumer
	}
	if err != nil {
		return nil, fmt.Errorf("replacing the push consumer %q on stream %q: %w", cfg.Durable, cfg.Stream, mapErr(err))
	}
	b.log.Warn("bus: took over the reference runner's push consumer: replaced it by a pull consumer that starts after its acknowledged events",
		"stream", cfg.Stream, "consumer", cfg.Durable, "deliver_subject", info.Config.DeliverSubject,
		"deliver_group", info.Config.DeliverGroup, "ack_floor_stream_seq", info.AckFloor.Stream,
		"start_seq", start, "unacknowledged", info.NumAckPending, "undelivered", info.NumPending)
	return nc, nil
}

// Consume starts or joins the durable (a pull consumer shared by all its
// Consume calls, so they split its messages like a queue group); see
// bus.Streams.
func (b *Bus) Consume(ctx context.Context, cfg bus.ConsumerConfig, h func(bus.Delivery)) (bus.Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("bus: Consume %q with a nil handler", cfg.Durable)
	}
	if b.isClosed() {
		return nil, bus.ErrClosed
	}
	cfg = cfg.WithDefaults()
	jc, err := b.durable(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c := &consumer{b: b, jc: jc, cfg: cfg, maxDeliver: cfg.MaxDeliver, lost: make(chan error, 1)}
	cb := func(m jetstream.Msg) {
		if c.stopping.Load() {
			c.hold(m) // see below; checked first so Stop need not win the lock
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.stopped {
			// Pulled into the client but never handed over: Stop gives it
			// back once the subscription is gone.
			c.hold(m)
			return
		}
		h(b.delivery(m))
	}
	pull := b.cfg.PullMaxMessages
	if pull <= 0 {
		pull = DefaultPullMaxMessages
	}
	// A heartbeat every 5 s (the client's default is 15 s) notices a
	// consumer gone without notice within 10 s.
	c.cc, err = jc.Consume(cb, jetstream.PullMaxMessages(pull), jetstream.PullHeartbeat(5*time.Second), jetstream.ConsumeErrHandler(func(cc jetstream.ConsumeContext, err error) {
		if errors.Is(err, jetstream.ErrConsumerDeleted) {
			// Terminal: the client stops pulling. Say so, once, or the
			// consumer's owner would wait for deliveries that never come.
			b.log.Error("bus: consumer deleted on the server", "stream", cfg.Stream, "consumer", cfg.Durable, "err", err)
			c.reportLost(cfg)
			return
		}
		b.log.Warn("bus: consumer error", "stream", cfg.Stream, "consumer", cfg.Durable, "err", err)
		if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoHeartbeat) {
			// The server's "consumer deleted" notice is sent only to the
			// pull request open at the deletion; one that was being renewed
			// then misses it, and the client keeps pulling from nothing.
			c.probe(cc)
		}
	}))
	if err != nil {
		return nil, fmt.Errorf("consume %q on stream %q: %w", cfg.Durable, cfg.Stream, mapErr(err))
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		c.cc.Stop()
		return nil, bus.ErrClosed
	}
	b.consumers[c] = struct{}{}
	b.mu.Unlock()
	return c, nil
}

// Stop stops the consumption and waits for the handler call in flight. The
// messages already pulled into the client but not handed to the handler are
// nak'ed once the subscription is gone, so another consumer gets them at
// once rather than after AckWait, without spending their deliveries.
func (c *consumer) Stop() error {
	c.once.Do(func() {
		c.stopping.Store(true)
		c.mu.Lock() // waits for the handler call in flight
		c.stopped = true
		c.mu.Unlock()
		// Drain, not Stop: Stop drops the client's buffer unacked, Drain
		// passes it to the callback, which holds it. Drain ends once the
		// server has the unsubscription, so the naks below cannot come
		// back to this consumer.
		c.cc.Drain()
		select {
		case <-c.cc.Closed():
		case <-time.After(5 * time.Second):
			c.b.log.Warn("bus: consumer did not close within 5s")
		}
		c.release()
		c.probes.Wait()
		c.b.mu.Lock()
		delete(c.b.consumers, c)
		c.b.mu.Unlock()
	})
	return nil
}

func (c *consumer) reportLost(cfg bus.ConsumerConfig) {
	select {
	case c.lost <- fmt.Errorf("%w: consumer %q on stream %q was deleted", bus.ErrConsumerLost, cfg.Durable, cfg.Stream):
	default:
	}
}

// probe asks the server, once at a time, whether the consumer still
// exists, and reports it lost if neither it nor its stream does.
func (c *consumer) probe(cc jetstream.ConsumeContext) {
	if c.stopping.Load() || !c.probing.CompareAndSwap(false, true) {
		return
	}
	c.probes.Go(func() {
		defer c.probing.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := c.jc.Info(ctx)
		if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			c.b.log.Error("bus: consumer gone on the server", "stream", c.cfg.Stream, "consumer", c.cfg.Durable, "err", err)
			cc.Stop()
			c.reportLost(c.cfg)
		}
	})
}

// Lost implements bus.LossReporter.
func (c *consumer) Lost() <-chan error { return c.lost }

// delivery implements bus.Delivery over a JetStream message.
type delivery struct {
	b       *Bus
	m       jetstream.Msg
	msg     *bus.Msg
	once    sync.Once
	md      *jetstream.MsgMetadata
	mu      sync.Mutex
	settled bool
}

func (b *Bus) delivery(m jetstream.Msg) *delivery {
	return &delivery{
		b:   b,
		m:   m,
		msg: &bus.Msg{Subject: m.Subject(), Header: bus.Header(m.Headers()), Data: m.Data()},
	}
}

// meta parses the ack subject's metadata on first use, not per message.
func (d *delivery) meta() *jetstream.MsgMetadata {
	d.once.Do(func() {
		md, err := d.m.Metadata()
		if err != nil { // not a JetStream reply subject; should not happen
			d.b.log.Warn("bus: delivery without metadata", "subject", d.m.Subject(), "err", err)
			md = &jetstream.MsgMetadata{}
		}
		d.md = md
	})
	return d.md
}

func (d *delivery) Msg() *bus.Msg        { return d.msg }
func (d *delivery) Seq() uint64          { return d.meta().Sequence.Stream }
func (d *delivery) NumDelivered() uint64 { return d.meta().NumDelivered }

// settle runs f unless d was settled; final marks d settled when f succeeds.
func (d *delivery) settle(final bool, f func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.settled {
		return fmt.Errorf("message %d of stream %q: %w", d.Seq(), d.meta().Stream, bus.ErrSettled)
	}
	if err := f(); err != nil {
		if errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			d.settled = true
			return fmt.Errorf("message %d of stream %q: %w", d.Seq(), d.meta().Stream, bus.ErrSettled)
		}
		return fmt.Errorf("message %d of stream %q: %w", d.Seq(), d.meta().Stream, mapErr(err))
	}
	if final {
		d.settled = true
	}
	return nil
}

// Ack acknowledges the message. It returns once the ack is sent, not
// confirmed: a lost ack means one redelivery, which idempotency absorbs.
func (d *delivery) Ack(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.settle(true, d.m.Ack)
}

// Nak asks for redelivery after delay.
func (d *delivery) Nak(delay time.Duration) error {
	return d.settle(true, func() error {
		if delay > 0 {
			return d.m.NakWithDelay(delay)
		}
		return d.m.Nak()
	})
}

// InProgress restarts the server's ack-wait timer.
func (d *delivery) InProgress() error { return d.settle(false, d.m.InProgress) }

// Term stops redelivery. The reason reaches the server's advisory on
// nats-server 2.10.4+; older servers ignore a "+TERM" that carries a reason
// (the message would be redelivered), so there it is only logged.
func (d *delivery) Term(reason string) error {
	return d.settle(true, func() error {
		if reason == "" || !serverAtLeast(d.b.nc.ConnectedServerVersion(), 2, 10, 4) {
			if reason != "" {
				d.b.log.Info("bus: message terminated", "stream", d.meta().Stream, "seq", d.Seq(), "reason", reason)
			}
			return d.m.Term()
		}
		return d.m.TermWithReason(reason)
	})
}

// serverAtLeast reports whether version ("2.9.10") is at least
// major.minor.patch; an unparsable version counts as old.
func serverAtLeast(version string, major, minor, patch int) bool {
	var v [3]int
	if n, _ := fmt.Sscanf(version, "%d.%d.%d", &v[0], &v[1], &v[2]); n < 2 {
		return false
	}
	for i, w := range [3]int{major, minor, patch} {
		if v[i] != w {
			return v[i] > w
		}
	}
	return true
}

// DeadLetter republishes the message to the dead-letter subject and then
// terminates it; if the republish fails the message stays unsettled.
func (d *delivery) DeadLetter(ctx context.Context, reason string) error {
	d.mu.Lock()
	settled := d.settled
	d.mu.Unlock()
	if settled {
		return fmt.Errorf("message %d of stream %q: %w", d.Seq(), d.meta().Stream, bus.ErrSettled)
	}
	b := d.b
	dl := b.cfg.DeadLetters
	if err := b.ensureDeadLetters(ctx); err != nil {
		return fmt.Errorf("dead letter of message %d: %w", d.Seq(), err)
	}
	letter, id := dl.Letter(d.msg, d.meta().Stream, d.Seq(), d.NumDelivered(), reason)
	letter = bus.Fit(letter, b.MaxPayload())
	if _, err := b.PublishStream(ctx, letter, id); err != nil {
		if errors.Is(err, bus.ErrNoResponders) { // the stream went away: ensure it next time
			b.mu.Lock()
			b.dlReady = false
			b.mu.Unlock()
		}
		return fmt.Errorf("dead letter of message %d: %w", d.Seq(), err)
	}
	b.log.Warn("bus: message dead-lettered", "stream", d.meta().Stream, "seq", d.Seq(),
		"subject", d.msg.Subject, "reason", reason)
	return d.Term("dead letter: " + reason)
}

func (b *Bus) ensureDeadLetters(ctx context.Context) error {
	b.mu.Lock()
	ready := b.dlReady
	b.mu.Unlock()
	if ready {
		return nil
	}
	if err := b.EnsureStream(ctx, b.cfg.DeadLetters.StreamConfig()); err != nil {
		return err
	}
	b.mu.Lock()
	b.dlReady = true
	b.mu.Unlock()
	return nil
}
