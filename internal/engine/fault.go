package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/saap-go/agent/internal/runloop"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// ErrPermanent marks a failure that handling the event again cannot fix: an
// output over the server's max payload, a subject that cannot be built, an
// event that does not encode or decode. Handle ends the run at once with an
// ExceptionEvent and dead-letters the trigger. It is bus.ErrPermanent, so
// the two packages agree on what permanent means.
var ErrPermanent = bus.ErrPermanent

// Permanent wraps err so that errors.Is(err, ErrPermanent) holds; nil stays
// nil.
func Permanent(err error) error { return bus.Permanent(err) }

// IsPermanent reports whether err is a permanent failure: it wraps
// ErrPermanent, or a bus or topic error that no retry can fix (payload too
// large, invalid subject, invalid token, subject too long). Everything else
// (a store or bus that is unavailable, a timeout) is transient.
func IsPermanent(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrPermanent), errors.Is(err, bus.ErrPayloadTooLarge), errors.Is(err, bus.ErrInvalidSubject),
		errors.Is(err, topic.ErrInvalidToken), errors.Is(err, topic.ErrSubjectTooLong):
		return true
	}
	return false
}

// endedError reports that handling an event ended its run with an
// ExceptionEvent for a reason no retry can fix (a step's output that cannot
// be published): the event is dead-lettered with the reason, and no second
// ExceptionEvent is published.
type endedError struct{ reason string }

func (e *endedError) Error() string { return e.reason }

// retryError reports that a step with a retry policy failed and is to be
// tried again after delay: its trigger is Nak'ed with that delay, and the
// next delivery is the next attempt.
type retryError struct {
	step    string
	attempt int
	delay   time.Duration
	err     error
}

func (e *retryError) Error() string {
	return fmt.Sprintf("step %s failed (attempt %d), retried in %s: %v", e.step, e.attempt, e.delay, e.err)
}

func (e *retryError) Unwrap() error { return e.err }

// stepRetry reports whether err asks only for step retries (several steps
// of one trigger may fail together) and the shortest delay they ask for.
func stepRetry(err error) (time.Duration, bool) {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	delay, found := time.Duration(-1), false
	for _, err := range errs {
		if err == nil {
			continue
		}
		re, ok := err.(*retryError)
		if !ok {
			return 0, false
		}
		if !found || re.delay < delay {
			delay, found = re.delay, true
		}
	}
	return delay, found
}

// DefaultCrashLoopLimit is how many handlings of a redelivered event may be
// cut short (the process died during them) before the event is given up.
// Three: a process killed twice in a row by its infrastructure (a node
// drained, then the next one) while handling the same event is not a crash
// loop yet.
const DefaultCrashLoopLimit = 3

// WithCrashLoopLimit sets how many handlings of a redelivered event may be
// cut short by the process dying before the event is given up (default
// DefaultCrashLoopLimit); n < 1 keeps the default.
func WithCrashLoopLimit(n int) Option {
	return func(e *Engine) {
		if n >= 1 {
			e.crashLimit = int64(n)
		}
	}
}

// keyAttempt prefixes the run-context key that counts the handlings of a
// redelivered event that have begun and not ended.
const keyAttempt = "_attempt."

// attempt records that the handling of a redelivered event begins, and
// returns how many begun handlings of it have not ended, this one
// included, and done, which records that this one ended (whatever its
// outcome). Only redeliveries pay for it: a first delivery that kills the
// process is recorded by the server's delivery count, and its redelivery
// starts the count. An event whose handlings keep dying with the process
// (a crash loop) is given up after the crash-loop limit of them; events that
// were only in flight beside it were not handling when it died, since the
// runner handles redeliveries one at a time.
func (e *Engine) attempt(ctx context.Context, t topic.Agent) (int64, func(), error) {
	sc := store.RunKey{Class: e.class, Run: t.Run}.RunContext()
	key := keyAttempt + t.EventID
	n, err := e.store.Incr(ctx, sc, key, 1)
	if err != nil {
		return 0, nil, fmt.Errorf("dispatch: record the handling of a redelivered event: %w", err)
	}
	return n, func() {
		if err := e.store.Delete(context.WithoutCancel(ctx), sc, key); err != nil {
			e.log.WarnContext(ctx, "dispatch: the end of a redelivered event's handling could not be recorded", "run_id", t.Run, "error", err)
		}
	}, nil
}

// DefaultOutageBudget is how long, counted in the retry delays the engine
// asks for, a transient failure is retried before the run is ended.
const DefaultOutageBudget = runloop.DefaultOutageBudget

// WithOutageBudget sets how long transient failures (a store or bus that is
// unavailable) of one event are retried, counted as the sum of the Nak
// delays (default DefaultOutageBudget). When it is spent the run ends with
// an ExceptionEvent and the event is dead-lettered, never dropped in
// silence. A budget of 0 or less gives up at the first failure.
func WithOutageBudget(d time.Duration) Option { return func(e *Engine) { e.budget = d } }

// WithMaxDeliver tells the engine the consumer's MaxDeliver, so that it
// gives up (ExceptionEvent and dead letter) at the last delivery instead of
// letting the server drop the event in silence. 0 or less: the consumer
// redelivers without limit (MaxDeliver -1) and the outage budget alone
// decides.
func WithMaxDeliver(n int) Option { return func(e *Engine) { e.maxDeliver = n } }

// lastDelivery is the delivery count at which a failing event is given up:
// the first count whose retry delays so far exhaust the budget, or the one
// before the consumer's MaxDeliver if that comes first. The server's last
// delivery is kept for giving up: a process that crashes while handling an
// event (a crash loop) settles nothing, so only a later delivery can end
// the run visibly, and the server sends none after MaxDeliver.
func (e *Engine) lastDelivery() uint64 {
	return runloop.LastDelivery(e.budget, e.maxDeliver, e.backoff)
}

// failed settles a delivery whose handling returned err: a transient error
// is Nak'ed with backoff until the outage budget or MaxDeliver is spent; a
// permanent one, or the last try, ends the run and dead-letters the event.
func (e *Engine) failed(ctx context.Context, t topic.Agent, ev event.Event, d bus.Delivery, err error) {
	m := d.Msg()
	n := d.NumDelivered()
	if delay, ok := stepRetry(err); ok {
		// A step's own retry: the delivery count is its attempt count, and
		// the outage budget is not spent on it.
		if nerr := d.Nak(delay); nerr != nil {
			e.log.ErrorContext(ctx, "dispatch: nak failed", "subject", m.Subject, "error", nerr)
		}
		return
	}
	if ctx.Err() != nil && !IsPermanent(err) {
		// Cut short (shutdown): not a failure of the event; hand it back.
		e.log.InfoContext(context.WithoutCancel(ctx), "dispatch: handling cut short, handing the event back", "subject", m.Subject, "seq", d.Seq())
		if nerr := d.Nak(0); nerr != nil {
			e.log.WarnContext(context.WithoutCancel(ctx), "dispatch: nak failed", "subject", m.Subject, "error", nerr)
		}
		return
	}
	if !IsPermanent(err) && n < e.last {
		delay := e.backoff(n)
		e.log.WarnContext(ctx, "dispatch: handling failed, will retry",
			"subject", m.Subject, "seq", d.Seq(), "delivered", n, "retry_in", delay, "error", err)
		if nerr := d.Nak(delay); nerr != nil {
			e.log.ErrorContext(ctx, "dispatch: nak failed", "subject", m.Subject, "error", nerr)
		}
		return
	}
	var reason string
	if IsPermanent(err) {
		reason = fmt.Sprintf("dispatch: %s %s failed for good: %v", event.Name(ev), ev.EventBase().EventID, err)
	} else {
		reason = fmt.Sprintf("dispatch: %s %s still failing after %d deliveries (outage budget %s, max deliver %d): %v",
			event.Name(ev), ev.EventBase().EventID, n, e.budget, e.maxDeliver, err)
	}
	e.giveUp(ctx, t, ev, d, reason, "the agent could not handle this request and gave up")
}

// maxReason bounds the message of a give-up ExceptionEvent: the error may
// quote large inputs, and the exception itself must fit in a message.
const maxReason = 4096

// giveUp ends the run of ev with an ExceptionEvent, unless ev is itself
// terminal, and dead-letters the delivery with reason. If the dead letter
// cannot be stored the delivery is Nak'ed, so the next delivery tries again:
// the event is never dropped in silence.
//
// public is the ExceptionEvent's message: the reason may quote
// infrastructure details, so it goes only to the log and the dead letter.
func (e *Engine) giveUp(ctx context.Context, t topic.Agent, ev event.Event, d bus.Delivery, reason, public string) {
	if len(reason) > maxReason {
		reason = reason[:maxReason] + "…"
	}
	if ev != nil && !event.IsStop(ev) && !event.IsException(ev) {
		r := e.cache.get(store.RunKey{Class: e.class, Run: t.Run})
		if err := e.fail(ctx, r, t, ev, public+"; reference "+t.EventID); err != nil {
			e.log.ErrorContext(ctx, "dispatch: the run's ExceptionEvent could not be published", "run_id", t.Run, "error", err)
			reason += fmt.Sprintf(" (and the run's ExceptionEvent could not be published: %v)", err)
		}
	}
	e.log.ErrorContext(ctx, "dispatch: dead-lettering a control message", "subject", d.Msg().Subject, "reason", reason)
	if e.ic != nil {
		e.ic.DeadLettered(ctx, d.Msg().Subject, reason)
	}
	if err := d.DeadLetter(ctx, reason); err != nil && !errors.Is(err, bus.ErrSettled) {
		delay := e.backoff(d.NumDelivered())
		e.log.ErrorContext(ctx, "dispatch: dead letter failed; the event comes back", "subject", d.Msg().Subject,
			"retry_in", delay, "error", err)
		if nerr := d.Nak(delay); nerr != nil {
			e.log.ErrorContext(ctx, "dispatch: nak failed", "subject", d.Msg().Subject, "error", nerr)
		}
	}
}

// AbandonRuns ends every run held here that has not ended with an
// ExceptionEvent saying public, and returns how many it ended. The runner
// calls it when the class stream was deleted under it: the runs' records
// went with the stream, so they cannot go on, and they must not wait for
// ever.
func (e *Engine) AbandonRuns(ctx context.Context, public string) int {
	n := 0
	for _, r := range e.cache.all() {
		if r.terminated.Load() {
			continue
		}
		r.mu.Lock()
		t, known := r.t, r.filter != ""
		r.mu.Unlock()
		if !known {
			continue
		}
		b := bindingOf(e.class, t.Run, "", []string{"abandoned"})
		if id := r.ident.Load(); id != nil {
			b.secret = id.secret
		}
		exc := &event.ExceptionEvent{Message: public}
		exc.EventID = b.id("exception", 0)
		if _, err := e.publish(ctx, r, t, exc, origin{}); err != nil {
			e.log.ErrorContext(ctx, "dispatch: the ExceptionEvent of a run whose record was lost could not be published", "run_id", t.Run, "error", err)
			continue
		}
		n++
	}
	return n
}
