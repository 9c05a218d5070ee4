// Package schedule fires scheduled runs: for every occurrence of a
// profile's cron schedule it publishes a CronStartEvent to that profile
// (agent class and agent id), as the platform's scheduler does: on a
// thread of the profile's own, with no user, scheduled_for in UTC. An
// agent is schedulable when a start event of it is a CronStartEvent;
// discovery says so, and the configuration form then has a "cron" field.
//
// A Scheduler is a library type, and saap-gateway runs one with
// -scheduler. Run it on as many replicas as you like, on the agents' bus
// and state store:
//
//	src := schedule.NewStoreSource(st, "")
//	_ = src.Put(ctx, schedule.Schedule{Class: "Digest", AgentID: "daily",
//		Cron: schedule.Cron{Minute: "0", Hour: "7", DayOfMonth: "*", Month: "*", DayOfWeek: "1-5", Timezone: "Europe/Zurich"}})
//	s, err := schedule.New(schedule.Config{Bus: b, Store: st, Source: src})
//	if err != nil { ... }
//	go s.Run(ctx)
//
// How it stays exactly once, on any store.Store (JetStream KV by default):
//
//   - One leader by lease. Time is cut into slots of Config.Lease; the
//     first scheduler to record itself for a slot (an atomic create) leads
//     during it, and renews by recording itself for the next slot in the
//     second half of its own. When a leader dies its lease runs out with
//     its last slot, and a follower takes the next.
//   - A watermark. The leader fires the occurrences in (watermark, now]
//     and then moves the watermark to now, so an occurrence between two
//     ticks is never missed. A first tick ever only sets the watermark.
//   - A catch-up window. After downtime the window starts at most
//     Config.CatchUp back: missed occurrences within it fire once, late;
//     older ones are skipped and logged.
//   - A claim per occurrence. Before publishing, the leader claims the
//     occurrence in the store; a claimed and completed occurrence is never
//     published again, whoever leads. The event's ids are derived from the
//     occurrence (keyed with a secret kept in the store, so nobody can
//     guess a profile's thread), and the stream refuses a second message
//     on its subject: a leader that dies between claim and publish leaves
//     a pending claim that its successor publishes, and two leaders at
//     once (clock skew) still start one run.
//
// Schedules come from a Source: List is a fixed list, StoreSource keeps
// them in the state store for whatever edits profiles, and FromConfig
// reads the "cron" field of a profile's stored configuration.
//
// The cron positions are the five standard ones (github.com/robfig/cron
// reads them), in the schedule's IANA time zone, so "0 7 * * *" in
// Europe/Zurich stays at 07:00 local time across daylight saving. Across a
// clock change a schedule with a fixed hour keeps to the wall clock as cron
// does: a time that occurs twice runs once, a time the clocks skip runs at
// the change; one whose hour is "*" keeps to real time.
package schedule
