package conversation_test

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/conversation"
	"github.com/saap-go/agent/semantic"
)

// The capability's own model calls are LLM spans under their step's span.
func TestModelCallsAreLLMSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	m := newModel()
	c := &conversation.Conversation{Provider: m.provider(), Model: "task", TitleThread: true, CondenseQuestion: true}
	h := agenttest.New(t, agentOf(t, c, m.provider()), agenttest.WithInterceptors(semantic.New(semantic.WithTracerProvider(tp))))
	h.Start(userMessage(u("VAT?"), a("Yes."), u("Rate?")))
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	for call, parent := range map[string]string{"conversation.condense": "condense_question", "conversation.title": "answer"} {
		s, ok := spans[call]
		if !ok {
			t.Errorf("no %s span among %v", call, names(rec.Ended()))
			continue
		}
		kind := ""
		for _, kv := range s.Attributes() {
			if kv.Key == "openinference.span.kind" {
				kind = kv.Value.AsString()
			}
		}
		if kind != "LLM" {
			t.Errorf("%s: span kind %q, want LLM", call, kind)
		}
		var p sdktrace.ReadOnlySpan
		for _, o := range rec.Ended() {
			if o.SpanContext().SpanID() == s.Parent().SpanID() {
				p = o
			}
		}
		if p == nil || p.Name() != "step "+parent {
			t.Errorf("%s: parent %v, want the %s step's span", call, p, parent)
		}
	}
}

func names(ss []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name())
	}
	return out
}
