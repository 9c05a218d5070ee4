package semantic_test

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/semantic"
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
		t.Errorf("%s = %v (%v), want string %q", key, v.Emit(), v.Type(), want)
	}
}

func wantAbsent(t *testing.T, m map[string]attribute.Value, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if v, ok := m[k]; ok {
			t.Errorf("attribute %s = %v, want none", k, v.Emit())
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
		if v.Type() == attribute.SLICE || v.Type() == attribute.MAP && k != "llm.prompt_template.variables" {
			t.Errorf("attribute %s is a %v", k, v.Type())
		}
	}
}
