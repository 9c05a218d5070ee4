package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway/profiles"
	"github.com/saap-go/agent/internal/exectest"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/schedule"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store/natskv"
)

// digestSettings is the configuration of the test's schedulable agent.
type digestSettings struct {
	Greeting string `json:"greeting"`
}

// digest is a schedulable agent whose step reports the greeting of the
// configuration its run got.
type digest struct {
	class string
	seen  chan string
}

func (d *digest) Class() string      { return d.class }
func (d *digest) DefaultConfig() any { return digestSettings{Greeting: "the default"} }
func (d *digest) Steps() []*step.Step {
	return []*step.Step{step.New(func(ctx step.Context, e *event.CronStartEvent) (*event.StopEvent, error) {
		c, _ := step.Config[digestSettings](ctx)
		d.seen <- c.Greeting
		return event.New[event.StopEvent](), nil
	}, step.Name("Digest"))}
}

// fakeClock is the in-test scheduler's time; the test calls Tick itself.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) After(time.Duration) <-chan time.Time { return nil }

// flow is a gateway process with -profiles and a runner of a schedulable
// class on the same NATS.
type flow struct {
	b       *natsbus.Bus
	d       *digest
	base    string
	bucket  string
	state   string
	profile string // the profile the tests create: every minute, a greeting
}

func startFlow(t *testing.T, extra ...string) *flow {
	t.Helper()
	bin := exectest.Build(t)
	url := os.Getenv("NATS_URL")
	if url == "" {
		srv, err := natsserver.Start(natsserver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown)
		url = srv.URL()
	}
	n := time.Now().UnixNano() % 1e9
	f := &flow{bucket: fmt.Sprintf("profiles_cmd_%d", n), state: fmt.Sprintf("sched_cmd_%d", n)}
	f.d = &digest{class: fmt.Sprintf("Digest%d", n), seen: make(chan string, 4)}
	f.profile = `{"agent_id":"daily","name":{"de":"T","en":"T","fr":"T","it":"T"},"description":{"de":"d","en":"d","fr":"d","it":"d"},` +
		`"greeting":"from the profile","cron":{"minute":"*","hour":"*","day_of_month":"*","month":"*","day_of_week":"*"}}`
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"adm1n":{"id":"ada","name":"Ada","email":"a@x","roles":["admin"]},
		"us3r":{"id":"bob","name":"Bob","email":"b@x","roles":["user"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := natsbus.Connect(natsbus.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	f.b = b
	t.Cleanup(func() { _ = b.Close() })
	t.Cleanup(func() {
		for _, k := range []string{f.bucket, f.state, f.state + natskv.ThreadBucketSuffix, "gw_" + f.bucket} {
			_ = b.JetStream().DeleteKeyValue(context.Background(), k)
		}
	})

	args := append([]string{"-addr", "127.0.0.1:0", "-tokens", tokens, "-profiles", "-profiles-kv-bucket", f.bucket,
		"-kv-bucket", "gw_" + f.bucket, "-discovery-window", "100ms"}, extra...)
	p := exectest.Start(t, bin, exectest.Env("NATS_URL="+url), args...)
	p.WaitLine(t, "config RPC answered", time.Minute)
	line := p.WaitLine(t, "listening on ", time.Minute)
	f.base = strings.Fields(line[strings.Index(line, "http://"):])[0]
	t.Cleanup(func() {
		p.Signal(t, syscall.SIGTERM)
		if err := p.Wait(t, time.Minute); err != nil {
			t.Errorf("gateway exit: %v\n%s", err, p.Stderr())
		}
	})

	r, err := agent.New(f.d, agent.WithNATS(url), agent.WithStore(mustStore(t, b, f.state)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("the runner did not stop")
		}
	})
	select {
	case <-r.Ready():
	case err := <-done:
		t.Fatalf("runner: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("runner not ready")
	}
	return f
}

func (f *flow) path() string { return profiles.Prefix + "/" + f.d.class }

func (f *flow) call(t *testing.T, token, method, path, body string, header ...string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, f.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("ETag"), string(data)
}

// create creates the profile as the administrator once the gateway serves
// the class (the runner announced it when it started; 404 until the
// announcement is in) and returns its ETag.
func (f *flow) create(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, tag, body := f.call(t, "adm1n", "POST", f.path(), f.profile)
		if code == http.StatusCreated {
			return tag
		}
		if code != http.StatusNotFound || time.Now().After(deadline) {
			t.Fatalf("create: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The admin flow on real processes: an administrator creates a profile
// through the gateway process's admin route, the agent (a runner on the
// same NATS, which the gateway discovers) gets that profile through the
// config RPC the gateway answers, and the profile's schedule fires it (a
// scheduler on the gateway's profiles, with a fake clock); an edit
// reaches the next run.
func TestAdminFlow(t *testing.T) {
	f := startFlow(t)
	ctx := t.Context()
	if code, _, body := f.call(t, "us3r", "POST", f.path(), f.profile); code != http.StatusForbidden {
		t.Fatalf("a user who is not an admin creates a profile: %d %s", code, body)
	}
	etag := f.create(t)

	// The scheduler reads the schedules from the gateway's profiles.
	src, err := profiles.NewStore(ctx, f.b.JetStream(), profiles.StoreConfig{Bucket: f.bucket})
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Now().UTC().Truncate(time.Minute).Add(30 * time.Second)}
	s, err := schedule.New(schedule.Config{Bus: f.b, Store: mustStore(t, f.b, f.state), Source: src, Clock: clock, Name: f.d.class})
	if err != nil {
		t.Fatal(err)
	}
	fire := func(want string) {
		t.Helper()
		clock.Advance(time.Minute)
		rep, err := s.Tick(ctx)
		if err != nil || rep.Fired != 1 {
			t.Fatalf("tick: %+v, %v", rep, err)
		}
		select {
		case got := <-f.d.seen:
			if got != want {
				t.Errorf("the step saw greeting %q, want %q", got, want)
			}
		case <-time.After(time.Minute):
			t.Fatal("the scheduled run never reached the step")
		}
	}
	if rep, err := s.Tick(ctx); err != nil || !rep.Leader {
		t.Fatalf("first tick: %+v, %v", rep, err)
	}
	fire("from the profile")

	code, _, body := f.call(t, "adm1n", "PUT", f.path()+"/daily", strings.Replace(f.profile, "from the profile", "edited", 1), "If-Match", etag)
	if code != http.StatusOK {
		t.Fatalf("edit: %d %s", code, body)
	}
	if code, _, body := f.call(t, "adm1n", "PUT", f.path()+"/daily", f.profile, "If-Match", etag); code != http.StatusConflict {
		t.Errorf("an edit from the old revision: %d %s", code, body)
	}
	fire("edited")
}

// The gateway's own scheduler (-scheduler with -profiles) fires the
// schedule of a profile saved through its admin route, on the wall clock:
// the next whole minute, so this takes up to a minute.
func TestGatewaySchedulesProfiles(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the next whole minute")
	}
	state := fmt.Sprintf("gwsched_%d", time.Now().UnixNano()%1e9)
	f := startFlow(t, "-scheduler", "-scheduler-tick", "1s", "-scheduler-kv-bucket", state, "-scheduler-name", state)
	t.Cleanup(func() {
		for _, k := range []string{state, state + natskv.ThreadBucketSuffix} {
			_ = f.b.JetStream().DeleteKeyValue(context.Background(), k)
		}
	})
	f.create(t)
	select {
	case got := <-f.d.seen:
		if got != "from the profile" {
			t.Errorf("the step saw greeting %q", got)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the gateway's scheduler never fired the profile")
	}
}

func mustStore(t *testing.T, b *natsbus.Bus, bucket string) *natskv.Store {
	t.Helper()
	st, err := natskv.New(t.Context(), b.JetStream(), natskv.Config{Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
