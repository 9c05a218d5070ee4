package guard

import (
	"context"
	"errors"
	"fmt"

	"github.com/saap-go/agent/llm"
)

// StructuredJudge asks a model for its verdict through the provider's
// native structured output (llm.GenerateObject): the verdict's JSON
// Schema goes in the request, and the answer is checked against it. Use
// it with providers and models that have structured output; ModelJudge
// works with any.
type StructuredJudge struct {
	Provider llm.Provider
	Model    string
	// MaxTokens bounds the verdict; 512 when 0.
	MaxTokens int
}

// verdict is the schema the judge answers in: every property required,
// so strict providers take it.
type verdict struct {
	Success   bool   `json:"success" jsonschema:"description=whether the check passed"`
	Reasoning string `json:"reasoning" jsonschema:"description=one or two sentences saying why"`
	NewQuery  string `json:"new_query" jsonschema:"description=a revised search query when one is asked for, else empty"`
}

// Judge implements Judge. An answer that does not validate is an error
// wrapping ErrNoVerdict (the judged guards then accept); a provider's
// failure is returned as it is.
func (j *StructuredJudge) Judge(ctx context.Context, instructions, prompt string) (Judgement, error) {
	if j == nil || j.Provider == nil {
		return Judgement{}, errors.New("guard: StructuredJudge without a Provider")
	}
	zero := 0.0
	req := &llm.Request{Model: j.Model, System: instructions, Messages: []llm.Message{llm.UserText(prompt)},
		MaxTokens: cmpOr(j.MaxTokens, 512), Temperature: &zero}
	v, err := llm.GenerateObject[verdict](ctx, j.Provider, req)
	if errors.Is(err, llm.ErrInvalidObject) {
		return Judgement{}, fmt.Errorf("%w: %w", ErrNoVerdict, err)
	}
	if err != nil {
		return Judgement{}, fmt.Errorf("guard: ask the judge: %w", err)
	}
	return Judgement(v), nil
}
