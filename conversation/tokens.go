package conversation

import (
	"context"

	"github.com/saap-go/agent/llm"
)

// TokenCounter counts the input tokens of a request as its model will.
// The Anthropic and Gemini providers (llm/anthropic, llm/gemini) are
// TokenCounters through their own counting endpoints; Estimate is the
// local fallback. Fit counts whole candidate prompts, a few per turn, so
// a counter that calls a service costs a few small calls per turn.
type TokenCounter interface {
	CountTokens(ctx context.Context, req *llm.Request) (int, error)
}

// CounterFunc is a TokenCounter that is a function, for a local tokenizer.
type CounterFunc func(ctx context.Context, req *llm.Request) (int, error)

// CountTokens implements TokenCounter.
func (f CounterFunc) CountTokens(ctx context.Context, req *llm.Request) (int, error) {
	return f(ctx, req)
}

// Estimate is the conservative local TokenCounter used when the provider
// has no counting endpoint (OpenAI and compatible servers): one token per
// three bytes of text, rounded up, plus four tokens for each message's
// framing and an image or document at ImageTokens. Byte-pair tokenizers
// average about four bytes a token on English prose and three on code,
// numbers and most other languages in UTF-8, so the estimate is on the
// high side: a history it fits fits the model, at the price of trimming a
// little early. No pure-Go tokenizer of the current OpenAI encodings is
// available to this module without downloading its vocabulary at run
// time; pass one as a CounterFunc where the budget is tight.
var Estimate TokenCounter = CounterFunc(estimate)

// ImageTokens is what Estimate counts for an image or a document block:
// a flat figure, as the reference's guard takes, so counting costs no
// download.
const ImageTokens = 2125

func estimate(_ context.Context, req *llm.Request) (int, error) {
	if req == nil {
		return 0, nil
	}
	n := 0
	if req.System != "" {
		n += messageOverhead + bytesTokens(len(req.System))
	}
	for _, m := range req.Messages {
		n += messageOverhead
		for _, b := range m.Content {
			switch b.Kind {
			case llm.BlockImage, llm.BlockDocument:
				n += ImageTokens
			case llm.BlockToolUse:
				n += bytesTokens(len(b.ToolName) + len(b.Input))
			default:
				n += bytesTokens(len(b.Text))
			}
		}
	}
	for _, t := range req.Tools {
		n += bytesTokens(len(t.Name) + len(t.Description) + len(t.Schema))
	}
	return n, nil
}

const messageOverhead = 4

func bytesTokens(n int) int { return (n + 2) / 3 }
