package dev_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/dev"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/devdemo"
	"github.com/saap-go/agent/step"
)

// other is a second agent class in the same binary.
type other struct{}

func (other) Class() string { return "OtherAgent" }
func (o other) Steps() []*step.Step {
	return []*step.Step{step.New(o.Answer)}
}
func (other) Answer(_ step.Context, _ *event.UserMessageEvent) (*devdemo.Replied, error) {
	return &devdemo.Replied{Answer: "other"}, nil
}

func start(t *testing.T) (*dev.Server, string) {
	t.Setenv("NATS_URL", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	s, err := dev.Start(ctx, dev.Config{Addr: "127.0.0.1:0", Out: &out}, &devdemo.Echo{}, other{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, out.String()
}

// stream posts body to the class's event endpoint and returns the events
// of the SSE answer and the run id.
func stream(t *testing.T, url, body string) ([]event.Event, [][]byte, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %s: %s", url, resp.Status, b)
	}
	var evs []event.Event
	var raw [][]byte
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		e, err := event.Unmarshal([]byte(d))
		if err != nil {
			t.Fatal(err)
		}
		evs, raw = append(evs, e), append(raw, []byte(d))
	}
	return evs, raw, resp.Header.Get("X-Run-Id")
}

func TestStartPrintsBannerAndServesAgents(t *testing.T) {
	s, banner := start(t)
	for _, want := range []string{"EchoAgent, OtherAgent", "console  " + s.URL() + "/dev/", "NATS     " + s.NATSURL(), "try      curl -N " + s.URL() + "/agents/EchoAgent/dev/UserMessageEvent/stream"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}

	evs, _, run := stream(t, s.URL()+"/agents/EchoAgent/dev/UserMessageEvent/stream", `{"messages":[{"role":"user","content":"hi  there"}]}`)
	var chunks string
	for _, e := range evs {
		if c, ok := e.(*event.ChunkEvent); ok {
			chunks += c.Content
		}
	}
	if chunks != "You said: hi there" {
		t.Errorf("chunks = %q", chunks)
	}
	if last, ok := evs[len(evs)-1].(*devdemo.Replied); !ok || last.Answer != "You said: hi there" {
		t.Errorf("terminal event = %#v", evs[len(evs)-1])
	}
	// The second class answers on the same server.
	evs, _, _ = stream(t, s.URL()+"/agents/OtherAgent/dev/UserMessageEvent/stream", `{"messages":[{"role":"user","content":"x"}]}`)
	if r, ok := evs[len(evs)-1].(*devdemo.Replied); !ok || r.Answer != "other" {
		t.Errorf("OtherAgent ended with %#v", evs[len(evs)-1])
	}

	var classes []struct {
		Class string          `json:"agent_class"`
		Graph json.RawMessage `json:"network_graph"`
	}
	getJSON(t, s.URL()+"/dev/api/classes", &classes)
	if len(classes) != 2 || classes[0].Class != "EchoAgent" || classes[1].Class != "OtherAgent" || !bytes.Contains(classes[0].Graph, []byte(`"Clean"`)) {
		t.Errorf("classes = %+v", classes)
	}

	var stored []dev.Event
	getJSON(t, s.URL()+"/dev/api/runs/"+run, &stored)
	var names []string
	for _, e := range stored {
		names = append(names, e.Name+"/"+strings.TrimSuffix(e.Type, "_event"))
	}
	// The class's stream keeps the display events too: the whole run.
	want := "UserMessageEvent/control,Cleaned/control," + strings.Repeat("ChunkEvent/display,", 4) + "Replied/control,Replied/display"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("stored run events = %s", got)
	}
}

func TestHITLQuestionIsAnsweredThroughTheGateway(t *testing.T) {
	s, _ := start(t)
	evs, raw, _ := stream(t, s.URL()+"/agents/EchoAgent/dev/UserMessageEvent/stream", `{"messages":[{"role":"user","content":"ask me"}]}`)
	q, ok := evs[len(evs)-1].(*event.HumanInTheLoopInputRequestEvent)
	if !ok {
		t.Fatalf("the run ended with %T, not a question", evs[len(evs)-1])
	}
	thread, display := *q.Topic.ThreadID, *q.Topic.DisplayID
	body := `{"response":"Ada","request_event":` + string(raw[len(raw)-1]) + `}`
	evs, _, _ = stream(t, s.URL()+"/agents/EchoAgent/dev/HumanInTheLoopInputResponseEvent/stream?thread_id="+thread+"&display_id="+display, body)
	if r, ok := evs[len(evs)-1].(*devdemo.Replied); !ok || r.Answer != "Nice to meet you, Ada!" {
		t.Errorf("the answer's run ended with %#v", evs[len(evs)-1])
	}
}

func TestConsoleIsServed(t *testing.T) {
	s, _ := start(t)
	resp, err := http.Get(s.URL() + "/dev/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "saap dev console") {
		t.Errorf("GET /dev/: %s %.200s", resp.Status, b)
	}
}

func TestStartRefusesNoAgent(t *testing.T) {
	if _, err := dev.Start(context.Background(), dev.Config{}); err == nil || !strings.Contains(err.Error(), "no agent") {
		t.Errorf("err = %v", err)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, b)
	}
}

func TestStartRefusesAnAddressOthersCanReach(t *testing.T) {
	t.Setenv("NATS_URL", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := dev.Start(ctx, dev.Config{Addr: "0.0.0.0:0", Out: io.Discard}, &devdemo.Echo{})
	if err == nil || !strings.Contains(err.Error(), "which other machines can reach") {
		t.Errorf("err = %v", err)
	}
}

// The console reopens a thread from the timeline with the gateway's
// thread history.
func TestThreadHistoryForTheConsole(t *testing.T) {
	s, _ := start(t)
	resp, err := http.Post(s.URL()+"/agents/EchoAgent/dev/UserMessageEvent", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	thread := resp.Header.Get("X-Thread-Id")
	if resp.StatusCode != http.StatusOK || thread == "" {
		t.Fatalf("POST: %s, thread %q", resp.Status, thread)
	}
	resp, err = http.Get(s.URL() + "/api/v1/saap/threads/" + thread + "/messages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"text":"hello"`) || !strings.Contains(string(b), `"text":"You said: hello"`) {
		t.Fatalf("GET messages: %s %s", resp.Status, b)
	}
}
