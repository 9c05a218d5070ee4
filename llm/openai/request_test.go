package openai

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/llm"
)

func ptr[T any](v T) *T { return &v }

// TestNewParams checks the request body each part of llm.Request makes.
func TestNewParams(t *testing.T) {
	weather := llm.Tool{Name: "get_weather", Description: "Current weather", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
	for _, tc := range []struct {
		name   string
		req    llm.Request
		legacy bool
		want   string
	}{{
		name: "system prompt first, plain user text",
		req:  llm.Request{Model: "gpt-x", System: "Be brief.", Messages: []llm.Message{llm.UserText("Hi")}},
		want: `{"model":"gpt-x","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`,
	}, {
		name: "tool declarations and choice of one tool",
		req:  llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("Weather?")}, Tools: []llm.Tool{weather, {Name: "now"}}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get_weather"}},
		want: `{"model":"m","messages":[{"role":"user","content":"Weather?"}],
			"tools":[{"type":"function","function":{"name":"get_weather","description":"Current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
			         {"type":"function","function":{"name":"now","parameters":{"type":"object","properties":{}}}}],
			"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`,
	}, {
		name: "tool choice required and none",
		req:  llm.Request{Model: "m", ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceRequired}},
		want: `{"model":"m","tool_choice":"required"}`,
	}, {
		name: "tool choice none",
		req:  llm.Request{Model: "m", ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone}},
		want: `{"model":"m","tool_choice":"none"}`,
	}, {
		name: "tool uses and their results, thinking dropped",
		req: llm.Request{Model: "m", Messages: []llm.Message{
			llm.UserText("Weather in Zürich and Genève?"),
			{Role: llm.RoleAssistant, Content: []llm.Block{
				{Kind: llm.BlockThinking, Text: "two calls", Signature: "sig"},
				llm.Text("Checking."),
				llm.ToolUse("c1", "get_weather", json.RawMessage(`{"city":"Zürich"}`)),
				llm.ToolUse("c2", "get_weather", nil),
			}},
			{Role: llm.RoleTool, Content: []llm.Block{llm.ToolResult("c1", "12°C", false), llm.ToolResult("c2", "no such city", true)}},
		}},
		want: `{"model":"m","messages":[
			{"role":"user","content":"Weather in Zürich and Genève?"},
			{"role":"assistant","content":"Checking.","tool_calls":[
				{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Zürich\"}"}},
				{"id":"c2","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
			{"role":"tool","content":"12°C","tool_call_id":"c1"},
			{"role":"tool","content":"no such city","tool_call_id":"c2"}]}`,
	}, {
		name: "images by URL and by data",
		req: llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
			llm.Text("What is this?"),
			{Kind: llm.BlockImage, URL: "https://example.com/a.png"},
			{Kind: llm.BlockImage, MediaType: "image/png", Data: []byte{1, 2, 3}},
		}}}},
		want: `{"model":"m","messages":[{"role":"user","content":[
			{"type":"text","text":"What is this?"},
			{"type":"image_url","image_url":{"url":"https://example.com/a.png"}},
			{"type":"image_url","image_url":{"url":"data:image/png;base64,AQID"}}]}]}`,
	}, {
		name: "a document as a file part",
		req: llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
			llm.Text("Summarise."),
			{Kind: llm.BlockDocument, MediaType: "application/pdf", Data: []byte{1, 2, 3}, Title: "r.pdf"},
		}}}},
		want: `{"model":"m","messages":[{"role":"user","content":[
			{"type":"text","text":"Summarise."},
			{"type":"file","file":{"file_data":"data:application/pdf;base64,AQID","filename":"r.pdf"}}]}]}`,
	}, {
		name: "response schema as a strict json_schema response format",
		req:  llm.Request{Model: "m", ResponseSchema: &llm.ResponseSchema{Name: "city", Description: "A city.", Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`), Strict: true}},
		want: `{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"city","description":"A city.","strict":true,
			"schema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}}}}`,
	}, {
		name: "sampling, stop, thinking as effort",
		req:  llm.Request{Model: "m", MaxTokens: 100, Temperature: ptr(0.5), TopP: ptr(0.9), Stop: []string{"END"}, Thinking: &llm.Thinking{BudgetTokens: 30000}},
		want: `{"model":"m","max_completion_tokens":100,"temperature":0.5,"top_p":0.9,"stop":["END"],"reasoning_effort":"high"}`,
	}, {
		name:   "legacy max_tokens",
		req:    llm.Request{Model: "m", MaxTokens: 100},
		legacy: true,
		want:   `{"model":"m","max_tokens":100}`,
	}, {
		name: "extra merged into the body, overriding",
		req:  llm.Request{Model: "m", Temperature: ptr(0.5), Extra: map[string]any{"seed": 7, "temperature": 0.1, "user": "u1"}},
		want: `{"model":"m","temperature":0.1,"seed":7,"user":"u1"}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewParams(&tc.req, "default", tc.legacy)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
				t.Fatalf("bad want: %v", err)
			}
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("body (-want +got):\n%s\ngot %s", d, got)
			}
		})
	}
}

func TestNewParamsRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  llm.Request
		want string
	}{
		{"no model", llm.Request{}, "no model"},
		{"bad schema", llm.Request{Model: "m", Tools: []llm.Tool{{Name: "t", Schema: json.RawMessage(`[1]`)}}}, `tool "t"`},
		{"image in assistant turn", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleAssistant, Content: []llm.Block{{Kind: llm.BlockImage, URL: "u"}}}}}, "message 0 (assistant)"},
		{"image without data", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Kind: llm.BlockImage}}}}}, "neither URL nor Data"},
		{"document by URL", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Kind: llm.BlockDocument, URL: "https://example.com/r.pdf"}}}}}, "no document URL"},
		{"response schema not an object", llm.Request{Model: "m", ResponseSchema: &llm.ResponseSchema{Schema: json.RawMessage(`[1]`)}}, "response schema"},
		{"text in tool turn", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleTool, Content: []llm.Block{llm.Text("x")}}}}, "only tool results"},
		{"unknown role", llm.Request{Model: "m", Messages: []llm.Message{{Role: "robot"}}}, `unknown role "robot"`},
		{"tool choice without name", llm.Request{Model: "m", ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool}}, "names no tool"},
	} {
		_, err := NewParams(&tc.req, "", false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}
