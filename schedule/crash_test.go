package schedule_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/crashtest"
	"github.com/saap-go/agent/schedule"
	"github.com/saap-go/agent/store/natskv"
	redisstore "github.com/saap-go/agent/store/redis"
	"github.com/saap-go/agent/topic"
)

func TestMain(m *testing.M) {
	crashtest.Main(map[string]func() int{"scheduler": crashScheduler})
	code := m.Run()
	if embeddedNATS != nil {
		embeddedNATS.Shutdown()
	}
	os.Exit(code)
}

// warpClock runs speed times faster than the wall clock from a start both
// processes agree on, so that a test sees many minutes of a "* * * * *"
// schedule in seconds. The processes, the kill, the store and the stream
// are real.
type warpClock struct {
	t0, r0 time.Time
	speed  int64
}

func (c warpClock) Now() time.Time {
	return c.t0.Add(time.Duration(int64(time.Since(c.r0)) * c.speed))
}

func (c warpClock) After(d time.Duration) <-chan time.Time {
	return time.After(d / time.Duration(c.speed))
}

func warpFromEnv() warpClock {
	t0, _ := strconv.ParseInt(os.Getenv("SCHED_T0"), 10, 64)
	r0, _ := strconv.ParseInt(os.Getenv("SCHED_R0"), 10, 64)
	speed, _ := strconv.ParseInt(os.Getenv("SCHED_SPEED"), 10, 64)
	return warpClock{t0: time.Unix(0, t0), r0: time.Unix(0, r0), speed: speed}
}

const crashProfiles = 3

func crashSource(class string) schedule.List {
	var l schedule.List
	for i := range crashProfiles {
		l = append(l, schedule.Schedule{Class: class, AgentID: fmt.Sprintf("p%d", i), Cron: every("* * * * *", "")})
	}
	return l
}

// crashScheduler is the child: a scheduler on the parent's NATS, in
// JetStream KV (or Redis at SCHED_REDIS_URL), announcing on SCHED_LEADER_SUBJECT when it starts to lead.
func crashScheduler() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	b, err := natsbus.Connect(natsbus.Config{URL: os.Getenv("SCHED_NATS_URL")})
	if err != nil {
		log.Error("connect", "error", err)
		return 1
	}
	defer b.Close()
	var st schedule.Store
	if url := os.Getenv("SCHED_REDIS_URL"); url != "" {
		rs, err := redisstore.Open(ctx, url, redisstore.Config{Prefix: os.Getenv("SCHED_BUCKET") + ":", TTL: time.Hour})
		if err != nil {
			log.Error("store", "error", err)
			return 1
		}
		defer rs.Close()
		st = rs
	} else {
		ks, err := natskv.New(ctx, b.JetStream(), natskv.Config{Bucket: os.Getenv("SCHED_BUCKET"), TTL: time.Hour})
		if err != nil {
			log.Error("store", "error", err)
			return 1
		}
		st = ks
	}
	holder := os.Getenv("SCHED_HOLDER")
	ready, leading := false, false
	s, err := schedule.New(schedule.Config{
		Bus: b, Store: st, Source: crashSource(os.Getenv("SCHED_CLASS")), Name: os.Getenv("SCHED_NAME"),
		Tick: 6 * time.Second, Lease: time.Minute, CatchUp: 15 * time.Minute,
		Clock: warpFromEnv(), Logger: log, Holder: holder,
		OnTick: func(r schedule.Report) {
			if r.Leader && !leading {
				_ = b.Publish(ctx, &bus.Msg{Subject: os.Getenv("SCHED_LEADER_SUBJECT"), Data: []byte(holder)})
			}
			leading = r.Leader
			if !ready {
				ready = true
				crashtest.Ready()
			}
		},
	})
	if err != nil {
		log.Error("scheduler", "error", err)
		return 1
	}
	if err := s.Run(ctx); err != nil {
		log.Error("run", "error", err)
		return 1
	}
	return 0
}

// Two scheduler processes share one store; the leader is killed with
// SIGKILL while occurrences fall due. The other takes over, and every
// occurrence from the first to the last is in the stream exactly once.
func TestCrashLeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Run("natskv", func(t *testing.T) { crashLeaderKilled(t, "") })
	t.Run("redis", func(t *testing.T) {
		url := os.Getenv("REDIS_URL")
		if url == "" {
			t.Skip("REDIS_URL not set")
		}
		crashLeaderKilled(t, url)
	})
}

func crashLeaderKilled(t *testing.T, redisURL string) {
	url, err := natsURL()
	if err != nil {
		t.Fatal(err)
	}
	b := natsBus(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	class := uniqueClass("Cron")
	name := uniqueClass("crash")
	if redisURL != "" {
		t.Cleanup(func() { deleteRedisPrefix(t, redisURL, name+":") })
	}
	const speed = 60 // a simulated minute per second
	clock := warpClock{t0: utc("2026-03-02T12:00:30Z"), r0: time.Now(), speed: speed}
	leaderSubj := "schedtest." + name + ".leader"
	env := []string{
		"SCHED_NATS_URL=" + url, "SCHED_BUCKET=" + name, "SCHED_NAME=" + name, "SCHED_CLASS=" + class,
		"SCHED_LEADER_SUBJECT=" + leaderSubj,
		"SCHED_T0=" + strconv.FormatInt(clock.t0.UnixNano(), 10), "SCHED_R0=" + strconv.FormatInt(clock.r0.UnixNano(), 10),
		"SCHED_SPEED=" + strconv.Itoa(speed), "SCHED_REDIS_URL=" + redisURL,
	}
	leaders := make(chan string, 16)
	if _, err := b.Subscribe(ctx, leaderSubj, "", func(m *bus.Msg) { leaders <- string(m.Data) }); err != nil {
		t.Fatal(err)
	}
	starts := make(chan *event.CronStartEvent, 1024)
	if _, err := b.Subscribe(ctx, "agent."+class+".*.*.*.*.control_event.CronStartEvent.*", "", func(m *bus.Msg) {
		if e, err := event.UnmarshalAs[event.CronStartEvent](m.Data); err == nil {
			starts <- e
		}
	}); err != nil {
		t.Fatal(err)
	}
	awaitLeader := func(want string) {
		t.Helper()
		for {
			select {
			case h := <-leaders:
				if h == want {
					return
				}
				t.Logf("%s leads", h)
			case <-ctx.Done():
				t.Fatalf("%s never led", want)
			}
		}
	}
	// awaitMinute waits until an occurrence at or after m has fired.
	awaitMinute := func(m time.Time) {
		t.Helper()
		for {
			select {
			case e := <-starts:
				if !e.ScheduledFor.Before(m) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no occurrence at or after %v fired", m)
			}
		}
	}

	a := crashtest.Start(t, "scheduler-a", "scheduler", append(env, "SCHED_HOLDER=a")...)
	a.WaitReady(ctx)
	awaitLeader("a")
	c := crashtest.Start(t, "scheduler-b", "scheduler", append(env, "SCHED_HOLDER=b")...)
	c.WaitReady(ctx)
	awaitMinute(clock.Now().Truncate(time.Minute).Add(3 * time.Minute))
	a.Kill()
	killed := clock.Now()
	awaitLeader("b")
	awaitMinute(killed.Truncate(time.Minute).Add(4 * time.Minute))
	if err := c.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}

	msgs, err := bus.ReadAll(ctx, b, topic.StreamName(class), "agent."+class+".*.*.*.*.control_event.CronStartEvent.*")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var first, last time.Time
	for _, m := range msgs {
		e, err := event.UnmarshalAs[event.CronStartEvent](m.Data)
		if err != nil {
			t.Fatal(err)
		}
		at, _ := topic.ParseAgent(m.Subject)
		count[at.ID+" "+e.ScheduledFor.Format("15:04")]++
		if first.IsZero() || e.ScheduledFor.Before(first) {
			first = e.ScheduledFor
		}
		if e.ScheduledFor.After(last) {
			last = e.ScheduledFor
		}
	}
	t.Logf("%d start events from %v to %v; leader killed at %v", len(msgs), first.Format("15:04"), last.Format("15:04"), killed.Format("15:04:05"))
	if !last.After(killed.Add(3 * time.Minute)) {
		t.Errorf("the last occurrence %v is not well after the kill at %v", last, killed)
	}
	// Every profile fires every minute from the first occurrence to the
	// last complete minute, once; the last minute may be partial (b was
	// stopped in the middle of its tick).
	for m := first; m.Before(last); m = m.Add(time.Minute) {
		for i := range crashProfiles {
			k := fmt.Sprintf("p%d %s", i, m.Format("15:04"))
			if count[k] != 1 {
				t.Errorf("occurrence %s fired %d times", k, count[k])
			}
		}
	}
	for k, n := range count {
		if n != 1 {
			t.Errorf("occurrence %s fired %d times", k, n)
		}
	}
}

// deleteRedisPrefix removes the keys the children left (thread contexts do
// not expire).
func deleteRedisPrefix(t *testing.T, url, prefix string) {
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Error(err)
		return
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		rdb.Del(ctx, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Errorf("cleaning up %s*: %v", prefix, err)
	}
}
