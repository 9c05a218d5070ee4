package conversation

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
)

// ErrCondensationEmpty is returned by Condense when the model made no
// question of the message: the step answers it with Refuse, reason
// condensation_empty, asking the user to rephrase (retrying would give the
// same nothing), which CondenseStep does.
var ErrCondensationEmpty = errors.New("conversation: the condensed question is empty")

const condensePrompt = `Given a conversation and the user's last message, rewrite the last message as one standalone question that can be understood without the conversation: resolve pronouns and references to earlier turns, keep every detail the user gave, and keep the user's language. If the last message is already standalone, repeat it unchanged. Write only the question, with no introduction and no quotes.`

// Condense rewrites the last user message of history as a standalone
// question against the turns before it, with the capability's model, as
// the reference's condense_standalone_question does. A history with no
// earlier turns gives the message as it is, without a model call. An
// answer that is blank (or only quotes) is ErrCondensationEmpty.
func (c *Conversation) Condense(ctx context.Context, history []event.ChatMessage) (string, error) {
	last := -1
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == event.RoleUser {
			last = i
			break
		}
	}
	if last < 0 {
		return "", fmt.Errorf("%w: the history holds no user message", ErrCondensationEmpty)
	}
	var earlier []event.ChatMessage
	for _, m := range history[:last] {
		if !isSystem(m) {
			earlier = append(earlier, m)
		}
	}
	message := strings.TrimSpace(history[last].Content())
	if len(earlier) == 0 {
		if message == "" {
			return "", ErrCondensationEmpty
		}
		return message, nil
	}
	prompt := "Conversation:\n" + transcript(earlier) + "\nLast message:\n" + message
	zero := 0.0
	resp, err := c.generate(ctx, "conversation.condense", &llm.Request{System: condensePrompt,
		Messages: []llm.Message{llm.UserText(prompt)}, MaxTokens: 512, Temperature: &zero})
	if err != nil {
		return "", fmt.Errorf("conversation: condense the question: %w", err)
	}
	q := strings.TrimSpace(strings.Trim(strings.TrimSpace(resp.Message.Text()), "\"'“”«»`"))
	if q == "" {
		return "", ErrCondensationEmpty
	}
	return q, nil
}
