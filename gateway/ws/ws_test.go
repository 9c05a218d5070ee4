package ws_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/gateway/internal/adaptertest"
	"github.com/saap-go/agent/gateway/ws"
)

func ctxTimeout(t testing.TB) context.Context { return adaptertest.Ctx(t) }

type client struct {
	t    *testing.T
	conn *websocket.Conn
}

// dial connects and authenticates with token; ready receives the user id
// once the server streams.
func dial(t *testing.T, e *adaptertest.Env, token string) *client {
	t.Helper()
	url := "ws" + strings.TrimPrefix(e.Server.URL, "http") + "/api/v1/acme/events/ws"
	conn, _, err := websocket.Dial(ctxTimeout(t), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	if err := conn.Write(ctxTimeout(t), websocket.MessageText, []byte(`{"token":"Bearer `+token+`"}`)); err != nil {
		t.Fatal(err)
	}
	return &client{t: t, conn: conn}
}

func (c *client) next() ws.Event {
	c.t.Helper()
	_, data, err := c.conn.Read(ctxTimeout(c.t))
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var e ws.Event
	if err := json.Unmarshal(data, &e); err != nil {
		c.t.Fatalf("message %s: %v", data, err)
	}
	return e
}

// run starts a run as user and waits for its end.
func run(t *testing.T, e *adaptertest.Env, user *event.UserIdentity) string {
	t.Helper()
	msgs, _ := event.MarshalValue([]event.ChatMessage{{Role: "user", Blocks: []event.Block{&event.TextBlock{Text: "hi"}}, AdditionalKwargs: map[string]json.RawMessage{}}})
	s, err := e.Gateway.Start(ctxTimeout(t), gateway.RunRequest{User: user, Class: adaptertest.Class, AgentID: "dev",
		Body: map[string]json.RawMessage{"messages": msgs}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Follow(ctxTimeout(t), func(gateway.StreamEvent) error { return nil }, nil); err != nil {
		t.Fatal(err)
	}
	return s.Thread()
}

func TestStreamsOwnThreadsOnly(t *testing.T) {
	ready := make(chan string, 4)
	defer ws.SetReadyHook(func(u string) { ready <- u })()
	e := adaptertest.Start(t, nil, func(g *gateway.Gateway) { ws.Mount(g, ws.Options{}) })
	alice := dial(t, e, adaptertest.TokenAlice)
	bob := dial(t, e, adaptertest.TokenBob)
	for range 2 {
		select {
		case <-ready:
		case <-ctxTimeout(t).Done():
			t.Fatal("the streams did not start")
		}
	}

	thread := run(t, e, &adaptertest.Alice)
	var names []string
	for {
		ev := alice.next()
		if ev.ThreadID != thread {
			t.Fatalf("Alice got an event of thread %s: %+v", ev.ThreadID, ev)
		}
		names = append(names, ev.EventName)
		if ev.EventName == "Answered" {
			if ev.AgentClass != adaptertest.Class || ev.AgentID != "dev" || len(ev.RunID) != 24 || ev.EventType != "display_event" ||
				ev.Locale != "de" || !strings.Contains(string(ev.Event), `"Hello, world"`) {
				t.Errorf("stop event %+v", ev)
			}
			break
		}
		if ev.EventName == "ChunkEvent" && ev.EventDisplayName == "" {
			t.Errorf("chunk without a display name: %+v", ev)
		}
	}
	for _, want := range []string{"UserMessageEvent", "ThoughtEvent", "ToolEvent", "ChunkEvent"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("events %q: no %s", names, want)
		}
	}

	// Bob saw nothing of Alice's run: his first events are his own.
	own := run(t, e, &adaptertest.Bob)
	for {
		ev := bob.next()
		if ev.ThreadID != own {
			t.Fatalf("Bob got an event of thread %s (Alice's is %s): %+v", ev.ThreadID, thread, ev)
		}
		if ev.EventName == "Answered" {
			break
		}
	}

	// The stream is read-only.
	if err := alice.conn.Write(ctxTimeout(t), websocket.MessageText, []byte(`{"_event_name":"UserMessageEvent"}`)); err != nil {
		t.Fatal(err)
	}
	_, data, err := alice.conn.Read(ctxTimeout(t))
	if err != nil || !strings.Contains(string(data), "read-only") {
		t.Errorf("inbound event: %s %v, want a refusal", data, err)
	}
}

func TestRefusesBadTokens(t *testing.T) {
	e := adaptertest.Start(t, nil, func(g *gateway.Gateway) { ws.Mount(g, ws.Options{}) })
	for _, first := range []string{`{"token":"Bearer nobody"}`, `hello`} {
		url := "ws" + strings.TrimPrefix(e.Server.URL, "http") + "/events/ws"
		conn, _, err := websocket.Dial(ctxTimeout(t), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Write(ctxTimeout(t), websocket.MessageText, []byte(first)); err != nil {
			t.Fatal(err)
		}
		_, _, err = conn.Read(ctxTimeout(t))
		if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Errorf("first message %s: %v, want close 1008", first, err)
		}
		conn.CloseNow()
	}
}
