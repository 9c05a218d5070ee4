package event

import (
	"fmt"
	"math"
	"time"
)

// SDK extensions for durable timers. The Python reference has no timer
// events: a step there sleeps in its process. Here a step publishes a
// TimerRequestEvent and its run waits, holding nothing in any process,
// until the dispatcher publishes the matching TimerFiredEvent into it. A
// peer that does not know them skips them like any unknown event.

// TimerRequestEvent asks the dispatcher to wake the run at a time (FireAt)
// or after a delay counted from the request's created_at (DelaySeconds),
// an SDK extension. Exactly one of the two is set; step.Sleep and
// step.SleepUntil build it.
type TimerRequestEvent struct {
	ControlEvent
	// FireAt is when the timer fires; zero (null on the wire) when
	// DelaySeconds says it.
	FireAt time.Time `json:"fire_at"`
	// DelaySeconds is the wait from the request's created_at.
	DelaySeconds float64 `json:"delay_seconds"`
	// Name tells the run's timers apart; the fired event repeats it.
	Name string `json:"timer_name"`
}

// TimerFiredEvent is published into the run when the timer of request
// RequestEventID falls due (an SDK extension): once per request, with an
// event id derived from it, and created_at the due time.
type TimerFiredEvent struct {
	ControlEvent
	RequestEventID string `json:"request_event_id" event:"required"`
	// FireAt is the time the timer was set for.
	FireAt time.Time `json:"fire_at"`
	// Name is the request's timer_name.
	Name string `json:"timer_name"`
}

// IsTimerRequest reports whether e asks for a durable timer.
func IsTimerRequest(e Event) bool { return Has(e, "TimerRequestEvent") }

// IsTimerFired reports whether e is a durable timer's firing.
func IsTimerFired(e Event) bool { return Has(e, "TimerFiredEvent") }

// TimerDue returns when the timer t asks for fires: FireAt, or
// DelaySeconds after created (Unix nanoseconds, the request's created_at).
// Times are kept to the microsecond, as the wire keeps them, so a request
// read back from the stream falls due at the same instant. A request with
// neither or both, or with a delay that is not a finite number of seconds
// from 0 to 1e9, is an error.
func TimerDue(t *TimerRequestEvent, created int64) (time.Time, error) {
	switch {
	case t.FireAt.IsZero() && t.DelaySeconds == 0:
		// A zero delay is a timer due at once.
		return time.Unix(0, created).Truncate(time.Microsecond), nil
	case !t.FireAt.IsZero() && t.DelaySeconds != 0:
		return time.Time{}, fmt.Errorf("event: TimerRequestEvent %s sets both fire_at and delay_seconds", t.EventID)
	case !t.FireAt.IsZero():
		return t.FireAt.Truncate(time.Microsecond), nil
	}
	s := t.DelaySeconds
	if math.IsNaN(s) || math.IsInf(s, 0) || s < 0 || s > 1e9 {
		return time.Time{}, fmt.Errorf("event: TimerRequestEvent %s: delay_seconds must be from 0 to 1e9 seconds, not %v", t.EventID, s)
	}
	return time.Unix(0, created+int64(s*float64(time.Second))).Truncate(time.Microsecond), nil
}

func registerTimers() {
	MustRegister[TimerRequestEvent]()
	MustRegister[TimerFiredEvent]()
}
