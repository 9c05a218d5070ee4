// Command devmode runs an agent in dev mode: the agent, the HTTP gateway and
// the dev console in one process, on an embedded NATS server (or NATS_URL).
//
//	go run ./examples/devmode                # serves on 127.0.0.1:8080
//	go run ./examples/devmode -addr :9090
//
// It prints the console's URL, the NATS URL for the saap command, and a
// curl line. Open the console, say hello, or start a message with "name"
// and the agent asks for yours. Stop it with Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/saap-go/agent/dev"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
)

// Answered ends a run with the whole answer.
type Answered struct {
	event.StopEvent
	Answer string `json:"answer"`
}

func init() { event.MustRegister[Answered]() }

// Greeter streams a greeting, or first asks for the user's name.
type Greeter struct{}

// Steps is the workflow: Hello, and Welcome for the answer to its question.
func (g Greeter) Steps() []*step.Step {
	return []*step.Step{
		step.New(g.Hello, step.Emits((*Answered)(nil), (*event.HumanInTheLoopInputRequestEvent)(nil))),
		step.New(g.Welcome),
	}
}

// Hello asks for a name when the message starts with "name", else answers.
func (Greeter) Hello(ctx step.Context, msg *event.UserMessageEvent) (event.Event, error) {
	text := msg.Messages[len(msg.Messages)-1].Content()
	if strings.HasPrefix(strings.ToLower(text), "name") {
		return hitl.Input("What is your name?")
	}
	return stream(ctx, "Hello! You said: "+text)
}

// Welcome greets the name the user gave.
func (Greeter) Welcome(ctx step.Context, r *event.HumanInTheLoopInputResponseEvent) (*Answered, error) {
	return stream(ctx, "Welcome, "+r.Response+"!")
}

// stream sends the answer word by word, as a model would.
func stream(ctx step.Context, answer string) (*Answered, error) {
	for _, w := range strings.SplitAfter(answer, " ") {
		if err := ctx.Emit(&event.ChunkEvent{Content: w}); err != nil {
			return nil, err
		}
	}
	return &Answered{Answer: answer}, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "where the gateway and the console listen (loopback only; port 0 picks one)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := dev.Run(ctx, *addr, Greeter{}); err != nil {
		fmt.Fprintln(os.Stderr, "devmode:", err)
		os.Exit(1)
	}
}
