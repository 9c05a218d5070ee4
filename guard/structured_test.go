package guard

import (
	"context"
	"errors"
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
)

// TestStructuredJudge: the verdict's schema goes in the request (strict,
// every property required), a valid answer decides the guard, one that
// breaks the schema accepts as no verdict does, and a failing model
// fails the guard.
func TestStructuredJudge(t *testing.T) {
	p := llmtest.New(
		llmtest.Reply(`{"success": false, "reasoning": "Poems are not taxes.", "new_query": ""}`),
		llmtest.Reply(`{"success": "no"}`),
	)
	g := &AgentSuitability{Description: "Answers questions on Swiss taxes.", Judge: &StructuredJudge{Provider: p, Model: "judge-model"}}
	c := &Check{Stage: Input, Messages: []llm.Message{llm.UserText("Write me a poem.")}}
	v, err := g.Check(context.Background(), c)
	if err != nil || v.Accepted || v.Reason != "Poems are not taxes." || v.Refusal != event.RefusalOutOfScope {
		t.Fatalf("verdict %+v, %v", v, err)
	}
	rs := p.Requests()[0].ResponseSchema
	if rs == nil || !rs.Strict || p.Requests()[0].Model != "judge-model" {
		t.Errorf("request schema %+v", rs)
	}
	v, err = g.Check(context.Background(), c)
	if err != nil || !v.Accepted {
		t.Errorf("an answer breaking the schema: %+v, %v", v, err)
	}
	if _, err := (&StructuredJudge{Provider: p}).Judge(context.Background(), "i", "p"); err == nil || errors.Is(err, ErrNoVerdict) {
		t.Errorf("a failing model: %v, want an error that is not ErrNoVerdict", err)
	}
	if _, err := (&StructuredJudge{}).Judge(context.Background(), "i", "p"); err == nil {
		t.Error("a judge without a provider judged")
	}
}
