package gemini

import (
	"context"
	"errors"
	"testing"

	"github.com/saap-go/agent/llm"
)

func TestCountTokens(t *testing.T) {
	p, rep := server(t, 200, nil, "count_tokens.json")
	req := &llm.Request{Model: "gemini-2.5-flash", System: "Be brief.", Messages: []llm.Message{
		llm.UserText("Hello"), llm.AssistantText("Hi!"), llm.UserText("What is 2+2?"),
	}}
	n, err := p.CountTokens(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if n != 31 {
		t.Errorf("CountTokens = %d, want 31", n)
	}
	// The Developer API takes no system instruction in countTokens: it is
	// counted as a first user turn.
	body := rep.Request(t)
	contents, _ := body["contents"].([]any)
	if len(contents) != 4 {
		t.Fatalf("count request %v: want the system prompt and three turns", body)
	}
	first := contents[0].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"]
	if first != "Be brief." {
		t.Errorf("first content %v, want the system prompt", first)
	}
}

func TestCountTokensErrors(t *testing.T) {
	p, _ := server(t, 429, nil, "error_429.json")
	_, err := p.CountTokens(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserText("x")}})
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.ErrRateLimited {
		t.Errorf("429: %v, want an llm.Error of kind rate_limited", err)
	}
}
