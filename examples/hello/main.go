// Command hello runs HelloAgent and the HTTP gateway in one process on an
// embedded nats-server, sends one demo message through the gateway, prints
// every event of the run as it crosses the bus, and the answer.
//
// Usage:
//
//	go run ./examples/hello                 # one demo message, print the run, exit
//	go run ./examples/hello -ask "text"     # the same for your text
//	go run ./examples/hello -serve :8080    # serve the gateway until Ctrl-C
//
// Its model is scripted, so it needs no key and links only the SDK and
// NATS: it is the README's first command. examples/chat is the same flow
// with a real model (llm.FromEnv, OPENAI_BASE_URL) and -trace.
package main

import (
	"fmt"
	"strings"

	"github.com/saap-go/agent"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/examples/internal/demo"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
	"github.com/saap-go/agent/step"
)

// HelloAgent answers each user message from a scripted model.
type HelloAgent struct{}

// Class is the agent class: the subject token and the gateway's route.
func (HelloAgent) Class() string { return "HelloAgent" }

// Describe gives the texts discovery publishes.
func (HelloAgent) Describe() agent.Description {
	return agent.Description{
		Name: event.L("Hallo", "Hello", "Bonjour", "Ciao"),
		Description: event.L("Beantwortet Nachrichten mit einem geskripteten Modell.",
			"Answers messages with a scripted model.",
			"Répond aux messages avec un modèle scripté.",
			"Risponde ai messaggi con un modello programmato."),
		Icon: "mage:message",
	}
}

// Steps is the workflow: a single step.
func (a HelloAgent) Steps() []*step.Step {
	return []*step.Step{step.New(a.Answer)}
}

// Answer streams the model's answer into the run (llm.StreamTo: each
// piece a ChunkEvent, published at once) and returns the whole answer in
// an LLMStopEvent, which ends the run.
func (HelloAgent) Answer(ctx step.Context, msg *event.UserMessageEvent) (*event.LLMStopEvent, error) {
	req := &llm.Request{Model: "scripted"}
	for _, m := range msg.Messages {
		if m.Role == event.RoleUser {
			req.Messages = append(req.Messages, llm.UserText(m.Content()))
		}
	}
	call, err := llm.StreamTo(ctx, scripted, req)
	if err != nil {
		return nil, err
	}
	return call.StopEvent(), nil
}

// scripted answers the same way every time, a few words per piece, so the
// run needs no model service and is repeatable.
var scripted = llmtest.Func(func(req *llm.Request) *llmtest.Turn {
	question := ""
	if n := len(req.Messages); n > 0 {
		question = strings.TrimSpace(req.Messages[n-1].Text())
	}
	answer := fmt.Sprintf("Hello! You said %q. I am HelloAgent: my answer streams as ChunkEvents and ends the run as an LLMStopEvent. examples/chat answers with a real model.", question)
	var pieces []string
	words := strings.SplitAfter(answer, " ")
	for i := 0; i < len(words); i += 3 {
		pieces = append(pieces, strings.Join(words[i:min(i+3, len(words))], ""))
	}
	return llmtest.NewTurn().Text(pieces...)
})

func main() {
	demo.Main(demo.Command{
		Name:     "hello",
		AskUsage: "send this message instead of the demo message, print the run and exit",
		Agent:    func() (agent.Agent, error) { return HelloAgent{}, nil },
		Instance: "demo",
		Demo:     []demo.Message{{Role: "user", Content: "Hello! What can you do?"}},
		Want:     "LLMStopEvent",
	})
}
