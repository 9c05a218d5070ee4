package memory

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/saap-go/agent/bus"
)

// consumer is a durable consumer: a cursor over its stream plus the state
// of every message handed out and not yet settled.
type consumer struct {
	b       *Bus
	st      *stream
	cfg     bus.ConsumerConfig
	next    uint64           // next stream sequence to consider
	pending map[uint64]*pend // handed out or due, not yet settled
	waiting []uint64         // due for redelivery, in order
	members []*member
	rr      int

	// One timer per consumer serves every ack wait and Nak delay: it is set
	// for the earliest due time and, when it fires, redelivers what is due
	// and sets itself for the next. A hand-out therefore costs no timer.
	timer    Timer
	timerDue time.Time
	timed    int    // pendings with a due time
	arms     uint64 // orders pendings due at the same instant
	expireFn func() // c.expire, bound once
}

type status int

const (
	queued      status = iota // a task for it is in a mailbox or the queue
	outstanding               // with a handler; ack-wait timer running
	delayed                   // naked with a delay; timer running
	waiting                   // due, waiting for a member
)

type pend struct {
	seq       uint64
	delivered uint64
	status    status
	gen       uint64    // bumped at each hand-out, so stale settles do nothing
	due       time.Time // ack wait or Nak delay ends; zero: none running
	armed     uint64    // when due was set, in the consumer's arm order
}

// setDue starts p's ack wait or Nak delay: due after d. b.mu is held.
func (c *consumer) setDue(p *pend, d time.Duration) {
	if p.due.IsZero() {
		c.timed++
	}
	c.arms++
	p.due, p.armed = c.b.clock.Now().Add(d), c.arms
	c.schedule(p.due)
}

// clearDue cancels p's ack wait or Nak delay. The consumer's timer is left
// to fire (and find nothing) rather than stopped and made anew for the next
// message. b.mu is held.
func (c *consumer) clearDue(p *pend) {
	if !p.due.IsZero() {
		p.due = time.Time{}
		c.timed--
	}
}

// schedule makes sure the timer fires by due. b.mu is held.
func (c *consumer) schedule(due time.Time) {
	if c.timer != nil && !due.Before(c.timerDue) {
		return
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	c.timer, c.timerDue = c.b.clock.AfterFunc(due.Sub(c.b.clock.Now()), c.expireFn), due
}

// expire redelivers the pendings whose ack wait or Nak delay ended, in due
// order (ties in arm order), and sets the timer for the next.
func (c *consumer) expire() {
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	now := b.clock.Now()
	if c.timer != nil && c.timerDue.After(now) {
		return // a replaced timer that fired anyway; the current one is set
	}
	c.timer = nil
	var due []*pend
	for _, p := range c.pending {
		if !p.due.IsZero() && !p.due.After(now) && (p.status == outstanding || p.status == delayed) {
			due = append(due, p)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		if !due[i].due.Equal(due[j].due) {
			return due[i].due.Before(due[j].due)
		}
		return due[i].armed < due[j].armed
	})
	for _, p := range due {
		if c.pending[p.seq] == p { // an earlier redelivery may have dropped it
			b.redeliver(c, p)
		}
	}
	if c.timed == 0 {
		return
	}
	var next time.Time
	for _, p := range c.pending {
		if !p.due.IsZero() && (next.IsZero() || p.due.Before(next)) {
			next = p.due
		}
	}
	if !next.IsZero() {
		c.schedule(next)
	}
}

// member is one Consume call on a durable.
type member struct {
	c       *consumer
	h       func(bus.Delivery)
	stopped bool
	mb      mailbox
}

// Consume starts or joins the durable consumer; see bus.Streams.
func (b *Bus) Consume(ctx context.Context, cfg bus.ConsumerConfig, h func(bus.Delivery)) (bus.Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("bus: Consume %q with a nil handler", cfg.Durable)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	b.mu.Lock()
	defer b.mu.Unlock()
	st, err := b.stream(cfg.Stream)
	if err != nil {
		return nil, err
	}
	c := st.consumers[cfg.Durable]
	if c == nil {
		c = &consumer{b: b, st: st, cfg: cfg, next: 1, pending: map[uint64]*pend{}}
		c.expireFn = c.expire
		st.addConsumer(c)
	} else {
		c.cfg = cfg // reconcile drift, as the NATS bus does
	}
	m := &member{c: c, h: h}
	c.members = append(c.members, m)
	b.fill(c)
	return m, nil
}

// DeleteConsumer removes the durable; see bus.Streams.
func (b *Bus) DeleteConsumer(ctx context.Context, stream, durable string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st, err := b.stream(stream)
	if err != nil {
		return err
	}
	c, ok := st.consumers[durable]
	if !ok {
		return fmt.Errorf("consumer %q on stream %q: %w", durable, stream, bus.ErrNotFound)
	}
	c.shutdown()
	st.removeConsumer(durable)
	return nil
}

// shutdown stops all members and timers of c. b.mu is held.
func (c *consumer) shutdown() {
	for _, m := range c.members {
		m.stopped = true
		m.mb.tasks = nil
	}
	c.members = nil
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.timed = 0
	c.pending = map[uint64]*pend{}
	c.waiting = nil
}

// Stop leaves the durable; its undelivered tasks go to the other members
// (or wait for the next one). It waits for handler calls in flight.
func (m *member) Stop() error {
	c := m.c
	b := c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if m.stopped {
		return nil
	}
	m.stopped = true
	for i, x := range c.members {
		if x == m {
			c.members = append(c.members[:i:i], c.members[i+1:]...)
			break
		}
	}
	// Take back what was queued for m and never handed out.
	var back []uint64
	for _, t := range m.mb.tasks {
		back = append(back, t.seq)
	}
	m.mb.tasks = nil
	live := b.queue[b.head:]
	kept := live[:0]
	for _, t := range live {
		if t.member == m {
			back = append(back, t.seq)
			continue
		}
		kept = append(kept, t)
	}
	clear(live[len(kept):])
	b.queue = b.queue[:b.head+len(kept)]
	for _, seq := range back {
		if p := c.pending[seq]; p != nil && p.status == queued {
			p.status = waiting
			c.waiting = append(c.waiting, seq)
		}
	}
	b.fill(c)
	for !m.mb.idle() && !b.closed {
		b.cond.Wait()
	}
	return nil
}

// pick returns the next member round robin. c has members.
func (c *consumer) pick() *member {
	m := c.members[c.rr%len(c.members)]
	c.rr++
	return m
}

// fill hands due redeliveries and then new messages to members, up to
// MaxAckPending unsettled messages. b.mu is held.
func (b *Bus) fill(c *consumer) {
	if len(c.members) == 0 {
		return
	}
	for len(c.waiting) > 0 {
		seq := c.waiting[0]
		c.waiting = c.waiting[1:]
		p := c.pending[seq]
		if p == nil || p.status != waiting {
			continue
		}
		if c.st.find(seq) == nil { // discarded by the stream's limits
			delete(c.pending, seq)
			continue
		}
		p.status = queued
		b.dispatchDurable(c, seq)
	}
	for len(c.pending) < c.cfg.MaxAckPending {
		s := c.st.next(c.next, c.cfg.FilterSubject)
		if s == nil {
			c.next = c.st.last + 1
			return
		}
		c.next = s.seq + 1
		c.pending[s.seq] = &pend{seq: s.seq, status: queued}
		b.dispatchDurable(c, s.seq)
	}
}

// dispatchDurable queues message seq for the next member. b.mu is held.
func (b *Bus) dispatchDurable(c *consumer, seq uint64) {
	t := b.newTask()
	t.member, t.seq = c.pick(), seq
	b.dispatch(t)
}

// handOut marks the task's message delivered and returns its Delivery, or
// nil if the task went stale. b.mu is held.
func (b *Bus) handOut(t *task) *delivery {
	m := t.member
	c := m.c
	p := c.pending[t.seq]
	if m.stopped || p == nil || p.status != queued {
		return nil
	}
	s := c.st.find(t.seq)
	if s == nil {
		delete(c.pending, t.seq)
		b.fill(c)
		return nil
	}
	p.delivered++
	p.gen++
	p.status = outstanding
	c.setDue(p, c.cfg.AckWait)
	// One allocation: the delivery holds its own Msg, whose header and data
	// are the stored message's (read-only, see bus.Msg).
	return &delivery{c: c, p: p, gen: p.gen, msg: *s.msg, seq: s.seq, delivered: p.delivered}
}

// redeliver makes p due again, or drops it once MaxDeliver deliveries were
// made (NATS then stops redelivering). b.mu is held.
func (b *Bus) redeliver(c *consumer, p *pend) {
	c.clearDue(p)
	if c.cfg.MaxDeliver > 0 && p.delivered >= uint64(c.cfg.MaxDeliver) {
		delete(c.pending, p.seq)
		b.log.Warn("bus: message reached max deliveries", "stream", c.st.cfg.Name,
			"consumer", c.cfg.Durable, "seq", p.seq, "deliveries", p.delivered)
	} else {
		p.status = waiting
		c.waiting = append(c.waiting, p.seq)
	}
	b.fill(c)
}

// delivery implements bus.Delivery.
type delivery struct {
	c         *consumer
	p         *pend
	gen       uint64
	msg       bus.Msg
	seq       uint64
	delivered uint64
	settled   bool
}

func (d *delivery) Msg() *bus.Msg        { return &d.msg }
func (d *delivery) Seq() uint64          { return d.seq }
func (d *delivery) NumDelivered() uint64 { return d.delivered }

// settle runs f with b.mu held if d is unsettled; current reports whether
// the message is still pending in the consumer.
func (d *delivery) settle(final bool, f func(current bool)) error {
	b := d.c.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return bus.ErrClosed
	}
	if d.settled {
		return fmt.Errorf("message %d of stream %q: %w", d.seq, d.c.st.cfg.Name, bus.ErrSettled)
	}
	if final {
		d.settled = true
	}
	f(d.c.pending[d.seq] == d.p)
	return nil
}

// Ack settles the message for good.
func (d *delivery) Ack(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.settle(true, func(current bool) {
		if current {
			d.c.clearDue(d.p)
			delete(d.c.pending, d.seq)
			d.c.b.fill(d.c)
		}
	})
}

// Nak makes the message due again after delay.
func (d *delivery) Nak(delay time.Duration) error {
	return d.settle(true, func(current bool) {
		p := d.p
		if !current || p.gen != d.gen || p.status != outstanding {
			return // a newer delivery owns the message
		}
		b := d.c.b
		if delay <= 0 {
			b.redeliver(d.c, p)
			return
		}
		p.status = delayed
		d.c.setDue(p, delay)
	})
}

// InProgress restarts the ack-wait timer.
func (d *delivery) InProgress() error {
	return d.settle(false, func(current bool) {
		if current && d.p.gen == d.gen && d.p.status == outstanding {
			d.c.setDue(d.p, d.c.cfg.AckWait)
		}
	})
}

// Term stops redelivery of the message.
func (d *delivery) Term(reason string) error {
	return d.settle(true, func(current bool) {
		if current {
			d.c.clearDue(d.p)
			delete(d.c.pending, d.seq)
			d.c.b.log.Info("bus: message terminated", "stream", d.c.st.cfg.Name,
				"consumer", d.c.cfg.Durable, "seq", d.seq, "reason", reason)
			d.c.b.fill(d.c)
		}
	})
}

// DeadLetter republishes the message to the dead-letter subject, then
// terminates it. If the republish fails the message stays unsettled, so it
// is redelivered rather than lost.
func (d *delivery) DeadLetter(ctx context.Context, reason string) error {
	b := d.c.b
	b.mu.Lock()
	settled := d.settled
	b.mu.Unlock()
	if settled {
		return fmt.Errorf("message %d of stream %q: %w", d.seq, d.c.st.cfg.Name, bus.ErrSettled)
	}
	dl := b.opts.DeadLetters
	letter, id := dl.Letter(&d.msg, d.c.st.cfg.Name, d.seq, d.delivered, reason)
	letter = bus.Fit(letter, b.opts.MaxPayload)
	if err := b.EnsureStream(ctx, dl.StreamConfig()); err != nil {
		return fmt.Errorf("dead letter of message %d: %w", d.seq, err)
	}
	if _, err := b.PublishStream(ctx, letter, id); err != nil {
		return fmt.Errorf("dead letter of message %d: %w", d.seq, err)
	}
	return d.Term("dead letter: " + reason)
}
