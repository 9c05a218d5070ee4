package main

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/natsserver"
)

func TestServerProcess(t *testing.T) {
	bin := build(t)
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"s3cret":{"id":"ada","name":"Ada","email":"a@x","roles":[]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "NATS_URL="+srv.URL())

	t.Run("refuses to start without authentication", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "-tokens") {
			t.Errorf("err %v, stderr %q", err, stderr.String())
		}
	})

	t.Run("serves until SIGTERM", func(t *testing.T) {
		cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-tokens", tokens, "-discovery-window", "100ms")
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		lines := make(chan string, 10)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
			exited <- cmd.Wait()
		}()
		defer func() { _ = cmd.Process.Kill() }()
		var line string
		select {
		case line = <-lines:
		case <-time.After(time.Minute):
			t.Fatal("no output within a minute")
		}
		if !strings.Contains(line, "listening on ") {
			t.Fatalf("first line %q", line)
		}
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
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
			}
		case <-time.After(time.Minute):
			t.Fatal("no exit within a minute of SIGTERM")
		}
	})
}

// build compiles the command into t.TempDir().
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "saap-gateway")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
