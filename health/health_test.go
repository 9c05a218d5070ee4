package health_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/health"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/step"
)

type Pinger struct{}

func (p *Pinger) Steps() []*step.Step { return []*step.Step{step.New(p.Pong)} }

func (p *Pinger) Pong(step.Context, *event.UserMessageEvent) (*event.StopEvent, error) {
	return &event.StopEvent{}, nil
}

// get returns the status code and the JSON body of url.
func get(t *testing.T, url string) (int, health.Response) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var r health.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("GET %s: %d %q: %v", url, resp.StatusCode, b, err)
	}
	return resp.StatusCode, r
}

// await polls url until it answers code, for at most within, and returns
// the answer and how long it took.
func await(t *testing.T, url string, code int, within time.Duration) (health.Response, time.Duration) {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		got, r := get(t, url)
		if got == code {
			return r, time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("GET %s: still %d %+v after %v, want %d", url, got, r, within, code)
		}
		<-tick.C
	}
}

// serve starts the probe server of r on a free port and returns its URL.
func serve(t *testing.T, ctx context.Context, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- health.Serve(ctx, ln, h) }()
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func startNATS(t *testing.T, dir string, port int) *natsserver.Server {
	t.Helper()
	s, err := natsserver.Start(natsserver.Options{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// /readyz follows the NATS connection: unready within 2 s of the server
// going away, ready again once it is back; /healthz stays up throughout.
func TestReadyzFollowsNATS(t *testing.T) {
	t.Setenv("REDIS_URL", "") // the runner's state in JetStream KV on the server this test stops
	dir := t.TempDir()
	ns := startNATS(t, dir, 0)
	port := ns.Server().Addr().(*net.TCPAddr).Port
	defer func() { ns.Shutdown() }()

	r, err := agent.New(&Pinger{}, agent.Standalone(), agent.WithNATS(ns.URL()),
		agent.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	sctx, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	url := serve(t, sctx, health.Handler(r))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Not ready before Run.
	if code, res := get(t, url+"/readyz"); code != http.StatusServiceUnavailable || res.Component != "runner" {
		t.Fatalf("/readyz before Run: %d %+v, want 503 naming the runner", code, res)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			<-done
		}
	}()
	select {
	case <-r.Ready():
	case err := <-done:
		stopped = true // Run returned: the deferred wait must not wait again
		t.Fatalf("Run: %v", err)
	}
	if code, res := get(t, url+"/readyz"); code != http.StatusOK || res.Status != "ok" {
		t.Fatalf("/readyz when running: %d %+v, want 200 ok", code, res)
	}

	ns.Shutdown()
	res, took := await(t, url+"/readyz", http.StatusServiceUnavailable, 2*time.Second)
	if res.Component != "nats" || res.Status != "unavailable" {
		t.Errorf("/readyz without NATS: %+v, want unavailable naming nats", res)
	}
	t.Logf("unready %v after the server went away: %+v", took, res)
	if code, res := get(t, url+"/healthz"); code != http.StatusOK || res.Status != "ok" {
		t.Errorf("/healthz without NATS: %d %+v, want 200 ok", code, res)
	}

	ns = startNATS(t, dir, port)
	_, took = await(t, url+"/readyz", http.StatusOK, 15*time.Second)
	t.Logf("ready %v after the server came back", took)
	if code, _ := get(t, url+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz after the restart: %d, want 200", code)
	}

	cancel()
	stopped = true
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if code, res := get(t, url+"/readyz"); code != http.StatusServiceUnavailable || res.Component != "runner" || res.Reason != "stopped" {
		t.Errorf("/readyz after Run returned: %d %+v, want 503 runner stopped", code, res)
	}
}
