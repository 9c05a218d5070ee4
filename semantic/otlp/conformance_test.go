package otlp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/guard"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/internal/oispec"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
	"github.com/saap-go/agent/semantic"
	"github.com/saap-go/agent/semantic/otlp"
	"github.com/saap-go/agent/step"
)

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
	{"guards", func() []*step.Step {
		// The loop's input guards run in parallel; the answer is cleaned by an output guard.
		judge := llmtest.New(llmtest.Reply(`{"success": true, "reasoning": "a question on taxes"}`))
		p := llmtest.New(llmtest.Reply("Write to tax@example.ch.").Model("gpt-4o-mini").Usage(20, 5))
		set := &guard.Set{
			Input: []guard.Guard{&guard.InputSize{Budget: 4000}, &guard.SensitiveInfo{},
				&guard.AgentSuitability{Description: "Answers questions on Swiss taxes.", Judge: &guard.ModelJudge{Provider: judge}}},
			Output: []guard.Guard{&guard.SensitiveInfo{}},
		}
		l := &llm.Loop{Provider: p, Model: "gpt-4o-mini", System: "Answer briefly.", Guards: set}
		return l.Steps()
	}, "Whom do I ask about VAT?"},
	{"refused by a guard", func() []*step.Step {
		p := llmtest.New()
		l := &llm.Loop{Provider: p, Model: "gpt-4o-mini", Guards: &guard.Set{Input: []guard.Guard{&guard.InputSize{Budget: 3}}}}
		return l.Steps()
	}, "A question far too long for the budget"},
	{"failing step", func() []*step.Step {
		return []*step.Step{step.New(func(ctx step.Context, m *event.UserMessageEvent) (*event.StopEvent, error) {
			return nil, step.WithUserMessage(errors.New("database unreachable"), "the agent could not reach its data")
		}, step.Name("fail"))}
	}, "break"},
	{"own events", func() []*step.Step {
		// Events a step writes itself, with their optional fields unset.
		model, tmpl, id, name := "gpt-4o", "Weather in {city}?", "call_9", "lookup"
		return []*step.Step{step.New(func(ctx step.Context, m *event.UserMessageEvent) ([]event.Event, error) {
			q := []event.Message{event.MessageFromString(event.RoleUser, "Weather in Bern?")}
			answer := []event.Message{event.MessageFromString(event.RoleAssistant, "Sunny.")}
			return []event.Event{
				&event.LLMEvent{ChatModelName: &model, PromptTemplate: &tmpl, PromptTemplateVariables: map[string]string{"city": "Bern"},
					InputMessages: q, OutputMessages: answer},
				&event.ChainEvent{},
				&event.ToolEvent{Name: &name, ToolCallID: &id, Parameters: map[string]json.RawMessage{"q": json.RawMessage(`"Bern"`)}},
				&event.LLMStopEvent{LLMEvent: event.LLMEvent{ChatModelName: &model, InputMessages: q, OutputMessages: answer}},
			}, nil
		}, step.Name("own"), step.Emits(&event.LLMEvent{}, &event.ChainEvent{}, &event.ToolEvent{}, &event.LLMStopEvent{}))}
	}, "Weather in Bern?"},
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
// and checks every span it decodes against the specification (the table
// of package oispec).
func TestOpenInferenceConformance(t *testing.T) {
	if semantic.SpanKindKey != oispec.KindKey {
		t.Fatalf("kind attribute %q, the checker reads %q", semantic.SpanKindKey, oispec.KindKey)
	}
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
		kind := oispec.Kind(s)
		kinds[kind]++
		for _, b := range oispec.Check(s) {
			t.Errorf("span %q (%s): %s", s.Name, kind, b)
		}
	}
	// The runs made spans of each kind they can make.
	for kind, n := range map[string]int{"AGENT": 7 + 1, "LLM": 5, "TOOL": 3, "CHAIN": 2, "GUARDRAIL": 5} {
		if kinds[kind] < n {
			t.Errorf("%d %s spans, want at least %d; all: %v", kinds[kind], kind, n, kinds)
		}
	}
}
