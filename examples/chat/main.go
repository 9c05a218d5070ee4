// Command chat runs ChatAgent, a conversational agent that streams its
// answer as ChunkEvents and ends each run with an LLMStopEvent carrying the
// full answer, together with the HTTP gateway, in one process. It holds the
// conversation with the conversation capability: the thread's history
// fitted into the model's input budget, a title for the thread after its
// first turn, and follow-up questions after each answer. It remembers what
// a user told it, across threads, in an embedded vector index
// (CHAT_MEMORY_DIR keeps it on disk).
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
	"os"
	"strconv"

	"github.com/saap-go/agent"
	"github.com/saap-go/agent/conversation"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/examples/internal/demo"
	"github.com/saap-go/agent/examples/internal/demo/demotrace"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/step"
	_ "github.com/saap-go/agent/store/redis" // REDIS_URL keeps run state in Redis
)

// ChatAgent answers each user message with its model, in the conversation
// of the thread.
type ChatAgent struct {
	provider llm.Provider
	model    string
	conv     *conversation.Conversation
}

// NewChatAgent returns the agent on provider and model. The conversation
// is what the start event's messages hold: the client may send only its
// last message, and the gateway fills the rest from the thread's history.
// budget is the most input tokens an answer may take (0: no limit).
// mem, when not nil, is what it remembers of its users across threads.
func NewChatAgent(provider llm.Provider, model string, budget int, mem *Memories) *ChatAgent {
	conv := &conversation.Conversation{
		Provider: provider, Model: model, // the task model: the same one here
		Budget: budget, System: system,
		TitleThread: true, FollowUps: true,
	}
	if mem != nil {
		// The memories of earlier threads join the system messages of
		// each turn.
		conv.Recall = mem.Recall
	}
	// Count with the provider's own endpoint where it has one (Anthropic,
	// Gemini), else with the conservative local estimate.
	if tc, ok := provider.(conversation.TokenCounter); ok {
		conv.Counter = tc
	}
	return &ChatAgent{provider: provider, model: model, conv: conv}
}

const system = "You are ChatAgent, a helpful assistant. Answer briefly."

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

// Steps is the workflow: the capability's step that fits the history into
// the budget (or refuses a turn too large for it), then the answer.
func (a *ChatAgent) Steps() []*step.Step {
	return append(a.conv.Steps(), step.New(a.Answer))
}

// Answer streams the model's answer into the run (llm.StreamTo: each
// piece a ChunkEvent, published at once), titles the thread and suggests
// follow-up questions (conversation.Complete), and returns the whole
// answer in an LLMStopEvent, which ends the run.
func (a *ChatAgent) Answer(ctx step.Context, h *event.LimitChatHistoryEvent) (*event.LLMStopEvent, error) {
	req := a.conv.Request(h.LimitedHistory)
	req.Model = a.model
	call, err := llm.StreamTo(ctx, a.provider, req)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", a.model, err)
	}
	return conversation.Complete(ctx, a.conv, h.LimitedHistory, call.Response.Message.Text(), call.StopEvent())
}

// budgetFromEnv is CHAT_INPUT_TOKENS, 100000 by default.
func budgetFromEnv() (int, error) {
	v := os.Getenv("CHAT_INPUT_TOKENS")
	if v == "" {
		return 100_000, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("CHAT_INPUT_TOKENS=%q: want a number of tokens, 0 for no limit", v)
	}
	return n, nil
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
			budget, err := budgetFromEnv()
			if err != nil {
				return nil, err
			}
			mem, err := memoriesFromEnv(p)
			if err != nil {
				return nil, err
			}
			a := NewChatAgent(p, model, budget, mem)
			if err := a.conv.Validate(); err != nil {
				return nil, err
			}
			return a, nil
		},
		Instance: "demo",
		Demo:     []demo.Message{{Role: "user", Content: "Hello! What can you do?"}},
		Want:     "LLMStopEvent",
	})
}
