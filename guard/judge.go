package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/saap-go/agent/llm"
)

// ErrNoVerdict is wrapped by a Judge's error when the model's answer holds
// no verdict. The judged guards then accept, as the reference's do: a
// flaky judge must not block the user.
var ErrNoVerdict = errors.New("guard: the judge gave no verdict")

// Judgement is a judge's verdict, the structured answer the reference's
// guards ask the model for.
type Judgement struct {
	// Success says whether the check passed.
	Success bool `json:"success"`
	// Reasoning says why.
	Reasoning string `json:"reasoning"`
	// NewQuery, for the context sufficiency check, is a revised search
	// query.
	NewQuery string `json:"new_query,omitempty"`
}

// Judge decides a check a model is asked about: instructions say what is
// judged and prompt holds the case.
type Judge interface {
	Judge(ctx context.Context, instructions, prompt string) (Judgement, error)
}

// JudgeFunc is a Judge that is a function.
type JudgeFunc func(ctx context.Context, instructions, prompt string) (Judgement, error)

// Judge implements Judge.
func (f JudgeFunc) Judge(ctx context.Context, instructions, prompt string) (Judgement, error) {
	return f(ctx, instructions, prompt)
}

// ModelJudge asks a model for a JSON verdict and parses it. It asks in the
// prompt, so it works with every provider; a provider's native structured
// output can take its place behind the Judge interface.
type ModelJudge struct {
	Provider llm.Provider
	Model    string
	// MaxTokens bounds the verdict; 512 when 0.
	MaxTokens int
}

// verdictFormat is appended to a judge's instructions.
const verdictFormat = `

Answer with one JSON object and nothing else, of the form
{"success": true or false, "reasoning": "one or two sentences saying why"}`

// Judge implements Judge.
func (j *ModelJudge) Judge(ctx context.Context, instructions, prompt string) (Judgement, error) {
	if j == nil || j.Provider == nil {
		return Judgement{}, errors.New("guard: ModelJudge without a Provider")
	}
	zero := 0.0
	req := &llm.Request{Model: j.Model, System: instructions + verdictFormat, Messages: []llm.Message{llm.UserText(prompt)},
		MaxTokens: cmpOr(j.MaxTokens, 512), Temperature: &zero}
	resp, err := llm.Generate(ctx, j.Provider, req)
	if err != nil {
		return Judgement{}, fmt.Errorf("guard: ask the judge: %w", err)
	}
	return ParseJudgement(resp.Message.Text())
}

// ParseJudgement reads a verdict from a model's answer: the JSON object in
// it (also inside a Markdown code fence, or after some words), whose
// "success" must be a boolean. An answer without one is an error wrapping
// ErrNoVerdict.
func ParseJudgement(text string) (Judgement, error) {
	for i := strings.IndexByte(text, '{'); i >= 0; {
		var raw struct {
			Success   *bool   `json:"success"`
			Reasoning string  `json:"reasoning"`
			Reason    string  `json:"reason"`
			NewQuery  *string `json:"new_query"`
		}
		d := json.NewDecoder(strings.NewReader(text[i:]))
		if err := d.Decode(&raw); err == nil && raw.Success != nil {
			j := Judgement{Success: *raw.Success, Reasoning: strings.TrimSpace(cmpOr(raw.Reasoning, raw.Reason))}
			if raw.NewQuery != nil {
				j.NewQuery = strings.TrimSpace(*raw.NewQuery)
			}
			return j, nil
		}
		next := strings.IndexByte(text[i+1:], '{')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return Judgement{}, fmt.Errorf("%w: %.200q", ErrNoVerdict, text)
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// judged runs a model-judged check: no verdict accepts.
func judged(ctx context.Context, j Judge, instructions, prompt string) (Judgement, error) {
	if j == nil {
		return Judgement{}, errors.New("no Judge")
	}
	v, err := j.Judge(ctx, instructions, prompt)
	if errors.Is(err, ErrNoVerdict) {
		return Judgement{Success: true, Reasoning: "the guard gave no verdict; the request is accepted"}, nil
	}
	if err != nil {
		return Judgement{}, err
	}
	if v.Reasoning == "" {
		if v.Success {
			v.Reasoning = "accepted"
		} else {
			v.Reasoning = "rejected"
		}
	}
	return v, nil
}

// history writes the conversation before the last user message as lines
// of "User:" and "Agent:".
func history(msgs []llm.Message) string {
	last := len(msgs) - 1
	for last >= 0 && msgs[last].Role != llm.RoleUser {
		last--
	}
	var b strings.Builder
	for _, m := range msgs[:max(last, 0)] {
		t := strings.TrimSpace(m.Text())
		if t == "" {
			continue
		}
		switch m.Role {
		case llm.RoleUser:
			b.WriteString("User: ")
		case llm.RoleAssistant:
			b.WriteString("Agent: ")
		default:
			continue
		}
		b.WriteString(t)
		b.WriteByte('\n')
	}
	return b.String()
}
