package prometheus_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/health"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/metrics/prometheus"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

type Pinger struct{}

func (p *Pinger) Steps() []*step.Step { return []*step.Step{step.New(p.Pong)} }

func (p *Pinger) Pong(step.Context, *event.UserMessageEvent) (*event.StopEvent, error) {
	return &event.StopEvent{}, nil
}

// After a run, /metrics serves the SDK's run and step counters of the
// class in the Prometheus text format.
func TestMetricsAfterARun(t *testing.T) {
	t.Setenv("REDIS_URL", "") // the runner's state in JetStream KV: this package links no Redis store
	ns, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Shutdown()
	m, err := prometheus.New()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(context.Background())

	r, err := agent.New(&Pinger{}, agent.Standalone(), agent.WithNATS(ns.URL()),
		agent.WithMeterProvider(m.MeterProvider()), agent.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mux := health.Handler(r)
	mux.Handle("GET /metrics", m.Handler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- health.Serve(ctx, ln, mux) }()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	returned := false
	defer func() {
		cancel()
		if !returned {
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	select {
	case <-r.Ready():
	case err := <-done:
		returned = true
		t.Fatalf("Run: %v", err)
	}

	runOnce(t, ctx, ns.URL(), r.Class())

	url := "http://" + ln.Addr().String() + "/metrics"
	wants := []string{"saap_agent_runs_started_total", "saap_agent_step_duration", "go_goroutines"}
	has := func(body string) bool {
		for _, w := range wants {
			if !strings.Contains(body, w) {
				return false
			}
		}
		return true
	}
	// The step's metrics are recorded as the step returns, which the
	// StopEvent the test saw may precede by a little.
	body := scrape(t, url)
	wait := time.NewTicker(10 * time.Millisecond)
	defer wait.Stop()
	for !has(body) {
		select {
		case <-ctx.Done():
			t.Fatalf("/metrics lacks one of %v:\n%s", wants, body)
		case <-wait.C:
		}
		body = scrape(t, url)
	}
	// Counted when the run's first event is taken, before its StopEvent.
	if l := sample(body, "saap_agent_runs_started_total"); !strings.Contains(l, `"Pinger"`) || !strings.HasSuffix(l, " 1") {
		t.Errorf("runs started: %q, want one run of class Pinger", l)
	}
	// Counted once the run's end is recorded, which may follow the
	// StopEvent by a little.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for l := ""; !strings.HasSuffix(l, " 1"); l = sample(scrape(t, url), "saap_agent_runs_completed_total") {
		select {
		case <-ctx.Done():
			t.Fatalf("runs completed: %q, want one run", l)
		case <-tick.C:
		}
	}
}

// scrape GETs url and returns its Prometheus text.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("/metrics Content-Type %q, want the Prometheus text format", ct)
	}
	return string(body)
}

// sample is the last sample line of metric name in body, or "".
func sample(body, name string) string {
	var line string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, name+"{") {
			line = l
		}
	}
	return line
}

// runOnce sends one chat message to class and waits for its StopEvent.
func runOnce(t *testing.T, ctx context.Context, url, class string) {
	t.Helper()
	b, err := natsbus.Connect(natsbus.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	run := topic.Agent{Class: class, ID: "demo", Thread: event.NewID(), Display: event.NewID(), Run: event.NewID()}
	pattern, _ := topic.ThreadDisplay(run.Thread, run.Display)
	stopped := make(chan struct{}, 1)
	sub, err := b.Subscribe(ctx, pattern, "", func(m *bus.Msg) {
		if ev, err := event.Unmarshal(m.Data); err == nil {
			if _, ok := ev.(*event.StopEvent); ok {
				stopped <- struct{}{}
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	msg := event.Stamp(&event.UserMessageEvent{
		User:     &event.UserIdentity{ID: "u1", Name: "Ursula", Email: "ursula@example.com", Roles: []string{}},
		Messages: []event.ChatMessage{event.Text(event.RoleUser, "Hi")},
	})
	if _, err := bus.PublishEvent(ctx, b, run, msg, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("no StopEvent")
	}
}
