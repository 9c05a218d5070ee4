package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/topic"
)

// A gateway in front of an agent class. Here the agent is played by a bus
// subscription that answers every start event with a StopEvent; a real one
// is agent.Run. The gateway usually learns the class by discovery (Run,
// ListenAndServe or Discover); AddClass registers it directly.
func Example() {
	ctx := context.Background()
	b := memory.New(memory.Options{})
	defer b.Close()
	_ = b.EnsureStream(ctx, bus.AgentStream("EchoAgent"))
	sub, _ := b.Subscribe(ctx, "agent.EchoAgent.*.*.*.*.control_event.*.*", "", func(m *bus.Msg) {
		t, _ := topic.ParseAgent(m.Subject)
		if t.Name == "UserMessageEvent" {
			stop := event.Stamp(&event.StopEvent{})
			t.Name, t.EventID = "", ""
			_, _ = bus.PublishEvent(ctx, b, t, stop, nil)
		}
	})
	defer sub.Unsubscribe()

	gw, _ := gateway.New(gateway.Config{
		Bus:  b,
		Auth: gateway.StaticTokens(map[string]event.UserIdentity{"secret": {ID: "ada", Name: "Ada", Email: "ada@example.com", Roles: []string{}}}),
	})
	// The class as its agent answers discovery (discovery.Build makes this
	// from a workflow); Discover or Run would learn it from the bus.
	_ = gw.AddClass(&event.AgentClassDiscoveryResponseEvent{AgentClass: "EchoAgent", StartEvents: []event.EventSpecs{{
		EventName:    "UserMessageEvent",
		EventParents: []string{"UserMessageEvent", "StartEvent", "ControlAndDisplayEvent", "ControlEvent", "DisplayEvent"},
	}}})
	srv := httptest.NewServer(gw)
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/acme/agents/classes/EchoAgent/instances/dev/UserMessageEvent",
		strings.NewReader(`{"messages":[{"role":"user","content":"Hello"}]}`))
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	terminal, err := event.Unmarshal(body) // the answer is the terminal event's JSON
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Status, event.Name(terminal))

	req, _ = http.NewRequest("POST", srv.URL+"/agents/NoSuchAgent/dev/UserMessageEvent", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer secret")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.Status, strings.TrimSpace(string(body)))
	// Output:
	// 200 OK StopEvent
	// 404 Not Found {"detail":"unknown agent class \"NoSuchAgent\"","field":"agent_class"}
}

// A gateway for production: thread membership and HITL questions in a
// JetStream key-value bucket on the agents' NATS server (so restarts and
// replicas keep them), and a server with timeouts and a connection cap.
func ExampleNewKVStore() {
	ctx := context.Background()
	b, err := natsbus.Connect(natsbus.Config{URL: "nats://127.0.0.1:4222"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	store, err := gateway.NewKVStore(ctx, b.JetStream(), gateway.KVConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	gw, err := gateway.New(gateway.Config{
		Bus:     b,
		Auth:    gateway.TokenFunc(verifyToken),
		Threads: store, // also its Questions
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() { _ = gw.Run(ctx) }() // discovery and the question watch
	srv := gateway.NewServer(gw, gateway.ServerConfig{MaxConns: 4096})
	srv.Addr = "127.0.0.1:8080"
	_ = srv.ListenAndServe()
}

// verifyToken stands for a real token verifier (OIDC introspection, ...).
func verifyToken(_ context.Context, token string) (*event.UserIdentity, error) {
	return nil, fmt.Errorf("%w: token verification not configured", gateway.ErrUnauthenticated)
}
