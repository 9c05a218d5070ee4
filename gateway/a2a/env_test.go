package a2a_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	a2agw "github.com/saap-go/agent/gateway/a2a"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/step"
	_ "github.com/saap-go/agent/store/redis" // the agents honour REDIS_URL, as in CI
)

const (
	tokenAlice = "alice-token"
	tokenBob   = "bob-token"
	agentID    = "dev"
)

var (
	alice = event.UserIdentity{ID: "alice", Name: "Alice", Email: "alice@example.com", Roles: []string{"user"}}
	bob   = event.UserIdentity{ID: "bob", Name: "Bob", Email: "bob@example.com", Roles: []string{"user"}}
)

// gate holds the greeter's "slow" runs until the test that made it closes
// it; stopped, when set, gets the cause of a "slow" run's context ending.
var (
	gate    chan struct{}
	stopped chan error
)

// greeter is the real agent behind the gateway. "ask" makes it ask the
// user's name (a HITL input question); "fail" makes it fail; any other
// text ("slow" streams dots until gate opens) is greeted in three
// streamed chunks and a stop carrying the whole
// greeting.
type greeter struct{ class string }

func (g *greeter) Class() string { return g.class }

func (g *greeter) Steps() []*step.Step {
	return []*step.Step{step.New(g.Greet), step.New(g.Named)}
}

func (g *greeter) Greet(ctx step.Context, m *event.UserMessageEvent) (step.Either[*event.LLMStopEvent, *event.HumanInTheLoopInputRequestEvent], error) {
	var none step.Either[*event.LLMStopEvent, *event.HumanInTheLoopInputRequestEvent]
	text := ""
	if n := len(m.Messages); n > 0 {
		text = m.Messages[n-1].Content()
	}
	switch text {
	case "ask":
		q, err := hitl.Input("What is your name?")
		if err != nil {
			return none, err
		}
		return step.Other[*event.LLMStopEvent](q), nil
	case "count":
		stop, err := greet(ctx, fmt.Sprint(len(m.Messages), " messages"))
		return step.OneOf[*event.LLMStopEvent, *event.HumanInTheLoopInputRequestEvent](stop), err
	case "fail":
		return none, step.Userf("cannot greet anyone today")
	case "slow":
		// Streams a chunk every 20 ms until the test opens gate, so a
		// client that subscribes at any moment sees one.
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for open := false; !open; {
			if err := ctx.Emit(&event.ChunkEvent{Content: "."}); err != nil {
				return none, err
			}
			select {
			case <-gate:
				open = true
			case <-tick.C:
			case <-ctx.Done():
				if stopped != nil {
					stopped <- context.Cause(ctx)
				}
				return none, ctx.Err()
			}
		}
		stop := &event.LLMStopEvent{}
		stop.OutputMessages = []event.Message{event.MessageFromString("assistant", "Hello, slow")}
		return step.OneOf[*event.LLMStopEvent, *event.HumanInTheLoopInputRequestEvent](stop), nil
	}
	stop, err := greet(ctx, text)
	return step.OneOf[*event.LLMStopEvent, *event.HumanInTheLoopInputRequestEvent](stop), err
}

func (g *greeter) Named(ctx step.Context, r *event.HumanInTheLoopInputResponseEvent) (*event.LLMStopEvent, error) {
	return greet(ctx, r.Response)
}

func greet(ctx step.Context, name string) (*event.LLMStopEvent, error) {
	for _, c := range []string{"Hello", ", ", name} {
		if err := ctx.Emit(&event.ChunkEvent{Content: c}); err != nil {
			return nil, err
		}
	}
	stop := &event.LLMStopEvent{}
	stop.OutputMessages = []event.Message{event.MessageFromString("assistant", "Hello, "+name)}
	return stop, nil
}

// env is a gateway with the A2A adapter in front of a greeter, on an
// embedded nats-server.
type env struct {
	srv   *httptest.Server
	gw    *gateway.Gateway
	class string
	url   string // the A2A base URL of the greeter instance
	nats  string // the NATS server's URL
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newEnv(t testing.TB) *env {
	t.Helper()
	ns, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	class := "Greeter" + event.NewID()[16:]
	startAgent(t, &greeter{class: class}, ns.URL())
	b, err := natsbus.Connect(natsbus.Config{URL: ns.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	gw, err := gateway.New(gateway.Config{
		Bus:       b,
		Auth:      gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice, tokenBob: bob}),
		RateLimit: -1,
		Timeout:   30 * time.Second,
		History:   gateway.NewMemoryHistory(gateway.HistoryLimits{}),
		Logger:    quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	wait, cancelWait := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelWait()
	if _, err := gw.Discover(wait, class); err != nil {
		t.Fatalf("discover: %v", err)
	}
	a2agw.Mount(gw, a2agw.Config{Logger: quiet()})
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return &env{srv: srv, gw: gw, class: class, url: srv.URL + a2agw.Prefix + "/" + class + "/" + agentID, nats: ns.URL()}
}

func ctxTimeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startAgent runs a on the NATS server at url until the test ends.
func startAgent(t testing.TB, a agent.Agent, url string) {
	t.Helper()
	r, err := agent.New(a, agent.WithNATS(url), agent.Standalone(), agent.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- r.Run(ctx) }()
	var early error // Run's result when it returned before it was ready
	returned := false
	t.Cleanup(func() {
		cancel()
		if !returned {
			early = <-ran
		}
		if early != nil {
			t.Errorf("agent: %v", early)
		}
	})
	select {
	case <-r.Ready():
	case err := <-ran:
		returned = true // the cleanup must not wait for a second result
		t.Fatalf("agent stopped before it was ready: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("agent not ready")
	}
}
