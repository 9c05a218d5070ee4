package agent_test

import (
	"context"
	"fmt"
	"log/slog"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Greeter answers a chat message with one streamed chunk and ends the run.
type Greeter struct{}

func (g *Greeter) Steps() []*step.Step { return []*step.Step{step.New(g.Greet)} }

func (g *Greeter) Greet(ctx step.Context, m *event.UserMessageEvent) (*event.StopEvent, error) {
	name := "stranger"
	if m.User != nil {
		name = m.User.Name
	}
	if err := ctx.Emit(&event.ChunkEvent{Content: "Hello, " + name + "!"}); err != nil {
		return nil, err
	}
	return &event.StopEvent{}, nil
}

// Run serves an agent until its context is cancelled. Here the agent runs on
// an embedded nats-server (no NATS_URL set), and the example plays the
// gateway: it sends one chat message and prints the streamed answer.
func ExampleRun() {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan agent.Info, 1)
	go func() {
		defer cancel() // stop the agent once the conversation is over
		info := <-ready
		if err := chat(ctx, info); err != nil {
			fmt.Println(err)
		}
	}()

	err := agent.Run(ctx, &Greeter{},
		agent.Standalone(), // no platform API around: use the defaults
		agent.WithReady(func(i agent.Info) { ready <- i }),
		agent.WithLogger(slog.New(slog.DiscardHandler)),
	)
	fmt.Println("Run returned", err)
	// Output:
	// ChunkEvent: Hello, Ursula!
	// StopEvent
	// Run returned <nil>
}

// chat sends a UserMessageEvent to the Greeter and prints its display events
// until the StopEvent.
func chat(ctx context.Context, info agent.Info) error {
	b, err := natsbus.Connect(natsbus.Config{URL: info.NATSURL})
	if err != nil {
		return err
	}
	defer b.Close()
	run := topic.Agent{Class: info.Class, ID: "demo", Thread: event.NewID(), Display: event.NewID(), Run: event.NewID()}
	pattern, _ := topic.ThreadDisplay(run.Thread, run.Display)
	got := make(chan event.Event, 8)
	sub, err := b.Subscribe(ctx, pattern, "", func(m *bus.Msg) {
		if ev, err := event.Unmarshal(m.Data); err == nil {
			got <- ev
		}
	})
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()

	msg := event.Stamp(&event.UserMessageEvent{
		User:     &event.UserIdentity{ID: "u1", Name: "Ursula", Email: "ursula@example.com", Roles: []string{}},
		Messages: []event.ChatMessage{event.Text(event.RoleUser, "Hi")},
	})
	if _, err := bus.PublishEvent(ctx, b, run, msg, nil); err != nil {
		return err
	}
	for ev := range got {
		switch e := ev.(type) {
		case *event.ChunkEvent:
			fmt.Println("ChunkEvent:", e.Content)
		case *event.StopEvent:
			fmt.Println("StopEvent")
			return nil
		}
	}
	return nil
}

// New checks an agent without any I/O; the Runner's Ready channel tells
// when it takes events, which tests and embedding programs wait on.
func ExampleNew() {
	r, err := agent.New(&Greeter{}, agent.Standalone(), agent.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	<-r.Ready()
	fmt.Println("serving", r.Info().Class, "on", r.Info().Consumer)
	cancel()
	fmt.Println("stopped:", <-done)
	// Output:
	// serving Greeter on agent_runner_Greeter
	// stopped: <nil>
}
