package semantic_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/semantic"
)

// jsonValue decodes JSON keeping numbers literal, so that 12 and "12" and
// 12.5 stay apart.
func jsonValue(t *testing.T, data []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return v
}

func decode(t *testing.T, payload string) event.Event {
	t.Helper()
	ev, err := event.Unmarshal([]byte(payload))
	if err != nil {
		t.Fatalf("decode event %s: %v", payload, err)
	}
	return ev
}

func str(s string) *string { return &s }
func i64(i int64) *int64   { return &i }

func TestConventionVector(t *testing.T) {
	want, err := os.ReadFile("testdata/llm-event-attributes.json")
	if err != nil {
		t.Fatal(err)
	}
	ev := &event.LLMEvent{
		ChatModelName: str("gpt-4o"), Provider: str("OpenAILike"),
		TokenCountPrompt: i64(10), TokenCountCompletion: i64(2), TokenCountTotal: i64(12),
		InputMessages:  []event.Message{event.MessageFromString("user", "Hi")},
		OutputMessages: []event.Message{event.MessageFromString("assistant", "Hello")},
	}
	got, err := semantic.Convention(ev)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := jsonValue(t, data), jsonValue(t, want); !reflect.DeepEqual(g, w) {
		t.Fatalf("attributes\n got %s\nwant %s", data, want)
	}
}

// The cases decode events from the wire, as a tracer sees them, and
// compare the attribute map with JSON types kept.
func TestConvention(t *testing.T) {
	meta := func(id string, extra string) string {
		return `{"document_id": "` + id + `", "source": "wiki", "source_origin": ` + extra +
			`, "namespace": "ns", "number_of_pages": null, "document_title": null, "language": null, "version": 1, "created_at": "", "updated_at": "", "inserted_at": ""}`
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	cases := []struct {
		name, event, want string
	}{
		{"llm unset", `{"_event_name":"LLMEvent"}`,
			`{"openinference.span.kind":"LLM"}`},
		{"llm every field", `{"_event_name":"LLMEvent",
			"invocation_parameters":{"temperature":0.2,"stop":["\n"],"name":"Zürich"},
			"chat_model_name":"m","provider":"p","system":"openai",
			"prompt_template":"Hello {x}","prompt_template_variables":{"x":"world"},"prompt_template_version":"v2",
			"token_count_prompt":1,"token_count_completion":2,"token_count_total":3,
			"tools":[{"type":"function","function":{"name":"f","parameters":{"n":1}}}],
			"input_messages":[{"role":"user","name":"ann","contents":[
				{"type":"text","text":"look "},{"type":"image","url":"https://x/i.png"},
				{"type":"audio","url":"https://x/a.mp3","mime_type":"audio/mpeg"},{"type":"text","text":"here"}]}],
			"output_messages":[{"role":"assistant","tool_calls":[{"id":"c1","name":"f"}],
				"function_call_name":"f","function_call_arguments_json":{"b":2,"a":"é"},"tool_call_id":"c1","contents":[]}]}`,
			`{"openinference.span.kind":"LLM",
			"llm.invocation_parameters":` + q(`{"name": "Z\u00fcrich", "stop": ["\n"], "temperature": 0.2}`) + `,
			"llm.model_name":"m","llm.provider":"p","llm.system":"openai",
			"llm.prompt_template.template":"Hello {x}","llm.prompt_template.variables":` + q(`{"x": "world"}`) + `,"llm.prompt_template.version":"v2",
			"llm.token_count.prompt":1,"llm.token_count.completion":2,"llm.token_count.total":3,
			"llm.tools.0.tool.json_schema":` + q(`{"function": {"name": "f", "parameters": {"n": 1}}, "type": "function"}`) + `,
			"llm.input_messages.0.message.role":"user",
			"llm.input_messages.0.message.name":"ann",
			"llm.input_messages.0.message.contents.0.message_content.type":"text",
			"llm.input_messages.0.message.contents.0.message_content.text":"look ",
			"llm.input_messages.0.message.contents.1.message_content.type":"image",
			"llm.input_messages.0.message.contents.1.message_content.image.image.url":"https://x/i.png",
			"llm.input_messages.0.message.contents.2.message_content.type":"audio",
			"llm.input_messages.0.message.contents.2.audio.url":"https://x/a.mp3",
			"llm.input_messages.0.message.contents.2.audio.mime_type":"audio/mpeg",
			"llm.input_messages.0.message.contents.3.message_content.type":"text",
			"llm.input_messages.0.message.contents.3.message_content.text":"here",
			"llm.output_messages.0.message.role":"assistant","llm.output_messages.0.message.content":"",
			"llm.output_messages.0.message.tool_calls.0.tool_call.id":"c1",
			"llm.output_messages.0.message.tool_calls.0.tool_call.function.name":"f",
			"llm.output_messages.0.message.function_call_name":"f",
			"llm.output_messages.0.message.function_call_arguments_json":` + q(`{"a": "\u00e9", "b": 2}`) + `,
			"llm.output_messages.0.message.tool_call_id":"c1"}`},
		{"image without url", `{"_event_name":"LLMEvent","input_messages":[{"role":"user","contents":[{"type":"image","url":null}]}]}`,
			`{"openinference.span.kind":"LLM",
			"llm.input_messages.0.message.role":"user",
			"llm.input_messages.0.message.contents.0.message_content.type":"image"}`},
		{"llm stop", `{"_event_name":"LLMStopEvent","chat_model_name":"m"}`,
			`{"openinference.span.kind":"LLM","llm.model_name":"m"}`},
		{"refusal stop", `{"_event_name":"RefusalStopEvent","reason":"out_of_scope","token_count_total":7}`,
			`{"openinference.span.kind":"LLM","llm.token_count.total":7}`},
		{"retriever", `{"_event_name":"RetrieverEvent","nodes":[
			{"id":"n1","content":"alpha","document_id":"d1","source":"wiki","namespace":"ns","score":0.75,"source_origin":"upload"},
			{"id":"n2","content":"beta","document_id":"d2","source":"wiki","namespace":"ns"}]}`,
			`{"openinference.span.kind":"RETRIEVER",
			"retrieval.documents.0.document.id":"n1","retrieval.documents.0.document.score":0.75,
			"retrieval.documents.0.document.content":"alpha","retrieval.documents.0.document.metadata":` + q(meta("d1", `"upload"`)) + `,
			"retrieval.documents.1.document.id":"n2",
			"retrieval.documents.1.document.content":"beta","retrieval.documents.1.document.metadata":` + q(meta("d2", "null")) + `}`},
		{"retriever without nodes", `{"_event_name":"RetrieverEvent"}`, `{"openinference.span.kind":"RETRIEVER"}`},
		{"reranker", `{"_event_name":"RerankerEvent","query":"q","rerank_model_name":"rr","top_n":1,"reranked":true,
			"input_nodes":[{"id":"a","content":"A","document_id":"da","source":"wiki","namespace":"ns","score":0.1},
				{"id":"b","content":"B","document_id":"db","source":"wiki","namespace":"ns"}],
			"output_nodes":[{"id":"b","content":"B","document_id":"db","source":"wiki","namespace":"ns","score":0.9}]}`,
			`{"openinference.span.kind":"RERANKER","reranker.query":"q","reranker.model_name":"rr","reranker.top_k":1,
			"reranker.input_documents.0.document.id":"a","reranker.input_documents.0.document.score":0.1,
			"reranker.input_documents.0.document.content":"A","reranker.input_documents.0.document.metadata":` + q(meta("da", "null")) + `,
			"reranker.input_documents.1.document.id":"b",
			"reranker.input_documents.1.document.content":"B","reranker.input_documents.1.document.metadata":` + q(meta("db", "null")) + `,
			"reranker.output_documents.0.document.id":"b","reranker.output_documents.0.document.score":0.9,
			"reranker.output_documents.0.document.content":"B","reranker.output_documents.0.document.metadata":` + q(meta("db", "null")) + `}`},
		{"embedding", `{"_event_name":"EmbeddingEvent","text":"not emitted","embedding_model_name":"e5",
			"embeddings":[{"text":"one","vector":[0.5,-1.25]},{"text":null,"vector":[2.5]}]}`,
			`{"openinference.span.kind":"EMBEDDING","embedding.model_name":"e5",
			"embedding.embeddings.0.embedding.text":"one","embedding.embeddings.0.embedding.vector":[0.5,-1.25],
			"embedding.embeddings.1.embedding.vector":[2.5]}`},
		{"tool", `{"_event_name":"ToolEvent","tool_call_id":"c1","name":"search","description":"finds",
			"json_schema":{"type":"object","properties":{"q":{"type":"string"}}},"parameters":{"q":"zürich"}}`,
			`{"openinference.span.kind":"TOOL","tool.name":"search","tool.description":"finds","tool.id":"c1",
			"tool.json_schema":` + q(`{"properties": {"q": {"type": "string"}}, "type": "object"}`) + `,
			"tool.parameters":` + q(`{"properties": {"q": {"type": "string"}}, "type": "object"}`) + `,
			"input.value":` + q(`{"q": "z\u00fcrich"}`) + `,"input.mime_type":"application/json"}`},
		{"tool unset", `{"_event_name":"ToolEvent"}`,
			`{"openinference.span.kind":"TOOL"}`},
		{"chain", `{"_event_name":"ChainEvent","metadata":{"step":"condense","n":2}}`,
			`{"openinference.span.kind":"CHAIN","metadata":` + q(`{"n": 2, "step": "condense"}`) + `}`},
		{"chain unset", `{"_event_name":"ChainEvent"}`, `{"openinference.span.kind":"CHAIN"}`},
		{"agent", `{"_event_name":"AgentEvent"}`, `{"openinference.span.kind":"AGENT"}`},
		{"exception", `{"_event_name":"ExceptionEvent","message":"boom"}`,
			`{"openinference.span.kind":"CHAIN","exception.type":"ExceptionEvent","exception.message":"boom","http.response.status_code":500}`},
		{"exception with status", `{"_event_name":"ExceptionEvent","message":"","http_status_code":404}`,
			`{"openinference.span.kind":"CHAIN","exception.type":"ExceptionEvent","exception.message":"","http.response.status_code":404}`},
	}
	for _, name := range []string{"GuardEvent", "GuardAcceptEvent", "AgentSuitabilityAcceptEvent", "ContextSufficientAcceptEvent",
		"FewShotAcceptEvent", "SensitiveInfoAcceptEvent", "GuardRejectionEvent", "AgentSuitabilityRejectEvent",
		"ContextInsufficientRejectEvent", "ExpertRejectEvent", "FewShotRejectEvent", "SensitiveInfoRejectEvent"} {
		cases = append(cases, struct{ name, event, want string }{name,
			`{"_event_name":"` + name + `","reason":"not emitted","cleaned_answer":"not emitted"}`,
			`{"openinference.span.kind":"GUARDRAIL"}`})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := decode(t, c.event)
			if name := event.Name(ev); !strings.Contains(c.event, `"`+name+`"`) || event.IsFallback(ev) {
				t.Fatalf("decoded as %s (fallback %v)", name, event.IsFallback(ev))
			}
			got, err := semantic.Convention(ev)
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := jsonValue(t, data), jsonValue(t, []byte(c.want)); !reflect.DeepEqual(g, w) {
				t.Fatalf("attributes\n got %s\nwant %s", data, c.want)
			}
			// The span attributes say the same, in OTel types.
			kvs, err := semantic.Attributes(ev)
			if err != nil {
				t.Fatal(err)
			}
			if len(kvs) != len(got) {
				t.Fatalf("%d span attributes, %d in the map", len(kvs), len(got))
			}
			for _, kv := range kvs {
				if _, ok := got[string(kv.Key)]; !ok {
					t.Fatalf("span attribute %s not in the map", kv.Key)
				}
			}
		})
	}
}

// The attribute types follow the reference: integers stay integers, JSON
// strings are strings, the template variables too (the spec's type).
func TestAttributeTypes(t *testing.T) {
	ev := decode(t, `{"_event_name":"LLMEvent","token_count_total":3,"prompt_template_variables":{"x":"y"},
		"tools":[{"name":"f"}]}`)
	kvs, err := semantic.Attributes(ev)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]attribute.Type{}
	for _, kv := range kvs {
		types[string(kv.Key)] = kv.Value.Type()
	}
	want := map[string]attribute.Type{
		"openinference.span.kind":       attribute.STRING,
		"llm.token_count.total":         attribute.INT64,
		"llm.prompt_template.variables": attribute.STRING,
		"llm.tools.0.tool.json_schema":  attribute.STRING,
	}
	if !reflect.DeepEqual(types, want) {
		t.Fatalf("types %v, want %v", types, want)
	}
	exc, _ := semantic.Attributes(&event.ExceptionEvent{Message: "m", HTTPStatusCode: 502})
	if exc[1].Key != "exception.type" || exc[1].Value.Type() != attribute.STRING ||
		exc[3].Key != "http.response.status_code" || exc[3].Value.AsInt64() != 502 {
		t.Fatalf("exception attributes %v", exc)
	}
	// A Go value left at zero is written with the default, 500.
	if exc, _ := semantic.Attributes(&event.ExceptionEvent{Message: "m"}); exc[3].Value.AsInt64() != 500 {
		t.Fatalf("http.response.status_code of an unset status %v", exc[3].Value)
	}
	emb, _ := semantic.Attributes(&event.EmbeddingEvent{Embeddings: []event.Embedding{{Vector: []float64{1, 2}}}})
	if v := emb[len(emb)-1].Value; v.Type() != attribute.FLOAT64SLICE || !reflect.DeepEqual(v.AsFloat64Slice(), []float64{1, 2}) {
		t.Fatalf("vector %v", v)
	}
}

// myLLM is an application's own subclass: it maps like its base.
type myLLM struct {
	event.LLMEvent
	Extra string `json:"extra"`
}

func TestConventionSubclassAndOthers(t *testing.T) {
	got, err := semantic.Convention(&myLLM{LLMEvent: event.LLMEvent{ChatModelName: str("m")}})
	if err != nil || got["openinference.span.kind"] != "LLM" || got["llm.model_name"] != "m" {
		t.Fatalf("subclass: %v, %v", got, err)
	}
	for _, ev := range []event.Event{&event.UserMessageEvent{}, &event.SemanticEvent{}, &event.ChunkEvent{}, nil} {
		if _, err := semantic.Convention(ev); !errors.Is(err, semantic.ErrNoConvention) {
			t.Errorf("%T: error %v, want ErrNoConvention", ev, err)
		}
	}
}
