// Command tools runs ToolsAgent, an agent that answers with tools (a
// calculator, the current time and a search over bundled documents)
// through the SDK's tool loop, together with the HTTP gateway, in one
// process. It prints every event of the run: the model's thoughts, its
// tool calls (ToolEvent), the streamed answer and the LLMStopEvent.
//
// Usage:
//
//	go run ./examples/tools                      # the demo question, print the run, exit
//	go run ./examples/tools -ask "What is 2*21?" # the same for your question
//	go run ./examples/tools -serve :8080         # serve the gateway until Ctrl-C
//
// The answers come from a deterministic scripted model, or from a real one
// when a provider is configured in the environment (LLM_MODEL, or an API
// key) and its package is linked in.
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	_ "time/tzdata" // the clock knows every time zone without the system's database

	"github.com/saap-go/agent"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/examples/internal/demo"
	"github.com/saap-go/agent/examples/internal/demo/demotrace"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/step"
	_ "github.com/saap-go/agent/store/redis" // REDIS_URL keeps run state in Redis
)

// ToolsAgent answers questions with its tools.
type ToolsAgent struct {
	loop *llm.Loop
}

// NewToolsAgent returns the agent on provider p and model.
func NewToolsAgent(p llm.Provider, model string) (*ToolsAgent, error) {
	search, err := Search()
	if err != nil {
		return nil, err
	}
	return &ToolsAgent{loop: &llm.Loop{
		Provider: p,
		Model:    model,
		System: "You answer questions about the Swiss AI Agent Protocol and everyday facts. Use the calculator for " +
			"arithmetic, current_time for the time and the search tool for the documentation; never guess them.",
		Tools:         []llm.Callable{Calculator(), Clock(time.Now), search},
		MaxIterations: 5,
		Params:        llm.Request{MaxTokens: 1024},
	}}, nil
}

// Class is the agent class: the subject token and the gateway's route.
func (a *ToolsAgent) Class() string { return "ToolsAgent" }

// Describe gives the texts discovery publishes.
func (a *ToolsAgent) Describe() agent.Description {
	return agent.Description{
		Name: event.L("Werkzeuge", "Tools", "Outils", "Strumenti"),
		Description: event.L("Beantwortet Fragen mit Rechner, Uhr und Dokumentensuche.",
			"Answers questions with a calculator, a clock and a document search.",
			"Répond aux questions avec une calculatrice, une horloge et une recherche documentaire.",
			"Risponde alle domande con una calcolatrice, un orologio e una ricerca nei documenti."),
		Icon: "mage:wrench",
	}
}

// Steps is the tool loop's workflow.
func (a *ToolsAgent) Steps() []*step.Step { return a.loop.Steps() }

func main() {
	demo.Main(demo.Command{
		Tracing:  demotrace.Tracing,
		Name:     "tools",
		AskUsage: "ask this question instead of the demo question, print the run and exit",
		Agent: func() (agent.Agent, error) {
			p, model, err := llm.FromEnv()
			switch {
			case errors.Is(err, llm.ErrNoProvider):
				p, model = Scripted(), "scripted"
			case err != nil:
				return nil, err
			}
			fmt.Fprintf(os.Stdout, "model: %s (%s)\n", model, p.Name())
			return NewToolsAgent(p, model)
		},
		Instance: "demo",
		Demo: []demo.Message{{Role: "user",
			Content: "What is (17 * 23) + 4, what time is it in Zurich, and what does the documentation say about JetStream?"}},
		Want: "LLMStopEvent",
	})
}
