// Package runloop is the one runtime loop the agent and process runners
// stand on: deliveries handed to a handler with bounded concurrency, each
// settled exactly once, a graceful stop that hands back what it cannot
// finish, and the defaults both runners share.
package runloop

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/internal/workers"
)

// The defaults of the options both runners have; an option of the same name
// means the same thing in both.
const (
	// DefaultConcurrency is how many deliveries a runner handles at once:
	// the reference's process-wide semaphore.
	DefaultConcurrency = 1000
	// DefaultShutdownTimeout bounds how long a graceful stop waits for the
	// deliveries in hand.
	DefaultShutdownTimeout = 25 * time.Second
	// DefaultAckWait is the runner consumer's AckWait.
	DefaultAckWait = bus.DefaultAckWait
	// DefaultMaxDeliver is the runner consumer's MaxDeliver: -1, no limit;
	// the outage budget decides when a failing delivery is given up.
	DefaultMaxDeliver = -1
	// DefaultOutageBudget is how long, counted in the retry delays asked
	// for, a transient failure is retried before the delivery is given up.
	DefaultOutageBudget = 10 * time.Minute
)

// Handler handles and settles one delivery. A handler that returns
// without settling (cut short by the stop) has its delivery handed back.
type Handler interface {
	Handle(ctx context.Context, d bus.Delivery)
}

// HandlerFunc is a Handler of a function.
type HandlerFunc func(ctx context.Context, d bus.Delivery)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, d bus.Delivery) { f(ctx, d) }

// maxIdle bounds the workers kept waiting after a burst.
const maxIdle = 64

// Server feeds deliveries to a handler with bounded concurrency and makes
// sure each is settled exactly once, also when a stop cuts it short.
type Server struct {
	h     Handler
	sem   chan struct{}
	log   *slog.Logger
	hctx  context.Context // handling context; cancelled at the stop's deadline
	abort context.CancelFunc

	stopping atomic.Bool
	stopped  chan struct{} // closed when the stop begins: waiters give up
	inflight sync.WaitGroup
	workers  *workers.Pool

	maxDeliver int // the consumer's MaxDeliver; -1: no limit
}

// New returns a server handing deliveries to h, at most concurrency at
// once, for a consumer whose MaxDeliver is maxDeliver (-1: no limit). The
// handling context is base without its cancellation: a delivery in hand
// is cut short only by the stop's deadline.
func New(base context.Context, h Handler, concurrency int, log *slog.Logger, maxDeliver int) *Server {
	ctx, cancel := context.WithCancel(context.WithoutCancel(base))
	return &Server{
		h: h, sem: make(chan struct{}, max(concurrency, 1)), log: log,
		hctx: ctx, abort: cancel, stopped: make(chan struct{}), workers: workers.New(maxIdle),
		maxDeliver: maxDeliver,
	}
}

// Deliver is the consumer's callback. The bus calls it serially: it takes
// a slot (backpressure when all are busy) and handles the delivery on its
// own goroutine, or on this one when concurrency is 1 or the delivery is a
// redelivery.
func (s *Server) Deliver(d bus.Delivery) {
	if s.stopping.Load() {
		s.handBack(d)
		return
	}
	select {
	case s.sem <- struct{}{}:
	case <-s.stopped:
		s.handBack(d)
		return
	}
	s.inflight.Add(1)
	run := func() {
		defer func() {
			<-s.sem
			s.inflight.Done()
		}()
		td := &trackedDelivery{Delivery: d}
		s.h.Handle(s.hctx, td)
		if !td.settled.Load() {
			// The handler returned without settling: the stop cut it
			// short. Hand it back so that another delivery retries it.
			s.handBack(d)
		}
	}
	if cap(s.sem) == 1 || d.NumDelivered() > 1 {
		// A redelivery may be the event that made the process die: it is
		// handled before the bus hands over the next event, so a crash
		// cuts short no other redelivery's handling and the handler can
		// tell the poison event from the ones that came back beside it.
		// With one slot, handling in order is all there is to it.
		run()
		return
	}
	s.workers.Go(run)
}

// handBack gives back a delivery this runner did not handle, for another
// delivery (see bus.HandBack: at its last delivery it is dead-lettered).
func (s *Server) handBack(d bus.Delivery) {
	ctx, cancel := context.WithTimeout(context.Background(), bus.HandBackTimeout)
	defer cancel()
	lettered, err := bus.HandBack(ctx, d, s.maxDeliver, "the runner stopped")
	switch {
	case err == nil || errors.Is(err, bus.ErrSettled):
	case lettered:
		s.log.Error("an event at its last delivery could not be dead-lettered when the runner stopped; it will not be delivered again",
			"seq", d.Seq(), "subject", d.Msg().Subject, "error", err)
	default:
		s.log.Warn("handing back an event", "seq", d.Seq(), "error", err)
	}
}

// Context is the handling context: not cancelled by the runner's context,
// only at the stop's deadline. Consumers beside the server's own that the
// same Shutdown stops hand it to their handling.
func (s *Server) Context() context.Context { return s.hctx }

// Refuse makes the server hand back every delivery it is given from now
// on; a stop begins with it.
func (s *Server) Refuse() {
	if s.stopping.CompareAndSwap(false, true) {
		close(s.stopped)
	}
}

// Shutdown stops the consumers, waits up to timeout for the deliveries in
// hand, then cancels the handling context so that the rest return and are
// handed back. The timeout counts from the start: a consumer's Stop waits
// for the callback in flight, which may be handling a delivery itself.
func (s *Server) Shutdown(timeout time.Duration, cs ...bus.Consumer) {
	s.Refuse()
	defer s.workers.Close()
	done := make(chan struct{})
	go func() {
		for _, c := range cs {
			if c == nil {
				continue
			}
			if err := c.Stop(); err != nil {
				s.log.Warn("stopping a consumer", "error", err)
			}
		}
		s.inflight.Wait()
		close(done)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		s.log.Warn("shutdown timeout: handing back the events still in hand")
		s.abort()
		<-done
	}
	s.abort()
}

// trackedDelivery records whether a delivery was settled.
type trackedDelivery struct {
	bus.Delivery
	settled atomic.Bool
}

// Ack is not cancelled by the stop's deadline: the event was handled, and
// acknowledging it spares a needless re-run.
func (d *trackedDelivery) Ack(ctx context.Context) error {
	d.settled.Store(true)
	return d.Delivery.Ack(context.WithoutCancel(ctx))
}

func (d *trackedDelivery) Nak(delay time.Duration) error {
	d.settled.Store(true)
	return d.Delivery.Nak(delay)
}

func (d *trackedDelivery) Term(reason string) error {
	d.settled.Store(true)
	return d.Delivery.Term(reason)
}

func (d *trackedDelivery) DeadLetter(ctx context.Context, reason string) error {
	d.settled.Store(true)
	return d.Delivery.DeadLetter(ctx, reason)
}

// LastDelivery is the delivery count at which a failing delivery is given
// up: the first count whose retry delays so far (backoff of each count)
// exhaust budget, or the one before the consumer's maxDeliver if that
// comes first. The server's last delivery is kept for giving up: a process
// that crashes while handling an event (a crash loop) settles nothing, so
// only a later delivery can end the work visibly, and the server sends
// none after MaxDeliver.
func LastDelivery(budget time.Duration, maxDeliver int, backoff func(uint64) time.Duration) uint64 {
	var spent time.Duration
	n := uint64(1)
	for ; n < 1<<20; n++ {
		if maxDeliver > 1 && n >= uint64(maxDeliver-1) {
			break
		}
		d := backoff(n)
		if d <= 0 {
			d = time.Second // a zero backoff must not make the budget endless
		}
		if spent+d > budget {
			break
		}
		spent += d
	}
	return n
}
