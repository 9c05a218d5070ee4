package anthropic

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/saap-go/agent/llm"
)

func TestCountTokens(t *testing.T) {
	p, rep := server(t, 200, nil, "count_tokens.json")
	req := &llm.Request{Model: "claude-sonnet-4-5", System: "Be brief.", Messages: []llm.Message{
		llm.UserText("Hello"), llm.AssistantText("Hi!"), llm.UserText("What is 2+2?"),
	}, Tools: []llm.Tool{{Name: "add", Schema: []byte(`{"type":"object"}`)}}}
	n, err := p.CountTokens(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2095 {
		t.Errorf("CountTokens = %d, want 2095", n)
	}
	body := rep.Request(t)
	if body["model"] != "claude-sonnet-4-5" || len(body["messages"].([]any)) != 3 || body["system"] == nil || len(body["tools"].([]any)) != 1 {
		t.Errorf("count request %v: want the model, three messages, the system prompt and the tool", body)
	}
	if _, ok := body["max_tokens"]; ok {
		t.Errorf("count request carries max_tokens: %v", body)
	}
}

func TestCountTokensErrors(t *testing.T) {
	p, _ := server(t, 401, nil, "error_401.json")
	_, err := p.CountTokens(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserText("x")}})
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.ErrAuth {
		t.Errorf("401: %v, want an llm.Error of kind auth", err)
	}
	if _, err := p.CountTokens(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "nil request") {
		t.Errorf("nil request: %v", err)
	}
}
