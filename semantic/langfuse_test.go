package semantic_test

import (
	"encoding/json"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/semantic"
	"github.com/saap-go/agent/step"
)

// langfuseTypes is how Langfuse's OpenTelemetry ingestion types an
// observation from openinference.span.kind when the span has no
// langfuse.observation.type: a kind it does not list is a span.
var langfuseTypes = map[string]string{"LLM": "generation", "TOOL": "tool", "CHAIN": "chain", "AGENT": "agent",
	"RETRIEVER": "retriever", "EMBEDDING": "embedding", "GUARDRAIL": "guardrail", "EVALUATOR": "evaluator"}

func langfuseType(kind string) string {
	if t, ok := langfuseTypes[kind]; ok {
		return t
	}
	return "span"
}

// Without WithLangfuse, Langfuse still reads what it needs from the
// OpenInference attributes: the kind (LLM is a generation), the model and
// token counts of an LLM span, its messages (its input and output when a
// span has no input.value/output.value), a tool's input.value and
// output.value, and a run's session, user, input and output. With
// WithLangfuse, the langfuse.observation.type written agrees with the kind.
func TestLangfuseReadsTheOpenInferenceAttributes(t *testing.T) {
	for _, withLangfuse := range []bool{false, true} {
		rec := newRecorder(t)
		answer := step.New(func(ctx step.Context, q *event.UserMessageEvent) ([]event.Event, error) {
			llm := &event.LLMEvent{ChatModelName: str("gpt-4o"), TokenCountPrompt: i64(10), TokenCountCompletion: i64(2),
				TokenCountTotal: i64(12), InputMessages: []event.Message{event.MessageFromString("user", "2+2?")},
				OutputMessages: []event.Message{event.MessageFromString("assistant", "4")}}
			tool := &event.ToolEvent{Name: str("add"), ToolCallID: str("c1"), Parameters: map[string]json.RawMessage{"a": json.RawMessage("2")}}
			if err := event.SetExtra(tool, "result", []byte(`"4"`)); err != nil {
				return nil, err
			}
			return []event.Event{llm, tool, &event.RerankerEvent{}, &Answer{Content: "4"}}, nil
		}, step.Name("answer"), step.Emits(&event.LLMEvent{}, &event.ToolEvent{}, &event.RerankerEvent{}, &Answer{}))
		w, err := step.NewWorkflow("LangfuseAgent", answer)
		if err != nil {
			t.Fatal(err)
		}
		tr := rec.tracing()
		if withLangfuse {
			tr = rec.tracing(semantic.WithLangfuse())
		}
		h := agenttest.New(t, w, agenttest.WithInterceptors(tr), agenttest.FailOnStall())
		msg := user()
		msg.Messages = []event.ChatMessage{event.Text(event.RoleUser, "2+2?")}
		h.Start(msg)
		spans := rec.tree(t)

		llm := attrs(spans.one("LLMEvent"))
		for _, k := range []string{"llm.model_name", "llm.input_messages.0.message.content", "llm.output_messages.0.message.content"} {
			if llm[k].AsString() == "" {
				t.Errorf("LLM span without %s", k)
			}
		}
		for k, want := range map[string]int64{"llm.token_count.prompt": 10, "llm.token_count.completion": 2, "llm.token_count.total": 12} {
			if got := llm[k].AsInt64(); got != want {
				t.Errorf("LLM span %s = %v, want the integer %d", k, llm[k].String(), want)
			}
		}
		tool := attrs(spans.one("ToolEvent"))
		if tool["input.value"].AsString() != `{"a": 2}` || tool["output.value"].AsString() != "4" {
			t.Errorf("TOOL span input.value %q, output.value %q", tool["input.value"].AsString(), tool["output.value"].AsString())
		}
		run := attrs(spans.one("run LangfuseAgent"))
		for k, want := range map[string]string{"input.value": "2+2?", "output.value": "4", "user.id": "user-7"} {
			if got := run[k].AsString(); got != want {
				t.Errorf("run span %s = %q, want %q", k, got, want)
			}
		}
		if run["session.id"].AsString() == "" {
			t.Errorf("run span without session.id")
		}

		for _, s := range spans.spans {
			a := attrs(s)
			kind := a["openinference.span.kind"].AsString()
			if kind == "" {
				t.Errorf("span %q has no kind: Langfuse would type it by guesswork", s.Name())
				continue
			}
			lt, ok := a["langfuse.observation.type"]
			if withLangfuse && ok && lt.AsString() != langfuseType(kind) {
				t.Errorf("span %q: langfuse.observation.type %q, but Langfuse types kind %s as %q", s.Name(), lt.AsString(), kind, langfuseType(kind))
			}
		}
		if got := langfuseType(attrs(spans.one("LLMEvent"))["openinference.span.kind"].AsString()); got != "generation" {
			t.Errorf("the LLM span is a Langfuse %s, want generation", got)
		}
	}
}
