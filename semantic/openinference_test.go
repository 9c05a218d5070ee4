package semantic_test

import (
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/semantic"
	"github.com/saap-go/agent/step"
)

// spanAttrs returns the span attributes of ev by key.
func spanAttrs(t *testing.T, ev event.Event) map[string]attribute.Value {
	t.Helper()
	kvs, err := semantic.Attributes(ev)
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]attribute.Value, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

func wantString(t *testing.T, m map[string]attribute.Value, key, want string) {
	t.Helper()
	v, ok := m[key]
	if !ok {
		t.Errorf("no attribute %s; have %v", key, m)
		return
	}
	if v.Type() != attribute.STRING || v.AsString() != want {
		t.Errorf("%s = %v (%v), want string %q", key, v.String(), v.Type(), want)
	}
}

func wantAbsent(t *testing.T, m map[string]attribute.Value, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if v, ok := m[k]; ok {
			t.Errorf("attribute %s = %v, want none", k, v.String())
		}
	}
}

// OpenInference lists the tools offered to the model as flattened
// attributes, llm.tools.<i>.tool.json_schema, each the tool's JSON
// schema as one string: span attributes hold primitives only.
func TestOpenInferenceToolsFlattened(t *testing.T) {
	ev := decode(t, `{"_event_name":"LLMEvent","tools":[
		{"type":"function","function":{"name":"f","parameters":{"type":"object"}}},
		{"type":"function","function":{"name":"g"}}]}`)
	m := spanAttrs(t, ev)
	wantString(t, m, "llm.tools.0.tool.json_schema", `{"function": {"name": "f", "parameters": {"type": "object"}}, "type": "function"}`)
	wantString(t, m, "llm.tools.1.tool.json_schema", `{"function": {"name": "g"}, "type": "function"}`)
	wantAbsent(t, m, "llm.tools")
	for k, v := range m {
		if v.Type() == attribute.SLICE || v.Type() == attribute.MAP {
			t.Errorf("attribute %s is a %v", k, v.Type())
		}
	}
}

// OpenInference flattens a message's tool calls too:
// message.tool_calls.<j>.tool_call.id, .tool_call.function.name and
// .tool_call.function.arguments (the arguments as a JSON string), in
// input and output messages alike.
func TestOpenInferenceToolCallsFlattened(t *testing.T) {
	ev := decode(t, `{"_event_name":"LLMEvent",
		"input_messages":[{"role":"assistant","tool_calls":[
			{"id":"c1","type":"function","function":{"name":"search","arguments":"{\"q\":\"bern\"}"}}],"contents":[]}],
		"output_messages":[{"role":"assistant","tool_calls":[
			{"id":"c2","type":"function","function":{"name":"add","arguments":{"a":1}}},
			{"id":"c3","name":"noop"}],"contents":[]}]}`)
	m := spanAttrs(t, ev)
	in := "llm.input_messages.0.message.tool_calls.0.tool_call."
	wantString(t, m, in+"id", "c1")
	wantString(t, m, in+"function.name", "search")
	wantString(t, m, in+"function.arguments", `{"q":"bern"}`)
	out := "llm.output_messages.0.message.tool_calls."
	wantString(t, m, out+"0.tool_call.id", "c2")
	wantString(t, m, out+"0.tool_call.function.name", "add")
	wantString(t, m, out+"0.tool_call.function.arguments", `{"a": 1}`)
	wantString(t, m, out+"1.tool_call.id", "c3")
	wantString(t, m, out+"1.tool_call.function.name", "noop")
	wantAbsent(t, m, out+"1.tool_call.function.arguments",
		"llm.input_messages.0.message.tool_calls", "llm.output_messages.0.message.tool_calls")
}

// llm.invocation_parameters is the JSON of the parameters the model was
// called with; a call without any has no such attribute, not "null".
func TestOpenInferenceInvocationParametersOnlyWhenSet(t *testing.T) {
	for _, payload := range []string{`{"_event_name":"LLMEvent"}`, `{"_event_name":"LLMEvent","invocation_parameters":{}}`} {
		wantAbsent(t, spanAttrs(t, decode(t, payload)), "llm.invocation_parameters")
	}
	m := spanAttrs(t, decode(t, `{"_event_name":"LLMEvent","invocation_parameters":{"temperature":0.5}}`))
	wantString(t, m, "llm.invocation_parameters", `{"temperature": 0.5}`)
}

// An LLM span must carry llm.system, the AI product ("openai",
// "anthropic", …): the event's own system if it names one, else what its
// model or provider tells, else the provider's name as it is.
func TestOpenInferenceLLMSystem(t *testing.T) {
	cases := []struct{ payload, want string }{
		{`"system":"cohere","provider":"openai"`, "cohere"},
		{`"provider":"anthropic"`, "anthropic"},
		{`"provider":"OpenAILike","chat_model_name":"gpt-4o"`, "openai"},
		{`"provider":"openaicompat","chat_model_name":"claude-3-5-sonnet"`, "anthropic"},
		{`"provider":"openaicompat","chat_model_name":"some-local-model"`, "openai"},
		{`"provider":"openai"`, "openai"},
		{`"provider":"Azure"`, "openai"},
		{`"provider":"gemini","chat_model_name":"gemini-2.0-flash"`, "vertexai"},
		{`"chat_model_name":"mistralai/mistral-large"`, "mistralai"},
		{`"provider":"scripted","chat_model_name":"test-model"`, "scripted"},
	}
	for _, c := range cases {
		m := spanAttrs(t, decode(t, `{"_event_name":"LLMEvent",`+c.payload+`}`))
		wantString(t, m, "llm.system", c.want)
	}
	// Nothing to name it by: no attribute rather than a guess.
	wantAbsent(t, spanAttrs(t, decode(t, `{"_event_name":"LLMEvent"}`)), "llm.system")
}

// exception.type is a string naming the exception's type: the type the
// event reports (error_type) if any, else the event's class; the HTTP
// status goes to http.response.status_code.
func TestOpenInferenceExceptionType(t *testing.T) {
	m := spanAttrs(t, &event.ExceptionEvent{Message: "boom", HTTPStatusCode: 502})
	wantString(t, m, "exception.type", "ExceptionEvent")
	wantString(t, m, "exception.message", "boom")
	if v := m["http.response.status_code"]; v.Type() != attribute.INT64 || v.AsInt64() != 502 {
		t.Errorf("http.response.status_code = %v", v.String())
	}
	m = spanAttrs(t, decode(t, `{"_event_name":"ExceptionEvent","message":"m","error_type":"ValueError"}`))
	wantString(t, m, "exception.type", "ValueError")
	if v := m["http.response.status_code"]; v.AsInt64() != 500 {
		t.Errorf("http.response.status_code of an unset status = %v, want the default 500", v.String())
	}
}

// A message is either message.content (one text) or message.contents.<k>
// with message_content.type and .text or .image.image.url per part (several
// parts, or a part that is not text), never both: a viewer would show
// the text twice.
func TestOpenInferenceMessageContentOnce(t *testing.T) {
	ev := decode(t, `{"_event_name":"LLMEvent","input_messages":[
		{"role":"user","contents":[{"type":"text","text":"Hi"}]},
		{"role":"user","contents":[{"type":"text","text":"look "},{"type":"image","url":"https://x/i.png"}]},
		{"role":"user","contents":[{"type":"image","url":"https://x/j.png"}]}]}`)
	m := spanAttrs(t, ev)
	p := "llm.input_messages."
	wantString(t, m, p+"0.message.content", "Hi")
	wantAbsent(t, m, p+"0.message.contents.0.message_content.type", p+"0.message.contents.0.message_content.text")
	wantString(t, m, p+"1.message.contents.0.message_content.type", "text")
	wantString(t, m, p+"1.message.contents.0.message_content.text", "look ")
	wantString(t, m, p+"1.message.contents.1.message_content.type", "image")
	wantString(t, m, p+"1.message.contents.1.message_content.image.image.url", "https://x/i.png")
	wantString(t, m, p+"2.message.contents.0.message_content.type", "image")
	wantAbsent(t, m, p+"1.message.content", p+"2.message.content")
}

// Every span needs openinference.span.kind; an ExceptionEvent's is CHAIN.
func TestOpenInferenceExceptionKind(t *testing.T) {
	wantString(t, spanAttrs(t, &event.ExceptionEvent{Message: "m"}), "openinference.span.kind", "CHAIN")
}

// A TOOL span shows the call: input.value the arguments (input.mime_type
// application/json), output.value the tool's result, tool.id the call's
// id. tool.parameters is the tool's parameter definition, so it is the
// schema, and absent when the schema is not known, never the arguments.
func TestOpenInferenceToolSpan(t *testing.T) {
	ev := decode(t, `{"_event_name":"ToolEvent","tool_call_id":"c1","name":"search",
		"json_schema":{"type":"object","properties":{"q":{"type":"string"}}},"parameters":{"q":"bern"},
		"result":"Bern is the capital."}`)
	m := spanAttrs(t, ev)
	wantString(t, m, "tool.id", "c1")
	wantString(t, m, "input.value", `{"q": "bern"}`)
	wantString(t, m, "input.mime_type", "application/json")
	wantString(t, m, "output.value", "Bern is the capital.")
	wantString(t, m, "tool.parameters", `{"properties": {"q": {"type": "string"}}, "type": "object"}`)
	wantAbsent(t, m, "output.mime_type")

	// A structured result is JSON, and says so.
	m = spanAttrs(t, decode(t, `{"_event_name":"ToolEvent","name":"add","parameters":{"a":1},"result":{"sum": 3}}`))
	wantString(t, m, "output.value", `{"sum": 3}`)
	wantString(t, m, "output.mime_type", "application/json")
	wantString(t, m, "input.value", `{"a": 1}`)
	wantAbsent(t, m, "tool.parameters", "tool.id")
}

// A tool that failed (its event carries "error") makes a TOOL span with
// status Error and an exception event holding the error; one that
// succeeded stays unset.
func TestOpenInferenceFailedToolSpan(t *testing.T) {
	rec := newRecorder(t)
	call := step.New(func(ctx step.Context, q *event.UserMessageEvent) ([]event.Event, error) {
		bad := &event.ToolEvent{Name: str("bad"), ToolCallID: str("c1")}
		if err := event.SetExtra(bad, "error", []byte(`"disk full"`)); err != nil {
			return nil, err
		}
		good := &event.ToolEvent{Name: str("good"), ToolCallID: str("c2")}
		if err := event.SetExtra(good, "result", []byte(`"ok"`)); err != nil {
			return nil, err
		}
		return []event.Event{bad, good, &event.StopEvent{}}, nil
	}, step.Name("call"), step.Emits(&event.ToolEvent{}, &event.StopEvent{}))
	w, err := step.NewWorkflow("ToolSpanAgent", call)
	if err != nil {
		t.Fatal(err)
	}
	h := agenttest.New(t, w, agenttest.WithInterceptors(rec.tracing()), agenttest.FailOnStall())
	h.Start(user())
	var bad, good []attribute.KeyValue
	var badStatus, goodStatus codes.Code
	var badEvents, goodEvents int
	var excAttrs []attribute.KeyValue
	for _, s := range rec.spans.Ended() {
		if s.Name() != "ToolEvent" {
			continue
		}
		switch attrs(s)["tool.name"].AsString() {
		case "bad":
			bad, badStatus, badEvents = s.Attributes(), s.Status().Code, len(s.Events())
			if badEvents == 1 && s.Events()[0].Name == "exception" {
				excAttrs = s.Events()[0].Attributes
			}
		case "good":
			good, goodStatus, goodEvents = s.Attributes(), s.Status().Code, len(s.Events())
		}
	}
	if bad == nil || good == nil {
		t.Fatalf("tool spans: bad %v, good %v", bad, good)
	}
	if badStatus != codes.Error || excAttrs == nil {
		t.Errorf("failed tool: status %v, %d events, want Error and an exception event", badStatus, badEvents)
	}
	exc := map[string]string{}
	for _, kv := range excAttrs {
		exc[string(kv.Key)] = kv.Value.String()
	}
	if exc["exception.message"] != "disk full" || exc["exception.type"] == "" {
		t.Errorf("exception event attributes %v", excAttrs)
	}
	if goodStatus == codes.Error || goodEvents != 0 {
		t.Errorf("tool that worked: status %v, %d events", goodStatus, goodEvents)
	}
}

// Answer is a stop event with a content member, as many agents' are.
type Answer struct {
	event.StopEvent
	Content string `json:"content"`
}

func init() { event.MustRegister[Answer]() }

// The run span (the trace's root) carries the run's input, the user's
// message, and its output, the stop event's content: Phoenix shows a
// session's first input and last output from its root spans.
func TestRunSpanInputOutput(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop event.Event
		out  string
	}{
		{"LLMStopEvent", &event.LLMStopEvent{LLMEvent: event.LLMEvent{OutputMessages: []event.Message{
			event.MessageFromString("user", "not this"), event.MessageFromString("assistant", "Bern is the capital.")}}},
			"Bern is the capital."},
		{"content", &Answer{Content: "three facts"}, "three facts"},
		{"received content", withExtra(&event.StopEvent{}, "content", `"kept as received"`), "kept as received"},
		{"no content", &event.StopEvent{}, ""},
		{"content not a string", withExtra(&event.StopEvent{}, "content", `[1]`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t)
			answer := step.New(func(ctx step.Context, q *event.UserMessageEvent) (event.Event, error) { return tc.stop, nil },
				step.Name("answer"), step.Emits(tc.stop))
			w, err := step.NewWorkflow("RunIOAgent", answer)
			if err != nil {
				t.Fatal(err)
			}
			h := agenttest.New(t, w, agenttest.WithInterceptors(rec.tracing()), agenttest.FailOnStall())
			msg := user()
			msg.Messages = []event.ChatMessage{event.Text(event.RoleSystem, "be brief"),
				event.Text(event.RoleUser, "What is the capital?"), event.Text("assistant", "not this")}
			h.Start(msg)
			m := attrs(rec.tree(t).one("run RunIOAgent"))
			wantString(t, m, "input.value", "What is the capital?")
			wantString(t, m, "input.mime_type", "text/plain")
			if tc.out == "" {
				if v, ok := m["output.value"]; ok {
					t.Errorf("output.value = %q, want none: the stop event has no string content", v.AsString())
				}
				return
			}
			wantString(t, m, "output.value", tc.out)
			wantString(t, m, "output.mime_type", "text/plain")
		})
	}
}

// withExtra gives ev the member key as a producer that the SDK does not
// know would send it.
func withExtra(ev event.Event, key, raw string) event.Event {
	if err := event.SetExtra(ev, key, []byte(raw)); err != nil {
		panic(err)
	}
	return ev
}

// A TOOL span lasts as long as its call: from the ToolEvent's
// started_at to its ended_at (Unix nanoseconds), which the tool loop sets;
// the spans of parallel calls overlap.
func TestToolSpanLastsTheCall(t *testing.T) {
	rec := newRecorder(t)
	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	at := func(d time.Duration) []byte { return []byte(strconv.FormatInt(t0.Add(d).UnixNano(), 10)) }
	call := step.New(func(ctx step.Context, q *event.UserMessageEvent) ([]event.Event, error) {
		var out []event.Event
		for _, c := range []struct {
			name       string
			start, end time.Duration
		}{{"slow", 0, 3 * time.Second}, {"quick", time.Second, 2 * time.Second}} {
			ev := &event.ToolEvent{Name: str(c.name), ToolCallID: str(c.name)}
			if err := event.SetExtra(ev, "started_at", at(c.start)); err != nil {
				return nil, err
			}
			if err := event.SetExtra(ev, "ended_at", at(c.end)); err != nil {
				return nil, err
			}
			out = append(out, ev)
		}
		return append(out, &event.StopEvent{}), nil
	}, step.Name("call"), step.Emits(&event.ToolEvent{}, &event.StopEvent{}))
	w, err := step.NewWorkflow("ToolTimeAgent", call)
	if err != nil {
		t.Fatal(err)
	}
	agenttest.New(t, w, agenttest.WithInterceptors(rec.tracing()), agenttest.FailOnStall()).Start(user())
	got := map[string][2]time.Time{}
	for _, s := range rec.spans.Ended() {
		if s.Name() == "ToolEvent" {
			got[attrs(s)["tool.name"].AsString()] = [2]time.Time{s.StartTime(), s.EndTime()}
		}
	}
	for name, want := range map[string][2]time.Time{
		"slow":  {t0, t0.Add(3 * time.Second)},
		"quick": {t0.Add(time.Second), t0.Add(2 * time.Second)},
	} {
		if g := got[name]; !g[0].Equal(want[0]) || !g[1].Equal(want[1]) {
			t.Errorf("%s: span %v to %v, want %v to %v", name, g[0], g[1], want[0], want[1])
		}
	}
}

// A GUARDRAIL span lasts as long as its guard's check: from the guard
// event's started_at to its ended_at, which package guard sets; guards that
// ran in parallel overlap.
func TestGuardSpanLastsTheCheck(t *testing.T) {
	rec := newRecorder(t)
	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	at := func(d time.Duration) []byte { return []byte(strconv.FormatInt(t0.Add(d).UnixNano(), 10)) }
	check := step.New(func(ctx step.Context, q *event.UserMessageEvent) ([]event.Event, error) {
		slow := &event.AgentSuitabilityAcceptEvent{GuardAcceptEvent: event.GuardAcceptEvent{Reason: "fits"}}
		quick := &event.SensitiveInfoRejectEvent{GuardRejectionEvent: event.GuardRejectionEvent{Reason: "an IBAN"}, CleanedAnswer: "[IBAN]"}
		for _, c := range []struct {
			ev         event.Event
			start, end time.Duration
		}{{slow, 0, 3 * time.Second}, {quick, time.Second, 2 * time.Second}} {
			if err := event.SetExtra(c.ev, "started_at", at(c.start)); err != nil {
				return nil, err
			}
			if err := event.SetExtra(c.ev, "ended_at", at(c.end)); err != nil {
				return nil, err
			}
		}
		return []event.Event{slow, quick, &event.StopEvent{}}, nil
	}, step.Name("check"), step.Emits(&event.AgentSuitabilityAcceptEvent{}, &event.SensitiveInfoRejectEvent{}, &event.StopEvent{}))
	w, err := step.NewWorkflow("GuardTimeAgent", check)
	if err != nil {
		t.Fatal(err)
	}
	agenttest.New(t, w, agenttest.WithInterceptors(rec.tracing()), agenttest.FailOnStall()).Start(user())
	got := map[string][2]time.Time{}
	for _, s := range rec.spans.Ended() {
		if k := attrs(s)[semantic.SpanKindKey]; k.AsString() == semantic.KindGuardrail {
			got[s.Name()] = [2]time.Time{s.StartTime(), s.EndTime()}
		}
	}
	for name, want := range map[string][2]time.Time{
		"AgentSuitabilityAcceptEvent": {t0, t0.Add(3 * time.Second)},
		"SensitiveInfoRejectEvent":    {t0.Add(time.Second), t0.Add(2 * time.Second)},
	} {
		if g, ok := got[name]; !ok || !g[0].Equal(want[0]) || !g[1].Equal(want[1]) {
			t.Errorf("%s: GUARDRAIL span %v to %v (found %v), want %v to %v", name, g[0], g[1], ok, want[0], want[1])
		}
	}
}

// Each run of a conversation is a trace of its own; the conversation (the
// thread) groups them into one session by session.id, as the README says.
func TestTracePerRunSessionPerThread(t *testing.T) {
	rec := newRecorder(t)
	answer := step.New(func(ctx step.Context, q *event.UserMessageEvent) (*event.StopEvent, error) {
		return &event.StopEvent{}, nil
	},
		step.Name("answer"))
	w, err := step.NewWorkflow("SessionAgent", answer)
	if err != nil {
		t.Fatal(err)
	}
	h := agenttest.New(t, w, agenttest.WithInterceptors(rec.tracing()), agenttest.FailOnStall())
	h.Start(user(), agenttest.Thread("conversation-1"))
	h.Start(user(), agenttest.Thread("conversation-1"))
	var runs []sdktrace.ReadOnlySpan
	for _, s := range rec.spans.Ended() {
		if s.Name() == "run SessionAgent" {
			runs = append(runs, s)
		}
	}
	if len(runs) != 2 {
		t.Fatalf("%d run spans, want 2", len(runs))
	}
	if runs[0].SpanContext().TraceID() == runs[1].SpanContext().TraceID() {
		t.Errorf("both runs in trace %s, want a trace each", runs[0].SpanContext().TraceID())
	}
	for _, r := range runs {
		wantString(t, attrs(r), "session.id", "conversation-1")
	}
}
