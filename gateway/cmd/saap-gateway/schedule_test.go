package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/exectest"
	"github.com/saap-go/agent/internal/natsserver"
)

func TestSchedulerFlags(t *testing.T) {
	bin := exectest.Build(t)
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	env := exectest.Env("NATS_URL=" + srv.URL())
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `[{"agent_class":"Digest","agent_id":"daily","cron":{"minute":"0","hour":"7","day_of_month":"*","month":"*","day_of_week":"*","timezone":"Europe/Zurich"}}]`)
	bad := write("bad.json", `[{"agent_class":"Digest","agent_id":"daily","cron":{"minute":"0"}}]`)
	base := []string{"-addr", "127.0.0.1:0", "-anonymous", "-discovery-window", "100ms"}

	t.Run("refuses a malformed schedule", func(t *testing.T) {
		_, stderr, err := exectest.Run(t, bin, time.Minute, env, append(base, "-scheduler", "-schedules", bad)...)
		if err == nil || !strings.Contains(stderr, "entry 0") || !strings.Contains(stderr, "hour is missing") {
			t.Errorf("err %v, stderr %q", err, stderr)
		}
	})
	t.Run("refuses -schedules without -scheduler", func(t *testing.T) {
		_, stderr, err := exectest.Run(t, bin, time.Minute, env, append(base, "-schedules", good)...)
		if err == nil || !strings.Contains(stderr, "-schedules needs -scheduler") {
			t.Errorf("err %v, stderr %q", err, stderr)
		}
	})
	t.Run("leads and stops on SIGTERM", func(t *testing.T) {
		p := exectest.Start(t, bin, env, append(base, "-scheduler", "-schedules", good, "-scheduler-name", "cmdtest")...)
		p.WaitLine(t, "saap-gateway: scheduler cmdtest ticking (leader true)", time.Minute)
		p.Signal(t, syscall.SIGTERM)
		if err := p.Wait(t, time.Minute); err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, p.Stderr())
		}
	})
}
