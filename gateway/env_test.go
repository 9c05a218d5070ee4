package gateway_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
)

var (
	alice = event.UserIdentity{ID: "alice", Name: "Alice", Email: "alice@example.com", Roles: []string{"user"}}
	bob   = event.UserIdentity{ID: "bob", Name: "Bob", Email: "bob@example.com", Roles: []string{"user"}}
)

// env is a gateway in front of a responder agent on one bus.
type env struct {
	bus   bus.Bus
	gw    *gateway.Gateway
	srv   *httptest.Server
	agent *responder
}

type envOption func(*gateway.Config)

// newEnv starts a responder for class "EchoAgent", a gateway that has
// discovered it, and an HTTP test server.
func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	b := newBus(t)
	r := startResponder(t, b, "EchoAgent")
	cfg := gateway.Config{
		Bus:             b,
		Auth:            gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice, tokenBob: bob}),
		DiscoveryWindow: 10 * time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gw.Discover(ctxTimeout(t), "EchoAgent"); err != nil {
		t.Fatalf("discover: %v", err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return &env{bus: b, gw: gw, srv: srv, agent: r}
}

// newBus returns the bus the test runs on.
func newBus(t *testing.T) bus.Bus {
	t.Helper()
	b := memory.New(memory.Options{})
	t.Cleanup(func() { _ = b.Close() })
	return b
}
