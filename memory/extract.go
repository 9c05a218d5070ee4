package memory

import (
	"context"
	"fmt"
	"strings"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
)

// factsPrompt asks for what the reference's memory writer keeps: durable
// facts about the user, each one short statement, nothing about the
// assistant and nothing that holds for this conversation only.
const factsPrompt = `You keep a user's long-term memory. From the conversation, list the facts about the user worth
remembering in later conversations: preferences, personal details, plans, standing instructions.
Write each fact as one short statement in the language of the conversation ("Has a daughter called Grace").
Leave out what the assistant said, questions, small talk, and anything true only for this conversation.
Answer with an empty list when there is nothing to remember.`

// facts is the structured answer ModelExtractor asks for.
type facts struct {
	Facts []string `json:"facts" jsonschema:"the facts to remember, one short statement each"`
}

// ModelExtractor is an Extractor that has a model distil the facts worth
// remembering from the conversation, as the reference's memory writer
// does, through p's structured output (llm.GenerateObject). model may be
// empty for the provider's default.
func ModelExtractor(p llm.Provider, model string) Extractor {
	return func(ctx context.Context, messages []event.ChatMessage) ([]string, error) {
		var b strings.Builder
		for _, m := range messages {
			if t := strings.TrimSpace(m.Content()); t != "" && (m.Role == event.RoleUser || m.Role == event.RoleAssistant) {
				fmt.Fprintf(&b, "%s: %s\n", m.Role, t)
			}
		}
		if b.Len() == 0 {
			return nil, nil
		}
		req := &llm.Request{Model: model, System: factsPrompt, Messages: []llm.Message{llm.UserText(b.String())}}
		got, err := llm.GenerateObject[facts](ctx, p, req)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, f := range got.Facts {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, f)
			}
		}
		return out, nil
	}
}
