package otlp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
	"github.com/saap-go/agent/semantic"
	"github.com/saap-go/agent/semantic/otlp"
	"github.com/saap-go/agent/step"
)

// The OpenInference specification (spec/semantic_conventions.md and
// spec/llm_spans.md of Arize-ai/openinference) asks, in short:
//   - every span names its kind in openinference.span.kind, one of a
//     fixed set;
//   - span attributes hold primitives (or lists of them): lists of
//     objects are flattened into indexed keys, objects are JSON strings;
//   - an LLM span names its system (llm.system) and, where known, its
//     model (llm.model_name), and its messages as
//     llm.{input,output}_messages.N.message.*;
//   - a TOOL span names its tool (tool.name), the call (tool.id) when
//     there is one, and its input (input.value);
//   - attributes the spec types as JSON strings (invocation parameters,
//     schemas, arguments) hold valid JSON.
var spanKinds = map[string]bool{"LLM": true, "CHAIN": true, "TOOL": true, "AGENT": true, "RETRIEVER": true,
	"EMBEDDING": true, "RERANKER": true, "GUARDRAIL": true, "EVALUATOR": true, "PROMPT": true}

// required are the attributes each kind must have, as strings.
var required = map[string][]string{
	"LLM":  {"llm.model_name", "llm.system", "llm.input_messages.0.message.role", "llm.output_messages.0.message.role"},
	"TOOL": {"tool.name", "tool.id", "input.value"},
}

var messageKey = regexp.MustCompile(`^llm\.(input|output)_messages\.\d+\.message\.[a-z_]+(\.\d+\.[a-z_]+(\.[a-z_]+)*)?$`)

// conform reports where s departs from the specification.
func conform(s *tracepb.Span) []string {
	var bad []string
	attrs := map[string]*commonpb.AnyValue{}
	for _, kv := range s.Attributes {
		if _, dup := attrs[kv.Key]; dup {
			bad = append(bad, "attribute "+kv.Key+" twice")
		}
		attrs[kv.Key] = kv.Value
		if !primitive(kv.Value) {
			bad = append(bad, fmt.Sprintf("%s is not a primitive or a list of primitives: %v", kv.Key, kv.Value))
		}
		if strings.HasPrefix(kv.Key, "llm.input_messages.") || strings.HasPrefix(kv.Key, "llm.output_messages.") {
			if !messageKey.MatchString(kv.Key) {
				bad = append(bad, kv.Key+" is not a flattened message attribute")
			}
			if kv.Value.GetArrayValue() != nil {
				bad = append(bad, kv.Key+" is a list")
			}
		}
		for _, suffix := range []string{".json_schema", ".arguments", "tool.parameters", "llm.invocation_parameters"} {
			if strings.HasSuffix(kv.Key, suffix) && !json.Valid([]byte(kv.Value.GetStringValue())) {
				bad = append(bad, fmt.Sprintf("%s is not a JSON string: %v", kv.Key, kv.Value))
			}
		}
	}
	for _, io := range []string{"input", "output"} {
		if attrs[io+".mime_type"].GetStringValue() == "application/json" && !json.Valid([]byte(attrs[io+".value"].GetStringValue())) {
			bad = append(bad, io+".value is not the JSON its mime type says")
		}
	}
	if v, ok := attrs["llm.invocation_parameters"]; ok {
		var obj map[string]any
		if err := json.Unmarshal([]byte(v.GetStringValue()), &obj); err != nil || obj == nil {
			bad = append(bad, fmt.Sprintf("llm.invocation_parameters is not a JSON object: %v", v))
		}
	}
	kind := attrs[semantic.SpanKindKey].GetStringValue()
	if !spanKinds[kind] {
		bad = append(bad, fmt.Sprintf("openinference.span.kind %v", attrs[semantic.SpanKindKey]))
	}
	for _, k := range required[kind] {
		if attrs[k].GetStringValue() == "" {
			bad = append(bad, fmt.Sprintf("%s span without %s", kind, k))
		}
	}
	if s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		found := false
		for _, e := range s.Events {
			if e.Name != "exception" {
				continue
			}
			for _, kv := range e.Attributes {
				if kv.Key == "exception.type" && kv.Value.GetStringValue() != "" {
					found = true
				}
			}
		}
		if !found {
			bad = append(bad, "status Error without an exception event naming its type")
		}
	}
	// A root span is a run's: Phoenix takes a session's input and output
	// from them.
	if len(s.ParentSpanId) == 0 {
		if attrs["input.value"].GetStringValue() == "" {
			bad = append(bad, "root span without input.value")
		}
		if attrs["saap.run.outcome"].GetStringValue() == semantic.OutcomeCompleted && attrs["output.value"].GetStringValue() == "" {
			bad = append(bad, "completed run's root span without output.value")
		}
	}
	if s.EndTimeUnixNano < s.StartTimeUnixNano {
		bad = append(bad, "ends before it starts")
	}
	return bad
}

func primitive(v *commonpb.AnyValue) bool {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_KvlistValue, nil:
		return false
	case *commonpb.AnyValue_ArrayValue:
		for _, e := range x.ArrayValue.GetValues() {
			switch e.GetValue().(type) {
			case *commonpb.AnyValue_KvlistValue, *commonpb.AnyValue_ArrayValue, nil:
				return false
			}
		}
	}
	return true
}

// all is every span received, in order.
func (r *receiver) all(t *testing.T) []*tracepb.Span {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) > 0 {
		t.Fatalf("receiver errors: %v", r.errs)
	}
	var out []*tracepb.Span
	for _, req := range r.reqs {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

// conformanceRuns are the runs the test traces: a chat answer streamed
// from the model, a tool loop with a tool that works and one that fails,
// a step that fails and a delegation.
var conformanceRuns = []struct {
	name  string
	steps func() []*step.Step
	input string
}{
	{"chat", func() []*step.Step {
		p := llmtest.New(llmtest.Reply("Hello, ", "how can I help?").Model("gpt-4o-mini").Usage(12, 6))
		temp := 0.2
		return []*step.Step{step.New(func(ctx step.Context, m *event.UserMessageEvent) (*event.LLMStopEvent, error) {
			call, err := llm.StreamTo(ctx, p, &llm.Request{Model: "gpt-4o-mini", System: "Be brief.", Temperature: &temp,
				Messages: []llm.Message{llm.UserText(m.Messages[len(m.Messages)-1].Content())}})
			if err != nil {
				return nil, err
			}
			return call.StopEvent(), nil
		}, step.Name("answer"))}
	}, "Hello"},
	{"tools", func() []*step.Step {
		p := llmtest.New(
			llmtest.NewTurn().Model("claude-sonnet-4-5").Text("Let me compute.").
				Tool("call_1", "add", `{"a":2,"b":40}`).Tool("call_2", "broken", `{}`).Usage(30, 10),
			llmtest.Reply("2 + 40 is 42; the other tool failed.").Model("claude-sonnet-4-5").Usage(50, 12),
		)
		l := &llm.Loop{Provider: p, Model: "claude-sonnet-4-5", System: "Use the tools.", Params: llm.Request{MaxTokens: 256},
			Tools: []llm.Callable{
				llm.Func("add", "Adds two numbers.", func(_ context.Context, a addArgs) (float64, error) { return a.A + a.B, nil }),
				llm.Func("broken", "Always fails.", func(context.Context, struct{}) (string, error) {
					return "", errors.New("the service is down")
				}),
			}}
		return l.Steps()
	}, "What is 2 + 40?"},
	{"failing step", func() []*step.Step {
		return []*step.Step{step.New(func(ctx step.Context, m *event.UserMessageEvent) (*event.StopEvent, error) {
			return nil, step.WithUserMessage(errors.New("database unreachable"), "the agent could not reach its data")
		}, step.Name("fail"))}
	}, "break"},
	{"delegation", func() []*step.Step {
		return []*step.Step{step.New(func(ctx step.Context, m *event.UserMessageEvent) (*event.AgentInTheLoopRequestEvent, error) {
			return hitl.Delegate("Researcher", "default", &event.UserMessageEvent{User: m.User,
				Messages: []event.ChatMessage{event.Text(event.RoleUser, "facts, please")}})
		}, step.Name("ask")), step.New(func(ctx step.Context, r *event.AgentInTheLoopResponseEvent) (*event.StopEvent, error) {
			return &event.StopEvent{}, nil
		}, step.Name("done"))}
	}, "plan"},
}

// TestOpenInferenceConformance traces real runs to an OTLP/HTTP receiver
// and checks every span it decodes against the specification.
func TestOpenInferenceConformance(t *testing.T) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	clearEndpoints(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	exp, err := otlp.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tr := semantic.New(semantic.WithTracerProvider(exp.TracerProvider()), semantic.WithLangfuse())
	for _, run := range conformanceRuns {
		w, err := step.NewWorkflow("Conformance"+strings.ReplaceAll(run.name, " ", ""), run.steps()...)
		if err != nil {
			t.Fatal(err)
		}
		h := agenttest.New(t, w, agenttest.WithInterceptors(tr))
		h.Start(&event.UserMessageEvent{User: &event.UserIdentity{ID: "u1", Roles: []string{}},
			Messages: []event.ChatMessage{event.Text(event.RoleUser, run.input)}})
	}
	tr.Close() // the delegation's run waits for an answer: its span ends here
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	spans := rcv.all(t)
	kinds := map[string]int{}
	for _, s := range spans {
		kind := ""
		for _, kv := range s.Attributes {
			if kv.Key == semantic.SpanKindKey {
				kind = kv.Value.GetStringValue()
			}
		}
		kinds[kind]++
		for _, b := range conform(s) {
			t.Errorf("span %q (%s): %s", s.Name, kind, b)
		}
	}
	// The runs made spans of each kind they can make.
	for kind, n := range map[string]int{"AGENT": 4 + 1, "LLM": 3, "TOOL": 2, "CHAIN": 1} {
		if kinds[kind] < n {
			t.Errorf("%d %s spans, want at least %d; all: %v", kinds[kind], kind, n, kinds)
		}
	}
}
