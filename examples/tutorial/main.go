// Command tutorial is the README's two-step agent: Greeter cleans up the
// user's message, then answers it, streaming a chunk and ending the run.
// main_test.go tests it with agenttest. Run it with `go run
// ./examples/tutorial` (embedded NATS; NATS_URL joins a server) and stop it
// with Ctrl-C or SIGTERM.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/saap-go/agent"
	_ "github.com/saap-go/agent/embedded" // a NATS server in the process when NATS_URL is unset
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// Cleaned carries the tidied-up message from the first step to the second.
type Cleaned struct {
	event.ControlEvent
	Text string `json:"text"`
}

// Greeted ends the run with the reply.
type Greeted struct {
	event.StopEvent
	Reply string `json:"reply"`
}

func init() {
	event.MustRegister[Cleaned]()
	event.MustRegister[Greeted]()
}

// Greeter is the agent: a value whose methods are its steps.
type Greeter struct{}

// Steps lists the steps; their signatures say what they consume and produce.
func (g Greeter) Steps() []*step.Step {
	return []*step.Step{step.New(g.Clean), step.New(g.Reply)}
}

// Clean runs on the user's message.
func (Greeter) Clean(ctx step.Context, msg *event.UserMessageEvent) (*Cleaned, error) {
	text := msg.Messages[len(msg.Messages)-1].Content()
	return &Cleaned{Text: strings.Join(strings.Fields(text), " ")}, nil
}

// Reply runs on Clean's output: it streams a chunk to the user, then ends the run.
func (Greeter) Reply(ctx step.Context, c *Cleaned) (*Greeted, error) {
	reply := "Hello! You said: " + c.Text
	if err := ctx.Emit(&event.ChunkEvent{Content: reply}); err != nil {
		return nil, err
	}
	return &Greeted{Reply: reply}, nil
}

func main() {
	// Ctrl-C or SIGTERM (what Kubernetes and systemd send) cancels ctx; Run
	// then finishes the events in hand, hands the rest back and returns nil.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := agent.Run(ctx, Greeter{}, agent.Standalone()); err != nil { // embedded NATS unless NATS_URL is set
		log.Fatal(err)
	}
}
