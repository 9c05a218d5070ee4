// Package adaptertest runs a real agent (the dispatch engine on an
// embedded nats-server) behind a gateway for the tests and benchmarks of
// the protocol adapters: AG-UI, MCP and the WebSocket stream.
package adaptertest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/engine"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Users and their bearer tokens.
var (
	Alice = event.UserIdentity{ID: "alice", Name: "Alice", Email: "alice@example.com", Roles: []string{"user"}}
	Bob   = event.UserIdentity{ID: "bob", Name: "Bob", Email: "bob@example.com", Roles: []string{"user"}}
)

// Tokens of Alice and Bob.
const (
	TokenAlice = "token-alice"
	TokenBob   = "token-bob"
)

// Class is the test agent's class.
const Class = "HelperAgent"

// Answered is the stop event of the test agent: Content is its answer.
type Answered struct {
	event.StopEvent
	Content string `json:"content"`
}

func init() { event.MustRegister[Answered]() }

// What the test agent does with the last user message:
//
//	"ask":  asks "What is your name?" (an input question, 1 h timeout),
//	        then answers "Hello, <name>!";
//	"fail": fails (an ExceptionEvent);
//	"wait": streams "working", then works until its context ends (the
//	        run is cancelled), tells Env.Stopped the cause, and fails;
//	else:   thinks, calls a tool, streams "Hel" "lo" and stops with
//	        "Hello, world".
const (
	Ask  = "ask"
	Fail = "fail"
	Wait = "wait"
)

// Question is what the agent asks on "ask".
const Question = "What is your name?"

// Emit, when set before Start, is called by the agent for every message
// before it answers, to emit extra display events (AG-UI state).
type Emit func(step.Context) error

// publishDisplay publishes e on the display subject of ctx's run.
func publishDisplay(ctx step.Context, b bus.Bus, e event.Event) error {
	r := ctx.Run()
	subj, err := topic.Agent{Class: r.Class, ID: r.AgentID, Thread: r.ThreadID, Display: r.DisplayID, Run: r.RunID,
		Type: topic.Display, Name: event.Name(e), EventID: e.EventBase().EventID}.Subject()
	if err != nil {
		return err
	}
	data, err := event.Marshal(e)
	if err != nil {
		return err
	}
	return b.Publish(ctx, &bus.Msg{Subject: subj, Data: data})
}

// Env is a gateway with the test agent on an embedded nats-server.
type Env struct {
	Bus     bus.Bus
	Gateway *gateway.Gateway
	Server  *httptest.Server
	// Working receives the run id of each "wait" step once it works;
	// Stopped the cause its context ended with.
	Working chan string
	Stopped chan error
}

// Start starts the agent and a gateway that has discovered it; mount, if
// not nil, mounts adapters before the HTTP server starts.
func Start(t testing.TB, emit Emit, mount func(*gateway.Gateway)) *Env {
	t.Helper()
	b := bustest.NewNATS(t)
	working, stopped := make(chan string, 16), make(chan error, 16)
	w, err := step.NewWorkflow(Class,
		step.New(func(ctx step.Context, m *event.UserMessageEvent) (event.Event, error) {
			text := ""
			if len(m.Messages) > 0 {
				text = m.Messages[len(m.Messages)-1].Content()
			}
			switch strings.TrimSpace(text) {
			case Ask:
				return hitl.Input(Question, hitl.Timeout(time.Hour))
			case Fail:
				return nil, errors.New("the test agent fails on request")
			case Wait:
				ch := event.New[event.ChunkEvent]()
				ch.Content = "working"
				if err := ctx.Emit(ch); err != nil {
					return nil, err
				}
				working <- ctx.Run().RunID
				<-ctx.Done()
				stopped <- context.Cause(ctx)
				return nil, context.Cause(ctx)
			}
			if emit != nil {
				if err := emit(ctx); err != nil {
					return nil, err
				}
			}
			thought := event.New[event.ThoughtEvent]()
			thought.ReasoningContent = event.Str("the user greets me")
			if err := ctx.Emit(thought); err != nil {
				return nil, err
			}
			tool := event.New[event.ToolEvent]()
			tool.ToolCallID, tool.Name = event.Str("call_1"), event.Str("lookup")
			tool.Parameters = map[string]json.RawMessage{"q": json.RawMessage(`"greeting"`)}
			if err := event.SetExtra(tool, "result", []byte(`"hello"`)); err != nil {
				return nil, err
			}
			// Steps have no way yet to publish semantic events: the test
			// publishes the tool call on the run's display subject itself.
			if err := publishDisplay(ctx, b, event.Stamp(tool)); err != nil {
				return nil, err
			}
			for _, c := range []string{"Hel", "lo"} {
				ch := event.New[event.ChunkEvent]()
				ch.Content = c
				if err := ctx.Emit(ch); err != nil {
					return nil, err
				}
			}
			return &Answered{Content: "Hello, world"}, nil
		}, step.Name("Answer"), step.Emits((*Answered)(nil), (*event.HumanInTheLoopInputRequestEvent)(nil))),
		step.New(func(_ step.Context, r *event.HumanInTheLoopInputResponseEvent) (*Answered, error) {
			return &Answered{Content: "Hello, " + r.Response + "!"}, nil
		}, step.Name("Greet")),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.EnsureStream(ctx, bus.AgentStream(Class)); err != nil {
		t.Fatalf("ensure stream: %v", err)
	}
	sto := memstore.New()
	eng, err := engine.New(w, b, sto, engine.WithHeartbeat(0))
	if err != nil {
		t.Fatal(err)
	}
	// Each delivery in a goroutine of its own, as a runner does: a step
	// that works until it is cancelled holds up nothing else.
	var handling sync.WaitGroup
	hctx, stopHandling := context.WithCancel(ctx) // ends a step still working when the test ends
	cons, err := b.Consume(ctx, bus.RunnerConsumer(Class), func(d bus.Delivery) { handling.Go(func() { eng.Handle(hctx, d) }) })
	if err != nil {
		stopHandling()
		t.Fatal(err)
	}
	// The class answers run-status requests, as a runner does.
	statusSub, err := status.Serve(ctx, b, sto, Class, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = statusSub.Unsubscribe()
		_ = cons.Stop()
		stopHandling()
		handling.Wait()
		eng.Close()
	})
	resp, err := discovery.Build(w, discovery.Class{})
	if err != nil {
		t.Fatal(err)
	}
	// The class answers discovery too, for gateways of other processes.
	srvDisc, err := discovery.Serve(ctx, b, resp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srvDisc.Stop() })
	gw, err := gateway.New(gateway.Config{
		Bus:       b,
		Auth:      gateway.StaticTokens(map[string]event.UserIdentity{TokenAlice: Alice, TokenBob: Bob}),
		RateLimit: -1, MaxRunsPerUser: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.AddClass(resp); err != nil {
		t.Fatal(err)
	}
	if mount != nil {
		mount(gw)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return &Env{Bus: b, Gateway: gw, Server: srv, Working: working, Stopped: stopped}
}

// Ctx is a context for one call of a test, cancelled after 30 s or when
// the test ends.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
