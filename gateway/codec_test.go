package gateway

import (
	"encoding/json"
	"testing"

	"github.com/saap-go/agent/event"
)

// TestReadClaim: an answer names its question by request_event.event_id;
// a malformed request_event is refused naming the field.
func TestReadClaim(t *testing.T) {
	tests := []struct {
		body, field string
	}{
		{`{"request_event":null}`, "request_event"},
		{`{}`, "request_event"},
		{`{"request_event":[1]}`, "request_event"},
		{`{"request_event":{"topic":{"agent_class":7}}}`, "request_event"},
		{`{"request_event":{"question":"q"}}`, "request_event.event_id"},
	}
	for _, tt := range tests {
		var body map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tt.body), &body); err != nil {
			t.Fatal(err)
		}
		_, err := readClaim(body)
		re, ok := err.(*requestError)
		if !ok || re.field != tt.field || re.status != 400 {
			t.Errorf("readClaim(%s) = %v; want a 400 naming %s", tt.body, err, tt.field)
		}
	}
	var body map[string]json.RawMessage
	_ = json.Unmarshal([]byte(`{"request_event":{"event_id":"e1","topic":{"agent_class":"A","thread_id":"t","run_id":"r"}}}`), &body)
	c, err := readClaim(body)
	if err != nil || c.EventID != "e1" || c.thread() != "t" {
		t.Fatalf("readClaim = %+v, %v", c, err)
	}
	q := Question{EventID: "e1", Class: "A", AgentID: "b", Thread: "t", Run: "r"}
	if !c.matches(q) {
		t.Errorf("claim %+v does not match %+v", c, q)
	}
	q.Class = "B"
	if c.matches(q) {
		t.Errorf("claim of class A matches a question of class B")
	}
}

// GatewayTestReport is a custom stop whose answer is a declared field.
type GatewayTestReport struct {
	event.StopEvent
	Content string `json:"content"`
}

func init() { event.MustRegister[GatewayTestReport]() }

// TestFinalText: the answer of a stop event is read through the codec, from
// an LLM stop's output messages or a custom stop's extra fields.
func TestFinalText(t *testing.T) {
	llm := event.New[event.LLMStopEvent]()
	llm.OutputMessages = []event.Message{event.MessageFromString("user", "q"), event.MessageFromString("assistant", "answer")}
	llmRaw, err := event.Marshal(llm)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		raw  string
		want string
	}{
		{"LLMStopEvent", string(llmRaw), "answer"},
		{"contents", `{"_event_name":"StopEvent","output_messages":[{"role":"assistant","contents":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`, "ab"},
		{"blocks", `{"_event_name":"StopEvent","output_messages":[{"role":"assistant","blocks":[{"block_type":"text","text":"c"}]}]}`, "c"},
		{"legacy content", `{"_event_name":"StopEvent","output_messages":[{"role":"assistant","content":"d"}]}`, "d"},
		{"content", `{"_event_name":"MyStop","_parent_event_names":["MyStop","StopEvent"],"content":"e"}`, "e"},
		{"declared content", `{"_event_name":"GatewayTestReport","content":"f"}`, "f"},
		{"nothing", `{"_event_name":"StopEvent"}`, ""},
	}
	for _, tt := range tests {
		e, err := event.Unmarshal([]byte(tt.raw))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := finalText(&seen{event: e, raw: []byte(tt.raw)}); got != tt.want {
			t.Errorf("%s: finalText = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestExceptionOfSubtype: message and status come from the codec for any
// ExceptionEvent subtype.
func TestExceptionOfSubtype(t *testing.T) {
	raw := []byte(`{"_event_name":"TeapotError","_parent_event_names":["TeapotError","ExceptionEvent","SemanticEvent"],"message":"short and stout","http_status_code":418}`)
	e, err := event.Unmarshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	if msg, status := exceptionOf(&seen{event: e, raw: raw}); msg != "short and stout" || status != 418 {
		t.Errorf("exceptionOf = %q, %d", msg, status)
	}
}
