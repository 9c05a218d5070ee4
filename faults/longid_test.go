package faults

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// longID is the hostile id of the long-id scenarios: far beyond any real
// id, close to the server's default 4 KiB protocol line.
var longID = strings.Repeat("a", 4000)

// gateway is a saap-gateway process.
type gateway struct {
	base string
	p    *proc
}

func startGateway(t *testing.T, natsURL string) *gateway {
	t.Helper()
	p := startProc(t, "saap-gateway", "saap-gateway listening on", []string{"NATS_URL=" + natsURL, "NATS_ENDPOINT="},
		filepath.Join(bins(t), "saap-gateway"),
		"-addr", "127.0.0.1:0", "-anonymous", "-discovery-period", "1s", "-discovery-window", "300ms", "-timeout", "60s",
		"-burst", "100") // the limits stay on; the burst covers the discovery polls
	line := p.waitReady(t)
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("gateway ready line %q", line)
	}
	return &gateway{base: strings.Fields(line[i:])[0], p: p}
}

// post sends a start request and returns the status, body and headers.
func (g *gateway) post(t *testing.T, path, body string, timeout time.Duration) (int, string, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b), resp.Header
}

// health returns the gateway's health answer.
func (g *gateway) health(t *testing.T) (int, string) {
	t.Helper()
	resp, err := http.Get(g.base + "/api/v1/health")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}

// waitClass waits until the gateway has discovered class (its endpoints
// stop answering "unknown agent class").
func (g *gateway) waitClass(t *testing.T, class string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		status, body, _ := g.post(t, "/agents/"+class+"/faults/NoSuchEvent", `{}`, 10*time.Second)
		if status == http.StatusNotFound && !strings.Contains(body, "unknown agent class") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not discover %s: %d %s", class, status, body)
		}
		time.Sleep(500 * time.Millisecond) // the gateway's discovery cycle is a period, not an event; slow enough for its rate limit
	}
}

const helloBody = `{"messages":[{"role":"user","content":"hello"}]}`

// TestLongIDAtGateway sends 4,000-character ids to the gateway. Each must
// get a clear 4xx before anything is published, and the gateway's NATS
// connection must be healthy afterwards: a normal request still completes.
func TestLongIDAtGateway(t *testing.T) {
	e := newEnv(t, natsOpts{})
	startAgent(t, "agent", e.agentEnv("FAULT_DISCOVERABLE=1")...)
	gw := startGateway(t, e.nats.url)
	gw.waitClass(t, e.class)

	for _, c := range []struct{ name, path string }{
		{"agent id", "/agents/" + e.class + "/" + longID + "/UserMessageEvent"},
		{"agent id (platform path)", "/api/v1/t1/agents/classes/" + e.class + "/instances/" + longID + "/UserMessageEvent"},
		{"thread id", "/agents/" + e.class + "/faults/UserMessageEvent?thread_id=" + longID},
		{"display id", "/agents/" + e.class + "/faults/UserMessageEvent?display_id=" + longID},
		{"class", "/agents/" + longID + "/faults/UserMessageEvent"},
	} {
		status, body, _ := gw.post(t, c.path, helloBody, 20*time.Second)
		t.Logf("long %s: %d %.200s", c.name, status, body)
		if status < 400 || status > 499 || status == http.StatusTooManyRequests {
			t.Errorf("long %s: status %d (%.200s), want a 4xx naming the problem", c.name, status, body)
		}
	}
	if status, body := gw.health(t); status != http.StatusOK {
		t.Errorf("gateway health after the long ids: %d %.200s", status, body)
	}

	status, body, h := gw.post(t, "/agents/"+e.class+"/faults/UserMessageEvent", helloBody, 60*time.Second)
	if status != http.StatusOK {
		t.Errorf("a normal request after the long ids: %d %.300s, want 200", status, body)
	}
	if run := h.Get("X-Run-Id"); run != "" {
		e.runs = append(e.runs, e.newRun())
		e.runs[len(e.runs)-1].Run = run
	}
	r := e.check(size(45*time.Second, 120*time.Second), "saap-agent "+e.class, "saap-gateway")
	r.log(t, "long-id-gateway")
	r.assertInvariants(t)
}

// TestLongTokenOnControlSubject publishes a control event whose thread id
// is 4,000 characters straight onto the agent's stream (the server here
// allows such a protocol line). The agent must dead-letter it without
// running anything, keep its connection, and complete the runs that come
// after it.
func TestLongTokenOnControlSubject(t *testing.T) {
	others := size(10, 50)
	e := newEnv(t, natsOpts{maxControlLine: 16 * 1024})
	a := startAgent(t, "agent", e.agentEnv()...)

	hostile := e.newRun()
	hostile.Thread = longID
	e.publishStart(hostile, "hello")
	e.expectDead = append(e.expectDead, hostile.Run)
	for range others {
		e.start(e.newRun(), "hello")
	}
	r := e.check(size(45*time.Second, 120*time.Second), "saap-agent "+e.class)
	r.log(t, "long-token-control-subject")
	r.assertInvariants(t)
	if len(r.deadletters[hostile.Run]) == 0 {
		t.Errorf("the event with the %d-character thread id was not dead-lettered", len(longID))
	} else {
		t.Logf("dead letter reason: %.200s", r.deadletters[hostile.Run][0].reason)
	}
	if n := r.terminal[hostile.Run]; len(n) > 0 {
		t.Errorf("the hostile run went on to %v; it must not run at all", n)
	}
	if got := r.effects[hostile.Run] + r.reruns[hostile.Run]; got != 0 {
		t.Errorf("the hostile run's Work step ran %d times, want never", got)
	}
	if r.Completed != others {
		t.Errorf("%d of %d later runs completed, want all", r.Completed, others)
	}
	if ex := a.exited(); len(ex) > 0 {
		t.Errorf("the agent exited (%v)", ex)
	}
}
