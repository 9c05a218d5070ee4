package guard

import (
	"context"
	"fmt"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
)

// ImageTokens is what an image block counts for: a flat estimate, as the
// reference takes it, so that deciding costs no download.
const ImageTokens = 2125

// EstimateTokens is the default token count of InputSize: one token per
// four bytes, rounded up. It is an estimate; pass the model's own
// tokenizer to InputSize.Count where the budget is tight.
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// InputSize rejects a turn whose input does not fit the model's input
// budget, as the reference's input size guard does: it measures what no
// trimming of the history can remove (the system prompt and the last
// message) and ends the run with a RefusalStopEvent (input_too_large) when
// that alone exceeds Budget, so the model is never called with a prompt it
// would refuse. A Budget of 0 or less accepts everything (no window is
// known). Its decisions are GuardAcceptEvents and GuardRejectionEvents. At
// Output and ToolCall it measures the answer or the call's arguments.
type InputSize struct {
	// Budget is the most tokens the model accepts as input.
	Budget int
	// Count counts the tokens of a text; EstimateTokens when nil.
	Count func(string) int
}

// Name implements Guard.
func (g *InputSize) Name() string { return "input_size" }

// Check implements Guard.
func (g *InputSize) Check(_ context.Context, c *Check) (Verdict, error) {
	if g.Budget <= 0 {
		return Accept("no input budget is known; the size is not checked"), nil
	}
	n := g.Tokens(c)
	if n > g.Budget {
		v := Reject(fmt.Sprintf("the input needs about %d tokens, more than the model's budget of %d", n, g.Budget))
		v.Refusal = event.RefusalInputTooLarge
		return v, nil
	}
	return Accept(fmt.Sprintf("the input needs about %d tokens, within the model's budget of %d", n, g.Budget)), nil
}

// Tokens is what the guard counts for c: at Input, the system prompt and
// the last message, each with one token for its role.
func (g *InputSize) Tokens(c *Check) int {
	count := g.Count
	if count == nil {
		count = EstimateTokens
	}
	switch c.Stage {
	case Output, ToolCall:
		return count(c.Text())
	}
	n := 0
	if c.System != "" {
		n += 1 + count(c.System)
	}
	if len(c.Messages) > 0 {
		n += messageTokens(c.Messages[len(c.Messages)-1], count)
	}
	return n
}

func messageTokens(m llm.Message, count func(string) int) int {
	n := count(string(m.Role))
	for _, b := range m.Content {
		switch b.Kind {
		case llm.BlockImage:
			n += ImageTokens
		case llm.BlockToolUse:
			n += count(b.ToolName) + count(string(b.Input))
		default:
			n += count(b.Text)
		}
	}
	return n
}
