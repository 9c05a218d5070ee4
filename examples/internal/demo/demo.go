// Package demo runs an agent and the HTTP gateway in one process, as the
// bundled examples do: the agent runner (with its embedded nats-server, or
// the server of NATS_URL), a gateway on the same server that has discovered
// the agent's class, and a client that sends a request through the gateway
// and prints the run's events as they cross the bus.
//
// It uses only the SDK's public API; copy it when you embed an agent and a
// gateway in one binary of your own. It links neither the OTLP exporters
// nor the Redis store: an example that offers -trace passes
// demotrace.Tracing, one that honours REDIS_URL imports store/redis.
package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	_ "github.com/saap-go/agent/embedded" // the examples start a NATS server when NATS_URL is unset
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/internal/eventline"
	"github.com/saap-go/agent/topic"
)

// User is the identity the demo gateway gives every request (it runs with
// gateway.Anonymous: never expose it).
var User = event.UserIdentity{ID: "demo-user", Name: "Demo User", Email: "demo@example.com", Roles: []string{"user"}}

// Options configure Start.
type Options struct {
	// Platform fetches the agent's configuration from the platform's config
	// service (request/reply on aihub.rpc.config.agent.<Class>.<id>)
	// instead of running standalone with the agent's defaults.
	Platform bool
	// Verbose logs the runner's and the gateway's info messages to stderr.
	Verbose bool
	// Out receives the printed events (default os.Stdout).
	Out io.Writer
	// AllowAnonymousRemote lets Serve offer the anonymous gateway on an
	// address other machines can reach; without it Serve only binds to
	// loopback addresses.
	AllowAnonymousRemote bool
	// Trace is the -trace flag, passed to Tracing.
	Trace bool
	// Tracing, if set, starts exporting the runner's spans
	// (demotrace.Tracing: over OTLP, as the OTEL_* variables say).
	Tracing Tracing
}

// Tracing starts exporting spans: on is the -trace flag, and an
// implementation may turn on from the environment too. A nil provider
// means no tracing; stop runs after the runner has stopped, so that its
// last spans are exported.
type Tracing func(ctx context.Context, on bool, out io.Writer) (tp trace.TracerProvider, stop func() error, err error)

// Env is a running agent and gateway.
type Env struct {
	Class   string
	Gateway *gateway.Gateway
	Bus     *natsbus.Bus
	// Try, if set, replaces the curl line Serve prints: each line is
	// printed with the gateway's base URL for every %[1]s.
	Try []string

	out        io.Writer
	runner     *agent.Runner
	stopRunner context.CancelFunc
	runnerDone chan error
	httpAddr   string
	instance   string // agent_id Serve's hint addresses
	stopHTTP   context.CancelFunc
	httpDone   chan error
	stopTrace  func() error // nil: not tracing
}

// Start starts the agent's runner, connects a gateway to the same NATS
// server, waits until the gateway has discovered the agent's class, and
// serves the gateway on a loopback port for Ask.
func Start(ctx context.Context, a agent.Agent, o Options) (*Env, error) {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	level := slog.LevelWarn
	if o.Verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	opts := []agent.Option{agent.WithLogger(log)}
	if !o.Platform {
		opts = append(opts, agent.Standalone())
	}
	var stopTrace func() error
	if o.Tracing != nil {
		tp, stopT, err := o.Tracing(ctx, o.Trace, o.Out)
		if err != nil {
			return nil, err
		}
		if tp != nil {
			opts, stopTrace = append(opts, agent.WithTracerProvider(tp)), stopT
		}
	}
	runner, err := agent.New(a, opts...)
	if err != nil {
		if stopTrace != nil {
			_ = stopTrace()
		}
		return nil, err
	}
	e := &Env{Class: runner.Class(), out: o.Out, runner: runner, runnerDone: make(chan error, 1), stopTrace: stopTrace}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	e.stopRunner = stop
	go func() { e.runnerDone <- runner.Run(runCtx) }()
	select {
	case <-runner.Ready():
	case err := <-e.runnerDone:
		stop()
		return nil, fmt.Errorf("agent runner: %w", err)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}

	// The gateway joins the runner's server: the embedded one, or NATS_URL
	// with its credentials.
	cfg := natsbus.Config{URL: runner.Info().NATSURL}
	if !runner.Info().Embedded {
		if cfg, err = natsbus.ConfigFromEnv(); err != nil {
			e.Close()
			return nil, err
		}
	}
	cfg.Name, cfg.Logger = "saap-gateway", log
	if e.Bus, err = natsbus.Connect(cfg); err != nil {
		e.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	e.Gateway, err = gateway.New(gateway.Config{Bus: e.Bus, Auth: gateway.Anonymous(User), Logger: log,
		AllowAnonymousRemote: o.AllowAnonymousRemote})
	if err != nil {
		e.Close()
		return nil, err
	}
	if _, err := e.Gateway.Discover(ctx, e.Class); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Serve serves the gateway on addr until ctx is done, printing where it
// listens. An address without a host (":8080") binds to 127.0.0.1: the demo
// gateway lets anyone in. The discovery cycle runs every 60 s meanwhile.
func (e *Env) Serve(ctx context.Context, addr string) error {
	return e.Gateway.ListenAndServe(ctx, gateway.LoopbackAddr(addr), func(a net.Addr) {
		base := "http://" + a.String()
		fmt.Fprintf(e.out, "gateway listening on %s (agent class %s)\n", base, e.Class)
		id := e.instance
		if id == "" {
			id = "demo"
		}
		if len(e.Try) > 0 {
			fmt.Fprintln(e.out, "try:")
			for _, l := range e.Try {
				fmt.Fprintf(e.out, "  "+l+"\n", base)
			}
		} else {
			fmt.Fprintf(e.out, "try:\n  curl -N %s/agents/%s/%s/UserMessageEvent/stream -d '{\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}'\n", base, e.Class, id)
		}
		fmt.Fprintf(e.out, "stop with Ctrl-C\n")
	})
}

// Close stops the gateway and the runner and waits for both.
func (e *Env) Close() {
	if e.stopHTTP != nil {
		e.stopHTTP()
		<-e.httpDone
	}
	if e.Bus != nil {
		_ = e.Bus.Close()
	}
	e.stopRunner()
	if err := <-e.runnerDone; err != nil {
		fmt.Fprintf(os.Stderr, "agent runner: %v\n", err)
	}
	if e.stopTrace != nil {
		// After the runner: its last run spans end when it stops. An
		// endpoint that does not answer holds the exit up for at most
		// otlp.FlushTimeout.
		if err := e.stopTrace(); err != nil {
			fmt.Fprintf(os.Stderr, "tracing: %v\n", err)
		}
	}
}

// listen serves the gateway on a loopback port, once.
func (e *Env) listen(ctx context.Context) (string, error) {
	if e.httpAddr != "" {
		return e.httpAddr, nil
	}
	hctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	ready := make(chan string, 1)
	e.stopHTTP, e.httpDone = stop, make(chan error, 1)
	go func() {
		e.httpDone <- e.Gateway.ListenAndServe(hctx, "127.0.0.1:0", func(a net.Addr) { ready <- a.String() })
	}()
	select {
	case e.httpAddr = <-ready:
		return e.httpAddr, nil
	case err := <-e.httpDone:
		e.stopHTTP = nil
		return "", err
	}
}

// Result is the outcome of Ask.
type Result struct {
	// Terminal is the JSON of the event that ended the request.
	Terminal json.RawMessage
	// Name is its _event_name.
	Name string
	// Answer is the text it carries: the last output message of an LLM stop,
	// a content field, an exception's message or a HITL question.
	Answer string
	// Events counts the events printed, by name.
	Events map[string]int
	// Stream lists the _event_name of every event the client received on
	// the gateway's stream, in order.
	Stream []string
	// Thread and Display are the ids the request ran in; an answer to a
	// question the run asked goes to the same thread.
	Thread, Display string
}

// Ask sends body as startEvent to instance id of the class through the
// gateway's streaming endpoint, prints every event of the run's thread as it
// crosses the bus (subject, event name, content), and returns when the
// stream ended.
func (e *Env) Ask(ctx context.Context, id, startEvent string, body any) (*Result, error) {
	return e.post(ctx, id, startEvent, event.NewID(), event.NewID(), body)
}

// Answer answers the HITL question that ended asked (its Terminal event)
// with response, through the gateway's endpoint for responseEvent, in the
// question's thread, and follows the run as Ask does.
func (e *Env) Answer(ctx context.Context, id, responseEvent string, asked *Result, response any) (*Result, error) {
	body := map[string]any{"response": response, "request_event": asked.Terminal}
	return e.post(ctx, id, responseEvent, asked.Thread, asked.Display, body)
}

func (e *Env) post(ctx context.Context, id, eventName, thread, display string, body any) (*Result, error) {
	addr, err := e.listen(ctx)
	if err != nil {
		return nil, err
	}
	p := &printer{out: e.out, events: map[string]int{}, terminal: make(chan struct{})}
	pattern, err := topic.AgentPattern{Thread: thread, Display: display}.Subject()
	if err != nil {
		return nil, err
	}
	sub, err := e.Bus.Subscribe(ctx, pattern, "", p.print)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()

	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("http://%s/agents/%s/%s/%s/stream?thread_id=%s&display_id=%s", addr, e.Class, id, eventName, thread, display)
	fmt.Fprintf(e.out, "POST %s\n     %s\n\n", strings.Replace(url, "?", "\n     ?", 1), data)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("gateway answered %s: %s", resp.Status, msg)
	}
	var last string
	var lastEvent event.Event
	var stream []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if d == "[DONE]" {
				break
			}
			ev, err := event.Unmarshal([]byte(d))
			if err != nil {
				return nil, fmt.Errorf("the stream carried an undecodable event: %w", err)
			}
			last, lastEvent = d, ev
			stream = append(stream, event.Name(ev))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the stream: %w", err)
	}
	if last == "" {
		return nil, errors.New("the stream ended without an event")
	}
	// The stream's terminal event also reaches our own subscription; wait
	// for it so the printout is complete.
	select {
	case <-p.terminal:
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &Result{Terminal: json.RawMessage(last), Name: event.Name(lastEvent), Answer: answerOf(lastEvent, []byte(last)),
		Events: p.counts(), Stream: stream, Thread: thread, Display: display}, nil
}

// Follow prints the events of the thread and display asked ran in until
// the next stop or exception there, and returns it: for a run that goes on
// without the client, e.g. after a question timed out. It sees only what
// is published after it subscribed.
func (e *Env) Follow(ctx context.Context, asked *Result) (*Result, error) {
	p := &printer{out: e.out, events: map[string]int{}, terminal: make(chan struct{}), ends: true}
	pattern, err := topic.AgentPattern{Thread: asked.Thread, Display: asked.Display}.Subject()
	if err != nil {
		return nil, err
	}
	sub, err := e.Bus.Subscribe(ctx, pattern, "", p.print)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	select {
	case <-p.terminal:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	last := p.last
	p.mu.Unlock()
	ev, err := event.Unmarshal(last)
	if err != nil {
		return nil, err
	}
	return &Result{Terminal: json.RawMessage(last), Name: event.Name(ev), Answer: answerOf(ev, last),
		Events: p.counts(), Thread: asked.Thread, Display: asked.Display}, nil
}

// printer prints each event of the thread as one line.
type printer struct {
	mu       sync.Mutex
	out      io.Writer
	events   map[string]int
	terminal chan struct{}
	done     bool
	ends     bool   // only a stop or an exception is terminal
	last     []byte // the terminal event
}

func (p *printer) print(m *bus.Msg) {
	t, err := topic.ParseAgent(m.Subject)
	if err != nil {
		return
	}
	e, err := event.Unmarshal(m.Data)
	if err != nil {
		return
	}
	kind := "control"
	if t.Type == topic.Display {
		kind = "display"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events[t.Name]++
	fmt.Fprintf(p.out, "%s %-34s %s\n        %s\n", kind, t.Name, contentOf(e, m.Data), m.Subject)
	terminal := event.IsStop(e) || event.IsException(e) || (event.IsHITLRequest(e) && !p.ends)
	if terminal && t.Type == topic.Display && !p.done {
		p.done, p.last = true, m.Data
		close(p.terminal)
	}
}

func (p *printer) counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.events))
	for k, v := range p.events {
		out[k] = v
	}
	return out
}

// contentOf is the part of an event worth printing on its line: its
// answer if it carries one, else its one-line summary.
func contentOf(e event.Event, raw []byte) string {
	if a := answerOf(e, raw); a != "" {
		return fmt.Sprintf("%q", eventline.Clip(a))
	}
	return eventline.Summary(e, raw)
}

// answerOf reads the text a terminal event carries, through the codec: the
// last output message of an LLM stop, an exception's message, a HITL
// question, else an answer or content field of a custom event.
func answerOf(e event.Event, raw []byte) string {
	switch {
	case event.Has(e, "LLMEvent"):
		if x, err := event.UnmarshalAs[event.LLMEvent](raw); err == nil && len(x.OutputMessages) > 0 {
			return x.OutputMessages[len(x.OutputMessages)-1].Content()
		}
	case event.IsException(e):
		if x, err := event.UnmarshalAs[event.ExceptionEvent](raw); err == nil {
			return x.Message
		}
	case event.IsHITLRequest(e):
		if x, err := event.UnmarshalAs[event.HumanInTheLoopRequestEvent](raw); err == nil {
			return x.Question
		}
	}
	// Custom events declare these fields or carry them as extras: read
	// them with the codec's value decoding, which ignores the rest.
	var x struct {
		Answer  *string `json:"answer"`
		Content *string `json:"content"`
	}
	if event.UnmarshalValue(raw, &x) == nil {
		switch {
		case x.Answer != nil:
			return *x.Answer
		case x.Content != nil:
			return *x.Content
		}
	}
	return ""
}
