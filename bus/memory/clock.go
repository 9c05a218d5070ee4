package memory

import (
	"sort"
	"sync"
	"time"
)

// Clock is the bus's time source: ack-wait expiries, Nak delays, the
// dedupe window and MaxAge are measured on it.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once d has passed, on a goroutine of the clock's
	// choosing (ManualClock: the one calling Advance).
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc call.
type Timer interface {
	// Stop prevents the call; it reports whether the call was still pending.
	Stop() bool
}

// RealClock returns the wall clock.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// ManualClock is a Clock that moves only when Advance is called, so tests
// decide when ack waits expire and Nak delays end. Safe for concurrent use.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*manualTimer
}

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f for Now()+d; it runs inside the Advance call that
// reaches that time.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &manualTimer{c: c, due: c.now.Add(d), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock forward by d, calling every timer that falls due
// on the way in due order (ties in creation order), each with Now() at its
// due time, in the calling goroutine. Timers set by those calls run too if
// they fall due within d. Advance(0) runs the timers due now.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		sort.Slice(c.timers, func(i, j int) bool {
			a, b := c.timers[i], c.timers[j]
			if !a.due.Equal(b.due) {
				return a.due.Before(b.due)
			}
			return a.seq < b.seq
		})
		if len(c.timers) == 0 || c.timers[0].due.After(end) {
			break
		}
		t := c.timers[0]
		c.timers = c.timers[1:]
		if t.due.After(c.now) {
			c.now = t.due
		}
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	if end.After(c.now) {
		c.now = end
	}
	c.mu.Unlock()
}

// Timers returns the number of pending timers.
func (c *ManualClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

type manualTimer struct {
	c   *ManualClock
	due time.Time
	seq uint64
	f   func()
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}
