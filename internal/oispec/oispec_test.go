package oispec

import (
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// Check finds each kind of departure, and none in a span that conforms.
func TestCheck(t *testing.T) {
	parent := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	ok := &tracepb.Span{ParentSpanId: parent, Attributes: []*commonpb.KeyValue{
		str(KindKey, "TOOL"), str("tool.name", "add"), str("tool.id", "c1"), str("input.value", `{"a":1}`),
		str("input.mime_type", "application/json")}}
	if bad := Check(ok); bad != nil {
		t.Errorf("a conforming span: %v", bad)
	}
	kv := &commonpb.KeyValue{Key: "llm.prompt_template.variables", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{
		KvlistValue: &commonpb.KeyValueList{Values: []*commonpb.KeyValue{str("city", "Bern")}}}}}
	for want, attrs := range map[string][]*commonpb.KeyValue{
		"openinference.span.kind": {str(KindKey, "WORKFLOW")},
		"without llm.system": {str(KindKey, "LLM"), str("llm.model_name", "m"),
			str("llm.input_messages.0.message.role", "user"), str("llm.output_messages.0.message.role", "assistant")},
		"without tool.id":                 {str(KindKey, "TOOL"), str("tool.name", "add"), str("input.value", "{}")},
		"not a primitive":                 {str(KindKey, "LLM"), kv},
		"not a JSON object":               {str(KindKey, "CHAIN"), str("llm.invocation_parameters", "[1]")},
		"not a JSON string":               {str(KindKey, "CHAIN"), str("llm.tools.0.tool.json_schema", "{x")},
		"tool.json_schema is \"null\"":    {str(KindKey, "CHAIN"), str("tool.json_schema", "null")},
		"metadata is \"null\"":            {str(KindKey, "CHAIN"), str("metadata", "null")},
		"variables is not a JSON object":  {str(KindKey, "LLM"), str("llm.prompt_template.variables", `"x"`)},
		"not a flattened message":         {str(KindKey, "CHAIN"), str("llm.input_messages.0.role", "user")},
		"twice":                           {str(KindKey, "CHAIN"), str(KindKey, "CHAIN")},
		"not the JSON its mime type says": {str(KindKey, "CHAIN"), str("output.value", "hi"), str("output.mime_type", "application/json")},
	} {
		bad := Check(&tracepb.Span{ParentSpanId: parent, Attributes: attrs})
		if !strings.Contains(strings.Join(bad, "; "), want) {
			t.Errorf("%v: %v, want a complaint %q", attrs, bad, want)
		}
	}
	failed := &tracepb.Span{ParentSpanId: parent, Attributes: []*commonpb.KeyValue{str(KindKey, "CHAIN")},
		Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR}}
	if bad := Check(failed); len(bad) != 1 || !strings.Contains(bad[0], "exception event") {
		t.Errorf("failed span without an exception: %v", bad)
	}
	root := &tracepb.Span{Name: "run Planner", Attributes: []*commonpb.KeyValue{str(KindKey, "AGENT"), str("saap.run.outcome", "completed")}}
	if bad := Check(root); len(bad) != 2 {
		t.Errorf("root span without input and output: %v", bad)
	}
}
