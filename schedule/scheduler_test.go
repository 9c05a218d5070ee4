package schedule_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/schedule"
	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"
	"github.com/saap-go/agent/store/natskv"
	redisstore "github.com/saap-go/agent/store/redis"
	"github.com/saap-go/agent/topic"
)

// fakeClock moves only when the test says so.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func (c *fakeClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// After never fires: the tests call Tick themselves.
func (c *fakeClock) After(time.Duration) <-chan time.Time { return nil }

var seq atomic.Int64

// stores are the state stores every scheduler test runs on: in memory,
// JetStream KV on an embedded server (or NATS_URL) and Redis (REDIS_URL).
func stores(t *testing.T) map[string]func(t *testing.T) store.Store {
	return map[string]func(t *testing.T) store.Store{
		"memory": func(t *testing.T) store.Store { return memstore.New() },
		"natskv": func(t *testing.T) store.Store {
			b := natsBus(t)
			st, err := natskv.New(t.Context(), b.JetStream(), natskv.Config{
				Bucket: fmt.Sprintf("schedtest_%d_%d", os.Getpid(), seq.Add(1)), TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		"redis": func(t *testing.T) store.Store {
			url := os.Getenv("REDIS_URL")
			if url == "" {
				t.Skip("REDIS_URL not set")
			}
			opt, err := goredis.ParseURL(url)
			if err != nil {
				t.Fatal(err)
			}
			rdb := goredis.NewClient(opt)
			prefix := fmt.Sprintf("saap_schedtest:%d:%d:%d:", os.Getpid(), time.Now().UnixNano(), seq.Add(1))
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
				for iter.Next(ctx) {
					rdb.Del(ctx, iter.Val())
				}
				_ = rdb.Close()
			})
			st, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix, TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
	}
}

// embeddedNATS is the server natsURL started, shut down by TestMain.
var embeddedNATS *natsserver.Server

// natsURL is NATS_URL, or an embedded server's shared by the package's
// tests.
var natsURL = sync.OnceValues(func() (string, error) {
	if u := os.Getenv("NATS_URL"); u != "" {
		return u, nil
	}
	s, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		return "", err
	}
	embeddedNATS = s
	return s.URL(), nil
})

func natsBus(t *testing.T) *natsbus.Bus {
	t.Helper()
	url, err := natsURL()
	if err != nil {
		t.Fatal(err)
	}
	b, err := natsbus.Connect(natsbus.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func forEachStore(t *testing.T, f func(t *testing.T, st store.Store)) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) { f(t, open(t)) })
	}
}

func uniqueClass(prefix string) string { return fmt.Sprintf("%s%d%d", prefix, os.Getpid(), seq.Add(1)) }

// logBuf collects a scheduler's log.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type rig struct {
	b     bus.Bus
	st    store.Store
	clock *fakeClock
	log   *logBuf
	name  string
}

func newRig(t *testing.T, st store.Store, start time.Time) *rig {
	return &rig{b: newMemBus(), st: st, clock: newClock(start), log: &logBuf{}, name: uniqueClass("test")}
}

func newMemBus() bus.Bus { return memory.New(memory.Options{}) }

func (r *rig) scheduler(t *testing.T, src schedule.Source, mod ...func(*schedule.Config)) *schedule.Scheduler {
	t.Helper()
	cfg := schedule.Config{
		Bus: r.b, Store: r.st, Source: src, Name: r.name, Clock: r.clock,
		Tick: 10 * time.Second, Lease: time.Minute, CatchUp: 15 * time.Minute,
		Logger: slog.New(slog.NewTextHandler(r.log, nil)),
	}
	for _, m := range mod {
		m(&cfg)
	}
	s, err := schedule.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tick(t *testing.T, s *schedule.Scheduler) schedule.Report {
	t.Helper()
	r, err := s.Tick(t.Context())
	if err != nil {
		t.Fatalf("tick: %v", err)
	}
	return r
}

// fired returns the CronStartEvents in class's stream, with their subjects.
func fired(t *testing.T, b bus.Bus, class string) ([]*event.CronStartEvent, []topic.Agent) {
	t.Helper()
	msgs, err := bus.ReadAll(t.Context(), b, topic.StreamName(class), "agent."+class+".*.*.*.*.control_event.CronStartEvent.*")
	if err != nil {
		t.Fatal(err)
	}
	var evs []*event.CronStartEvent
	var tops []topic.Agent
	for _, m := range msgs {
		e, err := event.UnmarshalAs[event.CronStartEvent](m.Data)
		if err != nil {
			t.Fatal(err)
		}
		at, err := topic.ParseAgent(m.Subject)
		if err != nil {
			t.Fatal(err)
		}
		evs, tops = append(evs, e), append(tops, at)
	}
	return evs, tops
}

// occurrences counts the fired events per "agent_id scheduled_for".
func occurrences(t *testing.T, b bus.Bus, class string) map[string]int {
	evs, tops := fired(t, b, class)
	out := map[string]int{}
	for i, e := range evs {
		out[tops[i].ID+" "+e.ScheduledFor.UTC().Format("15:04")]++
	}
	return out
}

func TestSchedulerFiresOccurrences(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		r := newRig(t, st, utc("2026-03-02T12:00:10Z"))
		class := uniqueClass("Digest")
		s := r.scheduler(t, schedule.List{
			{Class: class, AgentID: "minutely", Cron: every("* * * * *", "")},
			{Class: class, AgentID: "even", Cron: every("*/2 * * * *", "")},
		})
		if rep := tick(t, s); !rep.Leader || rep.Fired != 0 {
			t.Fatalf("first tick: %+v; want the leader, nothing fired (it only sets the watermark)", rep)
		}
		r.clock.Set(utc("2026-03-02T12:05:10Z"))
		if rep := tick(t, s); rep.Fired != 7 {
			t.Errorf("second tick fired %d, want 5 + 2", rep.Fired)
		}
		if rep := tick(t, s); rep.Fired != 0 {
			t.Errorf("a tick at the same time fired %d again", rep.Fired)
		}
		r.clock.Advance(time.Minute)
		if rep := tick(t, s); rep.Fired != 2 {
			t.Errorf("a minute later: fired %d, want 2", rep.Fired)
		}

		evs, tops := fired(t, r.b, class)
		want := map[string]int{}
		for _, m := range []string{"01", "02", "03", "04", "05", "06"} {
			want["minutely 12:"+m] = 1
		}
		for _, m := range []string{"02", "04", "06"} {
			want["even 12:"+m] = 1
		}
		got := occurrences(t, r.b, class)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("fired\n got %v\nwant %v", got, want)
		}
		threads, runs := map[string]string{}, map[string]bool{}
		for i, e := range evs {
			at := tops[i]
			if e.User != nil || e.Locale != "de" || !e.ScheduledFor.Equal(e.ScheduledFor.UTC()) || e.EventID != at.EventID {
				t.Errorf("event %d: user %v, locale %q, scheduled_for %v, id %s on subject %s", i, e.User, e.Locale, e.ScheduledFor, e.EventID, at.EventID)
			}
			for _, id := range []string{at.Thread, at.Display, at.Run, at.EventID} {
				if !event.IsObjectID(id) {
					t.Errorf("id %q is not ObjectId-shaped", id)
				}
			}
			if th, ok := threads[at.ID]; ok && th != at.Thread {
				t.Errorf("profile %s runs on threads %s and %s; want one thread per profile", at.ID, th, at.Thread)
			}
			threads[at.ID] = at.Thread
			if runs[at.Run] {
				t.Errorf("run id %s used twice", at.Run)
			}
			runs[at.Run] = true
		}
		if threads["minutely"] == threads["even"] {
			t.Error("two profiles share a thread")
		}
	})
}

func TestSchedulerCatchUp(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		r := newRig(t, st, utc("2026-03-02T12:00:00Z"))
		class := uniqueClass("Digest")
		s := r.scheduler(t, schedule.List{{Class: class, AgentID: "p", Cron: every("* * * * *", "")}})
		tick(t, s)
		// Down for an hour: the 15 occurrences within the catch-up window
		// fire once, the 45 before it are skipped and logged.
		r.clock.Set(utc("2026-03-02T13:00:00Z"))
		rep := tick(t, s)
		if rep.Fired != 15 || rep.Skipped != 45 {
			t.Errorf("after an hour down: %+v; want 15 fired, 45 skipped", rep)
		}
		got := occurrences(t, r.b, class)
		if len(got) != 15 || got["p 12:46"] != 1 || got["p 13:00"] != 1 || got["p 12:45"] != 0 {
			t.Errorf("fired %v; want 12:46 to 13:00 once each", got)
		}
		if log := r.log.String(); !strings.Contains(log, "skipped occurrences older than the catch-up window") || !strings.Contains(log, "skipped=45") {
			t.Errorf("the skip is not logged:\n%s", log)
		}
		if rep := tick(t, s); rep.Fired != 0 || rep.Skipped != 0 {
			t.Errorf("the next tick: %+v", rep)
		}
	})
}

func TestSchedulerLeaderHandOver(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		r := newRig(t, st, utc("2026-03-02T12:00:05Z"))
		class := uniqueClass("Digest")
		src := schedule.List{{Class: class, AgentID: "p", Cron: every("* * * * *", "")}}
		a := r.scheduler(t, src, func(c *schedule.Config) { c.Holder = "a" })
		b := r.scheduler(t, src, func(c *schedule.Config) { c.Holder = "b" })
		if !tick(t, a).Leader {
			t.Fatal("the first scheduler does not lead")
		}
		// For ten leases both tick every 10 s: a renews ahead of every
		// slot's end, so b never leads.
		for range 60 {
			r.clock.Advance(10 * time.Second)
			rb := tick(t, b) // b first: at a slot's start it would take the slot unless a renewed
			if ra := tick(t, a); !ra.Leader || rb.Leader || rb.Fired != 0 {
				t.Fatalf("at %v: a %+v, b %+v; want a to keep leading", r.clock.Now(), ra, rb)
			}
		}
		if !a.Leader() || b.Leader() {
			t.Fatal("Leader() disagrees with the reports")
		}
		// a dies. b takes over when a's last slot ends, within one and a
		// half leases, and fires what a left, once.
		died := r.clock.Now()
		var took time.Time
		for took.IsZero() {
			r.clock.Advance(10 * time.Second)
			if rb := tick(t, b); rb.Leader {
				took = r.clock.Now()
				if rb.Fired < 1 {
					t.Errorf("the new leader fired %d on taking over", rb.Fired)
				}
			}
			if r.clock.Now().Sub(died) > 2*time.Minute {
				t.Fatal("b did not take over within two leases")
			}
		}
		if d := took.Sub(died); d > 90*time.Second+10*time.Second {
			t.Errorf("hand-over took %v, want at most 1.5 leases and a tick", d)
		}
		for range 12 {
			r.clock.Advance(10 * time.Second)
			if rb := tick(t, b); !rb.Leader {
				t.Fatal("b lost the lease")
			}
		}
		got := occurrences(t, r.b, class)
		first, last := utc("2026-03-02T12:01:00Z"), r.clock.Now().Truncate(time.Minute)
		for m := first; !m.After(last); m = m.Add(time.Minute) {
			if n := got["p "+m.Format("15:04")]; n != 1 {
				t.Errorf("occurrence %s fired %d times", m.Format("15:04"), n)
			}
		}
		if len(got) != int(last.Sub(first)/time.Minute)+1 {
			t.Errorf("fired %d occurrences, want %d: %v", len(got), int(last.Sub(first)/time.Minute)+1, got)
		}
	})
}

// flaky fails the operations it is told to, once each.
type flakyBus struct {
	bus.Bus
	failPublish atomic.Int32
}

func (f *flakyBus) PublishNew(ctx context.Context, m *bus.Msg, id string) (bus.PubAck, error) {
	if f.failPublish.Add(-1) >= 0 {
		return bus.PubAck{}, errors.New("injected: connection lost")
	}
	return f.Bus.PublishNew(ctx, m, id)
}

type flakyStore struct {
	store.Store
	failComplete  atomic.Int32
	everyoneLeads bool
}

func (f *flakyStore) Complete(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) error {
	if f.failComplete.Add(-1) >= 0 {
		return errors.New("injected: died after publishing")
	}
	return f.Store.Complete(ctx, run, step, key, o)
}

// Record grants every lease to everyone when told to: two leaders at once.
func (f *flakyStore) Record(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) (store.ClaimResult, error) {
	if f.everyoneLeads && step == "leader" {
		return store.ClaimResult{Status: store.Claimed}, nil
	}
	return f.Store.Record(ctx, run, step, key, o)
}

// A leader that fails between claim and publish, or between publish and
// completing the claim, leaves a pending claim; the next tick (or the next
// leader) publishes it, and the stream holds the event once.
func TestSchedulerRetriesPendingClaims(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		fs := &flakyStore{Store: st}
		r := newRig(t, fs, utc("2026-03-02T12:00:00Z"))
		fb := &flakyBus{Bus: r.b}
		r.b = fb
		class := uniqueClass("Digest")
		s := r.scheduler(t, schedule.List{{Class: class, AgentID: "p", Cron: every("* * * * *", "")}})
		tick(t, s)
		r.clock.Set(utc("2026-03-02T12:03:00Z"))
		fb.failPublish.Store(1)  // 12:01 is claimed, not published
		fs.failComplete.Store(1) // 12:02 is published, its claim not completed
		rep := tick(t, s)
		if rep.Failed != 2 || rep.Fired != 2 {
			t.Errorf("tick with failures: %+v; want 2 failed (12:01, 12:02), 2 fired (12:02, 12:03)", rep)
		}
		r.clock.Advance(10 * time.Second)
		rep = tick(t, s)
		if rep.Failed != 0 || rep.Fired != 1 {
			t.Errorf("the next tick: %+v; want 12:01 fired, 12:02 found in the stream", rep)
		}
		got := occurrences(t, r.b, class)
		if fmt.Sprint(got) != "map[p 12:01:1 p 12:02:1 p 12:03:1]" {
			t.Errorf("fired %v", got)
		}
	})
}

// An occurrence that keeps failing is tried every tick while it is within
// the catch-up window, then given up and logged; the others fire on time.
func TestSchedulerGivesUpAfterTheCatchUpWindow(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		r := newRig(t, st, utc("2026-03-02T12:00:00Z"))
		fb := &flakyBus{Bus: r.b}
		r.b = fb
		class := uniqueClass("Digest")
		s := r.scheduler(t, schedule.List{{Class: class, AgentID: "p", Cron: every("* * * * *", "")}})
		tick(t, s)
		r.clock.Set(utc("2026-03-02T12:01:00Z"))
		fb.failPublish.Store(1)
		if rep := tick(t, s); rep.Failed != 1 || rep.Fired != 0 {
			t.Fatalf("report %+v", rep)
		}
		for range 14 {
			r.clock.Advance(time.Minute)
			fb.failPublish.Store(1) // retries go first: 12:01 fails again
			if rep := tick(t, s); rep.Failed != 1 || rep.Fired != 1 {
				t.Fatalf("at %v: %+v; want 12:01 failed again and the new minute fired", r.clock.Now(), rep)
			}
		}
		r.clock.Advance(time.Minute) // 12:16: 12:01 is out of the window
		if rep := tick(t, s); rep.Skipped != 1 || rep.Failed != 0 || rep.Fired != 1 {
			t.Errorf("report %+v; want 12:01 given up, 12:16 fired", rep)
		}
		if !strings.Contains(r.log.String(), "gave up an occurrence") {
			t.Errorf("giving up is not logged:\n%s", r.log.String())
		}
		got := occurrences(t, r.b, class)
		if len(got) != 15 || got["p 12:01"] != 0 || got["p 12:02"] != 1 || got["p 12:16"] != 1 {
			t.Errorf("fired %v; want 12:02 to 12:16", got)
		}
	})
}

// Two schedulers that both believe they lead (clock skew, a lease store
// that lies) tick the same windows at the same time: every occurrence
// still starts one run.
func TestSchedulerTwoLeadersFireOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		fs := &flakyStore{Store: st, everyoneLeads: true}
		r := newRig(t, fs, utc("2026-03-02T12:00:00Z"))
		var src schedule.List
		class := uniqueClass("Digest")
		for i := range 5 {
			src = append(src, schedule.Schedule{Class: class, AgentID: fmt.Sprintf("p%d", i), Cron: every("* * * * *", "")})
		}
		a, b := r.scheduler(t, src), r.scheduler(t, src)
		tick(t, a)
		var total atomic.Int64
		for range 4 {
			r.clock.Advance(time.Minute)
			var wg sync.WaitGroup
			for _, s := range []*schedule.Scheduler{a, b} {
				wg.Go(func() {
					rep, err := s.Tick(context.Background())
					if err != nil || !rep.Leader {
						t.Errorf("tick: %+v, %v", rep, err)
					}
					total.Add(int64(rep.Fired))
				})
			}
			wg.Wait()
		}
		got := occurrences(t, r.b, class)
		for k, n := range got {
			if n != 1 {
				t.Errorf("%s fired %d times", k, n)
			}
		}
		if len(got) != 20 || total.Load() != 20 {
			t.Errorf("%d occurrences in the stream, %d reported fired; want 20 and 20", len(got), total.Load())
		}
	})
}

func TestSchedulerSkipsBadSchedulesAndOfflineClasses(t *testing.T) {
	r := newRig(t, memstore.New(), utc("2026-03-02T12:00:00Z"))
	class, offline := uniqueClass("Digest"), uniqueClass("Away")
	bad := schedule.Cron{Minute: "99", Hour: "*", DayOfMonth: "*", Month: "*", DayOfWeek: "*"}
	s := r.scheduler(t, schedule.List{
		{Class: class, AgentID: "bad", Cron: bad},
		{Class: "No.Token", AgentID: "x", Cron: every("* * * * *", "")},
		{Class: offline, AgentID: "p", Cron: every("* * * * *", "")},
		{Class: class, AgentID: "good", Cron: every("* * * * *", "")},
	}, func(c *schedule.Config) { c.Online = func(c string) bool { return c != offline } })
	tick(t, s)
	r.clock.Advance(2 * time.Minute)
	rep := tick(t, s)
	if rep.Fired != 2 || rep.Invalid != 2 || rep.Offline != 2 {
		t.Errorf("report %+v; want 2 fired, 2 invalid, 2 offline", rep)
	}
	if got := occurrences(t, r.b, class); fmt.Sprint(got) != "map[good 12:01:1 good 12:02:1]" {
		t.Errorf("fired %v", got)
	}
	if log := r.log.String(); !strings.Contains(log, "not online") || !strings.Contains(log, "invalid schedule") {
		t.Errorf("log:\n%s", log)
	}
}

type failingSource struct{}

func (failingSource) Schedules(context.Context) ([]schedule.Schedule, error) {
	return nil, errors.New("injected: profiles unavailable")
}

func TestSchedulerSourceFailure(t *testing.T) {
	r := newRig(t, memstore.New(), utc("2026-03-02T12:00:00Z"))
	s := r.scheduler(t, failingSource{})
	tick(t, s)
	r.clock.Advance(time.Minute)
	if _, err := s.Tick(t.Context()); err == nil || !strings.Contains(err.Error(), "profiles unavailable") {
		t.Errorf("tick with a failing source: %v", err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	b, st, src := memory.New(memory.Options{}), memstore.New(), schedule.List{}
	for _, cfg := range []schedule.Config{
		{Store: st, Source: src},
		{Bus: b, Source: src},
		{Bus: b, Store: st},
		{Bus: b, Store: st, Source: src, Tick: time.Minute, Lease: time.Minute},
		{Bus: b, Store: st, Source: src, Tick: time.Minute, CatchUp: time.Second},
		{Bus: b, Store: st, Source: src, Tick: -time.Second},
	} {
		if _, err := schedule.New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
	if _, err := schedule.New(schedule.Config{Bus: b, Store: st, Source: src}); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// Run ticks on the clock and returns once its context is done.
func TestRunStopsWithContext(t *testing.T) {
	r := newRig(t, memstore.New(), time.Now())
	ticks := make(chan schedule.Report, 1)
	s := r.scheduler(t, schedule.List{}, func(c *schedule.Config) {
		c.Clock = nil
		c.OnTick = func(rep schedule.Report) {
			select {
			case ticks <- rep:
			default:
			}
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case rep := <-ticks:
		if !rep.Leader {
			t.Errorf("a lone scheduler does not lead: %+v", rep)
		}
	case <-time.After(time.Minute):
		t.Fatal("no tick")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return")
	}
}
