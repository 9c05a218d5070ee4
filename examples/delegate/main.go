// Command delegate runs three agents on one NATS server: a planner that
// delegates a question to two other agents at once (agent-in-the-loop) and
// combines their answers, a researcher and a critic. Each delegation has a
// timeout; with -slow the critic takes longer than that, and the planner
// combines the researcher's answer with a note that the critic timed out.
//
// Usage:
//
//	go run ./examples/delegate                      # both answer in time
//	go run ./examples/delegate -slow                # the critic misses its timeout
//	go run ./examples/delegate -ask "text"          # plan something else
//	go run ./examples/delegate -timeout 3s -slow    # a longer wait
//	go run ./examples/delegate -trace               # export the three runs' spans over OTLP
//
// With NATS_URL set the agents join that server instead of an embedded one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	_ "github.com/saap-go/agent/embedded" // the planner starts a NATS server when NATS_URL is unset
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/examples/internal/demo/demotrace"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
	_ "github.com/saap-go/agent/store/redis" // REDIS_URL keeps run state in Redis
	"github.com/saap-go/agent/topic"
)

// Answer ends a delegate's run: its contribution to the plan.
type Answer struct {
	event.StopEvent
	Content string `json:"content"`
}

// Plan ends the planner's run with the combined answer.
type Plan struct {
	event.StopEvent
	Content string `json:"content"`
}

func init() {
	event.MustRegister[Answer]()
	event.MustRegister[Plan]()
}

// Planner asks the researcher and the critic at once and combines what
// comes back.
type Planner struct {
	// Timeout bounds each delegate's answer.
	Timeout time.Duration
}

// Steps is the planner's workflow: Delegate fans out two AITL requests;
// Combine runs once both have an outcome (an answer, a failure or a
// timeout).
func (p Planner) Steps() []*step.Step {
	return []*step.Step{
		step.New(p.Delegate, step.Description("asks the researcher and the critic at once")),
		step.New(p.Combine, step.Description("combines both outcomes")),
	}
}

// Delegate returns one request per delegate; the runtime starts both runs.
func (p Planner) Delegate(ctx step.Context, m *event.UserMessageEvent) ([]*event.AgentInTheLoopRequestEvent, error) {
	question := lastText(m)
	if question == "" {
		return nil, errors.New("nothing to plan: the last message has no text")
	}
	var out []*event.AgentInTheLoopRequestEvent
	for _, class := range []string{"Researcher", "Critic"} {
		r, err := hitl.Delegate(class, "default", userMessage(question), hitl.DelegateTimeout(p.Timeout))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Outcome is what a delegation ended with.
type Outcome = step.Either3[*event.AgentInTheLoopResponseEvent, *event.AgentInTheLoopExceptionEvent, *event.AgentInTheLoopTimeoutEvent]

// Combine gets both outcomes at once, in arrival order, and puts them in
// the order the requests were made.
func (Planner) Combine(ctx step.Context, outcomes [2]Outcome, requests []*event.AgentInTheLoopRequestEvent) (*Plan, error) {
	byRequest := map[string]string{}
	for _, o := range outcomes {
		switch {
		case o.A != nil:
			text := event.Name(o.A.StopEvent)
			if a, ok := o.A.StopEvent.(*Answer); ok {
				text = a.Content
			}
			byRequest[o.A.RequestEventID] = text
		case o.B != nil:
			byRequest[o.B.RequestEventID] = "failed"
		case o.C != nil:
			byRequest[o.C.RequestEventID] = fmt.Sprintf("no answer within %gs", o.C.TimeoutSeconds)
		}
	}
	var b strings.Builder
	for i, r := range requests {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s: %s.", *r.OtherAgentTopic.AgentClass, byRequest[r.EventID])
	}
	return &Plan{Content: b.String()}, nil
}

// Researcher collects facts.
type Researcher struct{}

// Steps is the researcher's one step.
func (r Researcher) Steps() []*step.Step { return []*step.Step{step.New(r.Research)} }

// Research answers at once.
func (Researcher) Research(ctx step.Context, m *event.UserMessageEvent) (*Answer, error) {
	return &Answer{Content: fmt.Sprintf("three facts about %q", lastText(m))}, nil
}

// Critic looks for risks; Delay makes it slow.
type Critic struct{ Delay time.Duration }

// Steps is the critic's one step.
func (c Critic) Steps() []*step.Step { return []*step.Step{step.New(c.Critique)} }

// Critique answers after Delay.
func (c Critic) Critique(ctx step.Context, m *event.UserMessageEvent) (*Answer, error) {
	if c.Delay > 0 {
		t := time.NewTimer(c.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &Answer{Content: fmt.Sprintf("one risk in %q", lastText(m))}, nil
}

func lastText(m *event.UserMessageEvent) string {
	if n := len(m.Messages); n > 0 {
		return strings.TrimSpace(m.Messages[n-1].Content())
	}
	return ""
}

func userMessage(text string) *event.UserMessageEvent {
	return &event.UserMessageEvent{
		User:     &event.UserIdentity{ID: "demo-user", Name: "Demo User", Email: "demo@example.com", Roles: []string{"user"}},
		Messages: []event.ChatMessage{event.Text(event.RoleUser, text)},
	}
}

func main() {
	ask := flag.String("ask", "Launch the new agent platform in March", "what to plan")
	slow := flag.Bool("slow", false, "make the critic slower than the delegation timeout")
	timeout := flag.Duration("timeout", time.Second, "how long the planner waits for each delegate")
	verbose := flag.Bool("v", false, "log the runners' info messages")
	traced := flag.Bool("trace", false, "export OpenInference spans over OTLP (OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318); setting that variable turns tracing on too")
	flag.Parse()
	if err := run(*ask, *slow, *timeout, *verbose, *traced, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "delegate:", err)
		os.Exit(1)
	}
}

func run(ask string, slow bool, timeout time.Duration, verbose, traced bool, out io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	critic := Critic{}
	if slow {
		critic.Delay = 3 * timeout
	}

	exp, err := demotrace.Start(ctx, traced, out)
	if err != nil {
		return err
	}
	var opts []agent.Option
	if exp != nil {
		opts = append(opts, agent.WithTracerProvider(exp.TracerProvider()))
	}

	// The planner starts first: without NATS_URL it starts an embedded
	// server, which the delegates then join.
	runCtx, cancel := context.WithCancel(ctx)
	var stopped []<-chan error
	defer func() {
		cancel()
		for _, s := range stopped {
			<-s
		}
		// After the runners: their run spans end when they stop.
		if exp != nil {
			if err := exp.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "tracing: %v\n", err)
			}
		}
	}()
	planner, plannerStopped, err := start(runCtx, Planner{Timeout: timeout}, log, opts...)
	if err != nil {
		return err
	}
	stopped = append(stopped, plannerStopped)
	url := planner.Info().NATSURL
	for _, a := range []agent.Agent{Researcher{}, critic} {
		_, s, err := start(runCtx, a, log, append(opts, agent.WithNATS(url))...)
		if err != nil {
			return err
		}
		stopped = append(stopped, s)
	}

	b, err := natsbus.Connect(natsbus.Config{URL: url})
	if err != nil {
		return err
	}
	defer b.Close()
	run := topic.Agent{Class: "Planner", ID: "default", Thread: event.NewID(), Display: event.NewID(), Run: event.NewID()}
	// The delegates share the planner's thread and display, so one
	// subscription shows all three runs, as a chat client would.
	done := make(chan *Plan, 1)
	pattern, err := topic.ThreadDisplay(run.Thread, run.Display)
	if err != nil {
		return err
	}
	sub, err := b.Subscribe(ctx, pattern, "", func(m *bus.Msg) {
		tp, err := topic.ParseAgent(m.Subject)
		if err != nil {
			return
		}
		ev, err := event.Unmarshal(m.Data)
		if err != nil {
			return
		}
		fmt.Fprintf(out, "%-10s %s\n", tp.Class, event.Name(ev))
		if p, ok := ev.(*Plan); ok && tp.Class == "Planner" {
			done <- p
		}
	})
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()

	m := userMessage(ask)
	event.Stamp(m)
	if _, err := bus.PublishEvent(ctx, b, run, m, nil); err != nil {
		return err
	}
	select {
	case p := <-done:
		fmt.Fprintf(out, "\nplan: %s\n", p.Content)
		return nil
	case <-time.After(timeout + 30*time.Second):
		return errors.New("the planner did not finish")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// start runs a until ctx is done and returns once it takes events;
// stopped is closed when the runner has stopped.
func start(ctx context.Context, a agent.Agent, log *slog.Logger, opts ...agent.Option) (r *agent.Runner, stopped <-chan error, err error) {
	opts = append([]agent.Option{agent.Standalone(), agent.WithLogger(log), agent.WithShutdownTimeout(time.Second)}, opts...)
	r, err = agent.New(a, opts...)
	if err != nil {
		return nil, nil, err
	}
	errc := make(chan error, 1)
	go func() {
		errc <- r.Run(ctx)
		close(errc)
	}()
	select {
	case <-r.Ready():
		return r, errc, nil
	case err := <-errc:
		return nil, nil, fmt.Errorf("%s: %w", r.Class(), err)
	}
}
