package agenttest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/dev"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/devdemo"
	"github.com/saap-go/agent/step"
)

func echoWorkflow(t *testing.T, prefix string) *step.Workflow {
	t.Helper()
	a := &devdemo.Echo{Prefix: prefix}
	w, err := step.NewWorkflow(a.Class(), a.Steps()...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// recordLive runs the Echo agent for real (dev mode: embedded NATS, the
// runtime, the gateway), asks it a question that it answers with a
// question of its own, answers that, and records the run from its stream.
func recordLive(t *testing.T) *agenttest.Recording {
	t.Setenv("NATS_URL", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := dev.Start(ctx, dev.Config{Addr: "127.0.0.1:0", Out: new(strings.Builder)}, &devdemo.Echo{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	post := func(path, body string) (last []byte, run string) {
		resp, err := http.Post(s.URL()+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "[DONE]" {
				last = []byte(d)
			}
		}
		return last, resp.Header.Get("X-Run-Id")
	}
	q, run := post("/agents/EchoAgent/dev/UserMessageEvent/stream", `{"messages":[{"role":"user","content":"ask   me"}]}`)
	req, err := event.UnmarshalAs[event.HumanInTheLoopInputRequestEvent](q)
	if err != nil {
		t.Fatalf("the run did not ask: %v: %s", err, q)
	}
	post("/agents/EchoAgent/dev/HumanInTheLoopInputResponseEvent/stream?thread_id="+*req.Topic.ThreadID+"&display_id="+*req.Topic.DisplayID,
		`{"response":"Ada","request_event":`+string(q)+`}`)

	b, err := natsbus.Connect(natsbus.Config{URL: s.NATSURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rec, err := agenttest.RecordRun(ctx, b, "EchoAgent", run)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestReplayOfARecordedRun(t *testing.T) {
	rec := recordLive(t)

	// Through a file, as saap writes it.
	path := filepath.Join(t.TempDir(), "run.json")
	data, _ := json.Marshal(rec)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := agenttest.LoadRecording(path)
	if err != nil {
		t.Fatal(err)
	}

	// The same code replays clean.
	if d := agenttest.Replay(t, echoWorkflow(t, ""), loaded); d != "" {
		return
	}

	// A changed step shows in a readable diff of the outputs.
	d := agenttest.ReplayDiff(t, echoWorkflow(t, "v2:"), loaded)
	t.Logf("diff after changing the reply:\n%s", d)
	for _, want := range []string{
		`-`, `"Nice to meet you, Ada!"`,
		`+`, `"v2: Nice to meet you, Ada!"`,
		`"v2: "`, // the first chunk
	} {
		if !strings.Contains(d, want) {
			t.Errorf("the diff lacks %q:\n%s", want, d)
		}
	}
}

func TestReplayFromSaapFile(t *testing.T) {
	// testdata/echo-run.json is `saap run show -json` of a run of the Echo
	// agent that asked for a name and was answered "Ada".
	rec, err := agenttest.LoadRecording("testdata/echo-run.json")
	if err != nil {
		t.Fatal(err)
	}
	agenttest.Replay(t, echoWorkflow(t, ""), rec)
	if d := agenttest.ReplayDiff(t, echoWorkflow(t, "v2:"), rec); !strings.Contains(d, "v2: Nice to meet you, Ada!") {
		t.Errorf("a changed reply replays clean:\n%s", d)
	}
}

func TestLoadRecordingErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	empty := filepath.Join(dir, "empty.json")
	_ = os.WriteFile(bad, []byte("{"), 0o644)
	_ = os.WriteFile(empty, []byte(`{"events":[]}`), 0o644)
	for path, want := range map[string]string{
		filepath.Join(dir, "missing.json"): "no such file",
		bad:                                "unexpected end of JSON",
		empty:                              "holds no events",
	} {
		if _, err := agenttest.LoadRecording(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadRecording(%s) = %v, want %q", filepath.Base(path), err, want)
		}
	}
}
