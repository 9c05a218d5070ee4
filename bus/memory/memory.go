package memory

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"github.com/saap-go/agent/bus"
)

// DefaultMaxPayload is the max payload of a Bus without Options.MaxPayload:
// 1 MiB, the nats-server default.
const DefaultMaxPayload = 1 << 20

// Options configure a Bus. The zero value is an automatic bus on the wall
// clock.
type Options struct {
	// Clock measures ack waits, Nak delays, the dedupe window and MaxAge.
	// nil means the wall clock; pass a *ManualClock to move time by hand.
	Clock Clock
	// Manual holds every delivery, core or durable, until Deliver or
	// DeliverAll hands it over in the calling goroutine.
	Manual bool
	// MaxPayload is the largest message (data plus encoded headers) in
	// bytes; 0 means DefaultMaxPayload.
	MaxPayload int
	// DeadLetters says where Delivery.DeadLetter republishes; zero value:
	// bus.DefaultDeadLetters.
	DeadLetters bus.DeadLetters
	// Logger receives warnings (nil: slog.Default()).
	Logger *slog.Logger
}

// Bus is an in-memory bus.Bus. Create it with New; it needs no Close to be
// garbage collected, but Close ends its timers and goroutines.
type Bus struct {
	opts  Options
	clock Clock
	log   *slog.Logger

	mu      sync.Mutex
	cond    *sync.Cond // signalled when a mailbox goes idle
	closed  bool
	nextID  uint64
	subs    []*sub // in subscription order
	groupRR map[string]int
	streams map[string]*stream
	order   []*stream // streams sorted by name: the capture order
	queue   []*task   // Manual mode: pending deliveries in publish order, from head on
	head    int       // the queue is popped by index so its array is reused
	free    []*task   // spent tasks for reuse: a delivery allocates none
	wg      sync.WaitGroup
}

var _ bus.Bus = (*Bus)(nil)

// New returns an in-memory bus.
func New(o Options) *Bus {
	if o.Clock == nil {
		o.Clock = RealClock()
	}
	if o.MaxPayload <= 0 {
		o.MaxPayload = DefaultMaxPayload
	}
	if o.DeadLetters == (bus.DeadLetters{}) {
		o.DeadLetters = bus.DefaultDeadLetters()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	b := &Bus{
		opts:    o,
		clock:   o.Clock,
		log:     o.Logger,
		groupRR: map[string]int{},
		streams: map[string]*stream{},
	}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// MaxPayload returns the configured max payload.
func (b *Bus) MaxPayload() int { return b.opts.MaxPayload }

// Clock returns the bus's clock.
func (b *Bus) Clock() Clock { return b.clock }

// mailbox serialises the handler calls of one subscription or consumer
// member, as a NATS subscription does. In automatic mode a goroutine drains
// it while it is non-empty; in Manual mode it only counts calls in flight.
type mailbox struct {
	tasks   []*task
	running bool // a drain goroutine exists
	busy    int  // handler calls in flight
}

func (m *mailbox) idle() bool { return !m.running && m.busy == 0 }

// task is one pending delivery: a core message to a subscription, or a
// stream message to a consumer member.
type task struct {
	sub *sub
	msg *bus.Msg

	member *member
	seq    uint64
}

// newTask returns a task from the free list, or a new one. b.mu is held.
func (b *Bus) newTask() *task {
	if n := len(b.free); n > 0 {
		t := b.free[n-1]
		b.free[n-1] = nil
		b.free = b.free[:n-1]
		return t
	}
	return &task{}
}

// release returns a spent task (prepared, dropped) to the free list. b.mu
// is held.
func (b *Bus) release(t *task) {
	*t = task{}
	if len(b.free) < 256 {
		b.free = append(b.free, t)
	}
}

func (t *task) box() *mailbox {
	if t.sub != nil {
		return &t.sub.mb
	}
	return &t.member.mb
}

// dispatch hands t to its target. b.mu is held.
func (b *Bus) dispatch(t *task) {
	if t.sub != nil && t.sub.direct != nil {
		select { // internal reply inboxes never block and never queue
		case t.sub.direct <- t.msg:
		default:
		}
		return
	}
	if b.opts.Manual {
		b.queue = append(b.queue, t)
		return
	}
	mb := t.box()
	mb.tasks = append(mb.tasks, t)
	if !mb.running {
		mb.running = true
		b.wg.Add(1)
		go b.drain(mb)
	}
}

// drain runs the tasks of mb one at a time until it is empty.
func (b *Bus) drain(mb *mailbox) {
	defer b.wg.Done()
	b.mu.Lock()
	for {
		if len(mb.tasks) == 0 || b.closed {
			mb.tasks = nil
			mb.running = false
			b.cond.Broadcast()
			b.mu.Unlock()
			return
		}
		t := mb.tasks[0]
		mb.tasks[0] = nil
		mb.tasks = mb.tasks[1:]
		c, ok := b.prepare(t)
		if !ok {
			continue
		}
		mb.busy++
		b.mu.Unlock()
		c.run()
		b.mu.Lock()
		mb.busy--
	}
}

// call is one handler call to make: a core message to a subscription, or a
// delivery to a consumer member. A value, so preparing one allocates
// nothing.
type call struct {
	sub func(*bus.Msg)
	msg *bus.Msg
	con func(bus.Delivery)
	d   *delivery
}

func (c call) run() {
	if c.sub != nil {
		c.sub(c.msg)
		return
	}
	c.con(c.d)
}

// prepare turns t into the handler call to make; ok is false if t went
// stale (unsubscribed, stopped, acked meanwhile). Either way t is spent and
// back on the free list. b.mu is held.
func (b *Bus) prepare(t *task) (c call, ok bool) {
	defer b.release(t)
	if t.sub != nil {
		if t.sub.closed {
			return call{}, false
		}
		return call{sub: t.sub.h, msg: t.msg}, true
	}
	d := b.handOut(t)
	if d == nil {
		return call{}, false
	}
	return call{con: t.member.h, d: d}, true
}

// Deliver hands over the oldest pending delivery, core or durable, calling
// its handler in the calling goroutine, and reports whether there was one.
// Handlers may publish, subscribe and settle from inside (those deliveries
// queue behind the current ones). Only Manual buses hold deliveries; on an
// automatic bus Deliver returns false.
func (b *Bus) Deliver(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	b.mu.Lock()
	var (
		c  call
		mb *mailbox
	)
	for b.head < len(b.queue) && !b.closed && mb == nil {
		t := b.queue[b.head]
		b.queue[b.head] = nil
		b.head++
		if b.head == len(b.queue) {
			b.queue, b.head = b.queue[:0], 0
		}
		box := t.box()
		if prepared, ok := b.prepare(t); ok {
			c, mb = prepared, box
		}
	}
	if mb == nil {
		b.mu.Unlock()
		return false
	}
	mb.busy++
	b.mu.Unlock()
	defer b.done(mb)
	c.run()
	return true
}

// done ends a handler call that Deliver made, even one that panicked.
func (b *Bus) done(mb *mailbox) {
	b.mu.Lock()
	mb.busy--
	b.cond.Broadcast()
	b.mu.Unlock()
}

// DeliverAll calls Deliver until nothing is pending or ctx is done, and
// returns the number of deliveries made, including those that handlers
// caused along the way.
func (b *Bus) DeliverAll(ctx context.Context) int {
	n := 0
	for b.Deliver(ctx) {
		n++
	}
	return n
}

// Pending returns the number of deliveries a Manual bus holds (some may turn
// out stale when delivered).
func (b *Bus) Pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue) - b.head
}

// Close stops all subscriptions, consumers and timers, and waits for
// handler calls in flight (so do not call it from a handler). Later calls
// return bus.ErrClosed.
func (b *Bus) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.queue, b.head = nil, 0
	for _, s := range b.subs {
		s.closed = true
	}
	b.subs = nil
	for _, st := range b.streams {
		for _, c := range st.consumers {
			c.shutdown()
		}
	}
	b.cond.Broadcast()
	b.mu.Unlock()
	b.wg.Wait()
	return nil
}

func (b *Bus) id() uint64 {
	b.nextID++
	return b.nextID
}

// sub is a core subscription.
type sub struct {
	b       *Bus
	id      uint64
	pattern string
	queue   string
	h       func(*bus.Msg)
	direct  chan *bus.Msg // internal request inbox
	closed  bool
	mb      mailbox
}

// Subscribe registers h for subjects matching pattern; see bus.Subscriber.
// ctx is not used after Subscribe returns.
func (b *Bus) Subscribe(ctx context.Context, pattern, queue string, h func(*bus.Msg)) (bus.Subscription, error) {
	if err := bus.CheckSubscribe(pattern, queue, h); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, bus.ErrClosed
	}
	s := &sub{b: b, id: b.id(), pattern: pattern, queue: queue, h: h}
	b.subs = append(b.subs, s)
	return s, nil
}

// Unsubscribe removes the subscription; pending deliveries to it are dropped.
func (s *sub) Unsubscribe() error {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.mb.tasks = nil
	for i, x := range b.subs {
		if x == s {
			b.subs = append(b.subs[:i:i], b.subs[i+1:]...)
			break
		}
	}
	return nil
}

// routeCore dispatches m to every matching subscription, one member per
// queue group (round robin), and reports how many got it. b.mu is held.
func (b *Bus) routeCore(m *bus.Msg) int {
	n := 0
	var groups map[string][]*sub
	var order []string
	for _, s := range b.subs {
		if !bus.Match(s.pattern, m.Subject) {
			continue
		}
		if s.queue == "" {
			b.dispatchCore(s, m)
			n++
			continue
		}
		key := s.pattern + " " + s.queue
		if groups == nil {
			groups = map[string][]*sub{}
		}
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], s)
	}
	for _, key := range order {
		members := groups[key]
		i := b.groupRR[key] % len(members)
		b.groupRR[key]++
		b.dispatchCore(members[i], m)
		n++
	}
	return n
}

// dispatchCore hands s its own Msg, sharing m's header and data (the bus's
// private copy, read-only from here on). b.mu is held.
func (b *Bus) dispatchCore(s *sub, m *bus.Msg) {
	t := b.newTask()
	t.sub, t.msg = s, share(m)
	b.dispatch(t)
}

// Publish delivers m to the matching core subscriptions; see bus.Publisher.
func (b *Bus) Publish(ctx context.Context, m *bus.Msg) error {
	m, err := b.outgoing(ctx, m)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return bus.ErrClosed
	}
	b.routeCore(m)
	return nil
}

// outgoing checks m before anything else happens and returns the copy to
// send, with the trace context of ctx injected.
func (b *Bus) outgoing(ctx context.Context, m *bus.Msg) (*bus.Msg, error) {
	if err := bus.CheckMsg(m, b.opts.MaxPayload); err != nil {
		return nil, err
	}
	return b.ready(ctx, copyMsg(m, ""))
}

// ready checks ctx and injects its trace context into c, a private copy.
func (b *Bus) ready(ctx context.Context, c *bus.Msg) (*bus.Msg, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.Header = bus.InjectTrace(ctx, c.Header)
	return c, nil
}

// Request publishes m with a fresh reply subject and waits for the first
// reply; see bus.Requester. Without a deadline on ctx it waits
// bus.DefaultRequestTimeout. On a Manual bus the request is handed to the
// responders at once, in the calling goroutine, since a caller blocked in
// Request could not call Deliver.
func (b *Bus) Request(ctx context.Context, m *bus.Msg) (*bus.Msg, error) {
	m, err := b.outgoing(ctx, m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := bus.RequestContext(ctx)
	defer cancel()

	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, bus.ErrClosed
	}
	inbox := &sub{b: b, id: b.id(), direct: make(chan *bus.Msg, 1)}
	inbox.pattern = "_INBOX.memory." + strconv.FormatUint(inbox.id, 10)
	b.subs = append(b.subs, inbox)
	m.Reply = inbox.pattern
	var calls []call
	n := 0
	if b.opts.Manual {
		saved, head := b.queue, b.head
		b.queue, b.head = nil, 0
		b.routeCore(m)
		for _, t := range b.queue {
			if c, ok := b.prepare(t); ok {
				calls = append(calls, c)
			}
		}
		b.queue, b.head = saved, head
		n = len(calls)
	} else {
		n = b.routeCore(m)
	}
	b.mu.Unlock()
	defer func() { _ = inbox.Unsubscribe() }()

	if n == 0 {
		return nil, fmt.Errorf("request to %q: %w", m.Subject, bus.ErrNoResponders)
	}
	for _, c := range calls {
		c.run()
	}
	select {
	case r := <-inbox.direct:
		if err := bus.ReplyError(m.Subject, r); err != nil {
			return r, err
		}
		return r, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("request to %q: %w", m.Subject, ctx.Err())
	}
}

// private is the bus's copy of a published message, with room for its
// Nats-Msg-Id value, so that the copy is one allocation besides the data
// and the header map.
type private struct {
	msg bus.Msg
	id  [1]string
}

// copyMsg is the bus's private copy of a caller's message, taken once on
// publish (the caller may reuse its buffers afterwards), with msgID (if
// any) as its Nats-Msg-Id header, as a server stores it. Everything handed
// out later shares its header and data; see share.
func copyMsg(m *bus.Msg, msgID string) *bus.Msg {
	p := &private{msg: bus.Msg{Subject: m.Subject, Reply: m.Reply, Data: append([]byte(nil), m.Data...)}}
	if msgID == "" {
		p.msg.Header = cloneHeader(m.Header, 0)
		return &p.msg
	}
	p.msg.Header = cloneHeader(m.Header, 1)
	p.id[0] = msgID
	p.msg.Header["Nats-Msg-Id"] = p.id[:]
	return &p.msg
}

// share returns a new Msg with m's header and data: receivers get their own
// Msg and share the immutable contents (bus.Msg documents them read-only).
func share(m *bus.Msg) *bus.Msg {
	c := *m
	return &c
}

// cloneHeader deep-copies h with one array for all values, leaving room
// for extra more keys. nil stays nil unless extra > 0.
func cloneHeader(h bus.Header, extra int) bus.Header {
	if h == nil && extra == 0 {
		return nil
	}
	n := 0
	for _, v := range h {
		n += len(v)
	}
	c := make(bus.Header, len(h)+extra)
	if n == 0 {
		for k := range h {
			c[k] = nil
		}
		return c
	}
	vals := make([]string, 0, n)
	for k, v := range h {
		i := len(vals)
		vals = append(vals, v...)
		c[k] = vals[i:len(vals):len(vals)] // capped: an Add never writes into a neighbour
	}
	return c
}
