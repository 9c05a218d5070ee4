package schedule_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/saap-go/agent/schedule"
	memstore "github.com/saap-go/agent/store/memory"
)

// Compiling a cron (zone included) and enumerating one 30 s window, as
// Cron.Occurrences does for every call; a Scheduler compiles once.
func BenchmarkOccurrences(b *testing.B) {
	for _, tz := range []string{"", "Europe/Zurich"} {
		c := every("* * * * *", tz)
		fixed := every("0 7 * * 1-5", tz)
		after := utc("2026-03-02T12:00:00Z")
		b.Run(fmt.Sprintf("minutely/tz=%q", tz), func(b *testing.B) {
			for b.Loop() {
				_, _ = c.Occurrences(after, after.Add(30*time.Second), 0)
			}
		})
		b.Run(fmt.Sprintf("fixed-hour/tz=%q", tz), func(b *testing.B) {
			for b.Loop() {
				_, _ = fixed.Occurrences(after, after.Add(30*time.Second), 0)
			}
		})
	}
}

// A leader's tick over 1,000 schedules with nothing due, on the in-memory
// store: the cost of looking.
func BenchmarkTickIdle(b *testing.B) {
	r := &rig{st: memstore.New(), clock: newClock(utc("2026-03-02T12:00:10Z")), log: &logBuf{}, name: "bench"}
	r.b = newMemBus()
	var src schedule.List
	for i := range 1000 {
		src = append(src, schedule.Schedule{Class: "Digest", AgentID: fmt.Sprintf("p%d", i), Cron: every("0 7 * * *", "Europe/Zurich")})
	}
	s, err := schedule.New(schedule.Config{Bus: r.b, Store: r.st, Source: src, Clock: r.clock, Tick: time.Second, Lease: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	_, _ = s.Tick(ctx)
	for b.Loop() {
		r.clock.Advance(time.Second)
		if _, err := s.Tick(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
