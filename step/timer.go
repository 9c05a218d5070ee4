package step

import (
	"time"

	"github.com/saap-go/agent/event"
)

// Sleep returns the request of a durable timer that fires d after the
// request is published (counted from its created_at, so a request
// republished after a crash falls due at the same time). A step returns it
// like any output; the run then waits, holding no goroutine, timer or
// memory in any process, and goes on with the *event.TimerFiredEvent that
// the runner publishes into it when the time comes, bound by a later step.
// Set Name on the result to tell several timers of one run apart.
//
// The timer is kept in the state store, so it fires after a restart of the
// runner, on whichever replica is running then, exactly once. A negative d
// fires at once.
func Sleep(d time.Duration) *event.TimerRequestEvent {
	return &event.TimerRequestEvent{DelaySeconds: max(d, 0).Seconds()}
}

// SleepUntil returns the request of a durable timer that fires at t, as
// Sleep does; a time in the past fires at once.
func SleepUntil(t time.Time) *event.TimerRequestEvent {
	if t.IsZero() {
		return &event.TimerRequestEvent{}
	}
	return &event.TimerRequestEvent{FireAt: t.UTC().Truncate(time.Microsecond)}
}
