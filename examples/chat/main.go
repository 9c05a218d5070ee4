// Command chat runs ChatAgent, a conversational agent that streams its
// answer as ChunkEvents and ends each run with an LLMStopEvent carrying the
// full answer, together with the HTTP gateway, in one process.
//
// Usage:
//
//	go run ./examples/chat                  # one demo message, print the run, exit
//	go run ./examples/chat -ask "text"      # the same for your text
//	go run ./examples/chat -serve :8080     # serve the gateway until Ctrl-C
//
// With no NATS_URL it starts an embedded nats-server; with NATS_URL it joins
// that server. The answers come from a deterministic scripted model, from
// the provider configured in the environment (llm.FromEnv), or from any
// OpenAI-compatible endpoint when OPENAI_BASE_URL is set (with
// OPENAI_API_KEY and OPENAI_MODEL).
package main

import (
	"fmt"
	"strings"

	"github.com/saap-go/agent"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/examples/internal/demo"
	"github.com/saap-go/agent/examples/internal/demo/demotrace"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/step"
	_ "github.com/saap-go/agent/store/redis" // REDIS_URL keeps run state in Redis
)

// ChatAgent answers each user message with its model.
type ChatAgent struct {
	provider llm.Provider
	model    string
}

// Class is the agent class: the subject token and the gateway's route.
func (a *ChatAgent) Class() string { return "ChatAgent" }

// Describe gives the texts discovery publishes.
func (a *ChatAgent) Describe() agent.Description {
	return agent.Description{
		Name: event.L("Chat", "Chat", "Chat", "Chat"),
		Description: event.L("Beantwortet Chat-Nachrichten und streamt die Antwort.",
			"Answers chat messages, streaming the answer.",
			"Répond aux messages du chat en diffusant la réponse.",
			"Risponde ai messaggi della chat trasmettendo la risposta."),
		Icon: "mage:message",
	}
}

// Steps is the workflow: a single step.
func (a *ChatAgent) Steps() []*step.Step {
	return []*step.Step{step.New(a.Answer)}
}

// Answer streams the model's answer into the run (llm.StreamTo: each
// piece a ChunkEvent, published at once) and returns the whole answer in
// an LLMStopEvent, which ends the run.
func (a *ChatAgent) Answer(ctx step.Context, msg *event.UserMessageEvent) (*event.LLMStopEvent, error) {
	req := &llm.Request{Model: a.model}
	for _, m := range msg.Messages {
		switch m.Role {
		case event.RoleSystem:
			req.System = strings.TrimSpace(req.System + "\n\n" + m.Content())
		case "assistant":
			req.Messages = append(req.Messages, llm.AssistantText(m.Content()))
		default:
			req.Messages = append(req.Messages, llm.UserText(m.Content()))
		}
	}
	call, err := llm.StreamTo(ctx, a.provider, req)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", a.model, err)
	}
	return call.StopEvent(), nil
}

func main() {
	demo.Main(demo.Command{
		Tracing:  demotrace.Tracing,
		Name:     "chat",
		AskUsage: "send this message instead of the demo message, print the run and exit",
		Agent: func() (agent.Agent, error) {
			p, model, err := ModelFromEnv()
			if err != nil {
				return nil, err
			}
			return &ChatAgent{provider: p, model: model}, nil
		},
		Instance: "demo",
		Demo:     []demo.Message{{Role: "user", Content: "Hello! What can you do?"}},
		Want:     "LLMStopEvent",
	})
}
