package schedule_test

import (
	"context"
	"fmt"
	"time"

	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/schedule"
	memstore "github.com/saap-go/agent/store/memory"
)

// A scheduler fires the occurrences of its schedules; here on the
// in-memory bus and store, with a clock moved by hand.
func ExampleScheduler() {
	ctx := context.Background()
	b, st := memory.New(memory.Options{}), memstore.New()
	src := schedule.NewStoreSource(st, "")
	cron, _ := schedule.ParseCron("0 7 * * 1-5", "Europe/Zurich")
	_ = src.Put(ctx, schedule.Schedule{Class: "Digest", AgentID: "daily", Cron: cron})

	clock := newClock(time.Date(2026, 3, 2, 5, 0, 0, 0, time.UTC)) // Monday, 06:00 in Zurich
	s, err := schedule.New(schedule.Config{Bus: b, Store: st, Source: src, Clock: clock})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, _ := s.Tick(ctx) // the first tick only sets the watermark
	fmt.Println("leader:", r.Leader, "fired:", r.Fired)
	clock.Advance(time.Hour + 30*time.Second) // 07:00:30 in Zurich
	r, _ = s.Tick(ctx)
	fmt.Println("fired:", r.Fired)
	// Output:
	// leader: true fired: 0
	// fired: 1
}

func ExampleFromConfig() {
	profile := []byte(`{"agent_id": "daily", "cron": {"minute": "30", "hour": "6", "day_of_month": "*", "month": "*", "day_of_week": "*", "timezone": "Europe/Zurich"}}`)
	s, ok, err := schedule.FromConfig("Digest", "daily", profile)
	fmt.Println(ok, err, s.Cron.Expression(), s.Cron.Timezone)
	// Output: true <nil> 30 6 * * * Europe/Zurich
}

func ExampleCron_Occurrences() {
	c, _ := schedule.ParseCron("*/20 9 * * *", "")
	occ, _ := c.Occurrences(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), 0)
	for _, t := range occ {
		fmt.Println(t.Format("15:04"))
	}
	// Output:
	// 09:20
	// 09:40
}
