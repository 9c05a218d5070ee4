package a2a_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/hitl/a2abridge"
	"github.com/saap-go/agent/step"
)

// caller delegates the user's message to a remote A2A agent through the
// bridge class and ends with what came back.
type caller struct {
	class, bridge, remote string
	timeout               time.Duration
}

func (c *caller) Class() string { return c.class }

func (c *caller) Steps() []*step.Step {
	return []*step.Step{step.New(c.Ask), step.New(c.Done), step.New(c.Failed), step.New(c.TimedOut)}
}

func (c *caller) Ask(ctx step.Context, m *event.UserMessageEvent) (*event.AgentInTheLoopRequestEvent, error) {
	return a2abridge.Delegate(c.bridge, c.remote, m.User, m.Messages[len(m.Messages)-1].Content(), hitl.DelegateTimeout(c.timeout))
}

func (c *caller) Done(ctx step.Context, r *event.AgentInTheLoopResponseEvent) (*event.LLMStopEvent, error) {
	return answer("remote said: " + a2abridge.Answer(r)), nil
}

func (c *caller) Failed(ctx step.Context, x *event.AgentInTheLoopExceptionEvent) (*event.LLMStopEvent, error) {
	msg := ""
	if ex, ok := x.ExceptionEvent.(*event.ExceptionEvent); ok {
		msg = ex.Message
	}
	return answer("remote failed: " + msg), nil
}

func (c *caller) TimedOut(ctx step.Context, x *event.AgentInTheLoopTimeoutEvent) (*event.LLMStopEvent, error) {
	return answer("remote timed out"), nil
}

func answer(text string) *event.LLMStopEvent {
	s := &event.LLMStopEvent{}
	s.OutputMessages = []event.Message{event.MessageFromString("assistant", text)}
	return s
}

// ask runs the caller class through the gateway's blocking endpoint and
// returns the text of its stop.
func ask(t *testing.T, e *env, class, text string) string {
	t.Helper()
	status, data := post(t, e, class, text)
	var stop struct {
		Out []struct {
			Content string `json:"content"`
		} `json:"output_messages"`
	}
	if err := json.Unmarshal([]byte(data), &stop); err != nil || status != http.StatusOK || len(stop.Out) == 0 {
		t.Fatalf("caller run: %d %v %s", status, err, data)
	}
	return stop.Out[0].Content
}

// post sends text to the class's blocking endpoint as alice.
func post(t *testing.T, e *env, class, text string) (int, string) {
	t.Helper()
	if _, err := e.gw.Discover(ctxTimeout(t), class); err != nil {
		t.Fatal(err)
	}
	body := `{"messages":[{"role":"user","content":"` + text + `"}]}`
	req, _ := http.NewRequestWithContext(ctxTimeout(t), http.MethodPost, e.srv.URL+"/agents/"+class+"/dev/UserMessageEvent", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tokenAlice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(data)
}

// A step delegates to an external A2A agent (here the gateway's own A2A
// endpoint of the greeter, reached over HTTP with the official client) and
// resumes on its answer through the durable AITL wait.
func TestBridgeDelegates(t *testing.T) {
	e := newEnv(t)
	bridgeClass, callerClass := "Bridge"+event.NewID()[16:], "Caller"+event.NewID()[16:]
	auth := http.Header{"Authorization": {"Bearer " + tokenAlice}}
	b, err := a2abridge.New(bridgeClass, map[string]a2abridge.Remote{"greeter": {URL: e.url, Header: auth}})
	if err != nil {
		t.Fatal(err)
	}
	startAgent(t, b, e.nats)
	startAgent(t, &caller{class: callerClass, bridge: bridgeClass, remote: "greeter", timeout: time.Minute}, e.nats)
	if got := ask(t, e, callerClass, "world"); got != "remote said: Hello, world" {
		t.Fatalf("caller answered %q", got)
	}
	// A remote task that fails is the delegate's exception. It ends the
	// gateway's request (as any agent's exception in the thread) unless the
	// caller's own answer to it, which quotes it, comes first: either way
	// the user reads the remote agent's message.
	_, detail := post(t, e, callerClass, "fail")
	if !strings.Contains(detail, "cannot greet anyone today") {
		t.Fatalf("failing remote: %s", detail)
	}
}

// The wait for a remote agent has the AITL timeout: a remote that never
// answers leaves the caller with the timeout event.
func TestBridgeTimeout(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	bridgeClass, callerClass := "Bridge"+event.NewID()[16:], "Caller"+event.NewID()[16:]
	b, err := a2abridge.New(bridgeClass, map[string]a2abridge.Remote{"slow": {URL: slow.URL}})
	if err != nil {
		t.Fatal(err)
	}
	startAgent(t, b, e.nats)
	startAgent(t, &caller{class: callerClass, bridge: bridgeClass, remote: "slow", timeout: 300 * time.Millisecond}, e.nats)
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	if got := ask(t, e, callerClass, "world"); got != "remote timed out" {
		t.Fatalf("caller answered %q", got)
	}
}
