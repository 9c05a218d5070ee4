package memory_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm/llmtest"
	"github.com/saap-go/agent/memory"
)

func TestModelExtractor(t *testing.T) {
	p := llmtest.New(llmtest.Reply(`{"facts": ["Has a daughter called Grace", " "]}`))
	ex := memory.ModelExtractor(p, "small")
	got, err := ex(context.Background(), []event.ChatMessage{
		event.Text(event.RoleSystem, "be nice"),
		event.Text(event.RoleUser, "My daughter Grace starts school"),
		event.Text(event.RoleAssistant, "Congratulations!"),
	})
	must(t, err)
	if !slices.Equal(got, []string{"Has a daughter called Grace"}) {
		t.Fatalf("facts %q", got)
	}
	reqs := p.Requests()
	if len(reqs) != 1 || reqs[0].Model != "small" || reqs[0].ResponseSchema == nil {
		t.Fatalf("request %+v", reqs)
	}
	if in := reqs[0].Messages[0].Text(); !strings.Contains(in, "user: My daughter Grace") || strings.Contains(in, "be nice") {
		t.Fatalf("conversation sent: %q", in)
	}
	// No conversation, no model call.
	if got, err := ex(context.Background(), nil); got != nil || err != nil || p.Remaining() != 0 {
		t.Fatalf("empty: %v %v", got, err)
	}
}

func TestModelExtractorBadAnswer(t *testing.T) {
	ex := memory.ModelExtractor(llmtest.New(llmtest.Reply(`not json`)), "")
	if _, err := ex(context.Background(), []event.ChatMessage{event.Text(event.RoleUser, "hi")}); err == nil {
		t.Fatal("an answer that is no JSON was accepted")
	}
}
