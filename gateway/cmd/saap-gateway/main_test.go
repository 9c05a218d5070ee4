package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/internal/exectest"
	"github.com/saap-go/agent/internal/natsserver"
)

func TestServerProcess(t *testing.T) {
	bin := exectest.Build(t)
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"s3cret":{"id":"ada","name":"Ada","email":"a@x","roles":[]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := exectest.Env("NATS_URL=" + srv.URL())

	t.Run("refuses to start without authentication", func(t *testing.T) {
		_, stderr, err := exectest.Run(t, bin, time.Minute, env)
		if err == nil || !strings.Contains(stderr, "-tokens") {
			t.Errorf("err %v, stderr %q", err, stderr)
		}
	})

	t.Run("refuses anonymous access on a reachable address", func(t *testing.T) {
		_, stderr, err := exectest.Run(t, bin, time.Minute, env, "-anonymous", "-addr", "0.0.0.0:0")
		if err == nil || !strings.Contains(stderr, "-allow-anonymous-remote") {
			t.Errorf("err %v, stderr %q", err, stderr)
		}
	})

	t.Run("binds to loopback without a host and keeps state in JetStream KV", func(t *testing.T) {
		p := exectest.Start(t, bin, env, "-addr", ":0", "-anonymous", "-kv-bucket", "gw_cmd_test", "-discovery-window", "100ms")
		line := p.WaitLine(t, "listening on ", time.Minute)
		if !strings.Contains(line, "http://127.0.0.1:") {
			t.Errorf("listening line %q, want a loopback address", line)
		}
		b, err := natsbus.Connect(natsbus.Config{URL: srv.URL()})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := b.JetStream().KeyValue(ctx, "gw_cmd_test"); err != nil {
			t.Errorf("the gateway's key-value bucket: %v", err)
		}
		p.Signal(t, syscall.SIGTERM)
		if err := p.Wait(t, time.Minute); err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, p.Stderr())
		}
	})

	t.Run("serves until SIGTERM", func(t *testing.T) {
		p := exectest.Start(t, bin, env, "-addr", "127.0.0.1:0", "-tokens", tokens, "-discovery-window", "100ms")
		line := p.WaitLine(t, "listening on ", time.Minute)
		base := strings.Fields(strings.SplitN(line, "listening on ", 2)[1])[0]
		resp, err := http.Get(base + "/api/v1/health")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("health: %v %v", resp, err)
		}
		resp.Body.Close()
		req, _ := http.NewRequest("POST", base+"/agents/NoAgent/x/UserMessageEvent", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err = http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("unknown class: %v %v", resp, err)
		}
		resp.Body.Close()
		p.Signal(t, syscall.SIGTERM)
		if err := p.Wait(t, time.Minute); err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, p.Stderr())
		}
	})
}
