package main

import (
	"bufio"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/exectest"
)

// The example is built once and run as a process, as a user runs it.
func TestHelloExample(t *testing.T) {
	bin := exectest.Build(t)

	t.Run("demo", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, time.Minute, helloEnv())
		if err != nil {
			t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		for _, want := range []string{
			"control UserMessageEvent", "display ChunkEvent", "control LLMStopEvent", "display LLMStopEvent",
			".display_event.ChunkEvent.",
			`answer (LLMStopEvent): Hello! You said "Hello! What can you do?". I am HelloAgent`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("ask", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, time.Minute, helloEnv(), "-ask", "Why is the sky blue?")
		if err != nil {
			t.Fatalf("exit: %v\n%s\n%s", err, out, stderr)
		}
		if !strings.Contains(out, `answer (LLMStopEvent): Hello! You said "Why is the sky blue?".`) {
			t.Errorf("output:\n%s", out)
		}
	})

	t.Run("no -trace", func(t *testing.T) {
		// Tracing is examples/chat's: this command does not offer it.
		_, stderr, err := exectest.Run(t, bin, time.Minute, helloEnv(), "-trace")
		if err == nil || !strings.Contains(stderr, "flag provided but not defined: -trace") {
			t.Errorf("-trace: err %v, stderr %q", err, stderr)
		}
	})

	t.Run("serve", func(t *testing.T) {
		p := exectest.Start(t, bin, helloEnv(), "-serve", "127.0.0.1:0")
		line := p.WaitLine(t, "gateway listening on ", time.Minute)
		base := strings.Fields(strings.TrimPrefix(line, "gateway listening on "))[0]
		resp, err := http.Post(base+"/agents/HelloAgent/demo/UserMessageEvent/stream",
			"application/json", strings.NewReader(`{"messages":[{"role":"user","content":"Hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		var datas []string
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				datas = append(datas, d)
			}
		}
		resp.Body.Close()
		if len(datas) < 3 || datas[len(datas)-1] != "[DONE]" || !strings.Contains(datas[len(datas)-2], `"LLMStopEvent"`) {
			t.Fatalf("stream: %q", datas)
		}
		p.Signal(t, syscall.SIGTERM)
		if err := p.Wait(t, time.Minute); err != nil {
			t.Fatalf("exit after SIGTERM: %v\nstderr:\n%s", err, p.Stderr())
		}
	})
}

// The README's first command fetches and builds only what it shows: the
// SDK and NATS, not a model client, the OTLP exporters or Redis.
func TestHelloLinksOnlyWhatItShows(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{.Module.Path}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	modules := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		modules[m] = true
	}
	for _, bad := range []string{"github.com/openai/openai-go/v3", "google.golang.org/grpc", "go.opentelemetry.io/otel/sdk",
		"go.opentelemetry.io/otel/exporters/otlp/otlptrace", "github.com/redis/go-redis/v9"} {
		if modules[bad] {
			t.Errorf("examples/hello links %s", bad)
		}
	}
	if !modules["github.com/nats-io/nats-server/v2"] {
		t.Errorf("examples/hello does not link the embedded server; modules: %v", modules)
	}
	// The figure BENCHMARKS.md gives, plus google/jsonschema-go, which llm
	// validates structured answers with; more means something heavy came in.
	if len(modules) > 26 {
		t.Errorf("examples/hello links %d modules, want at most 26: %v", len(modules), modules)
	}
}

// helloEnv is the test's environment without REDIS_URL: hello links no
// Redis store (its state is kept in JetStream KV), so the variable, set
// when the suites run against Redis, is not for it.
func helloEnv() []string { return exectest.Env("REDIS_URL=") }
