package anthropic

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
	weather := llm.Tool{Name: "get_weather", Description: "Current weather", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)}
	for _, tc := range []struct {
		name string
		req  llm.Request
		want string
	}{{
		name: "system prompt as a top-level block, default max_tokens",
		req:  llm.Request{Model: "claude-x", System: "Be brief.", Messages: []llm.Message{llm.UserText("Hi")}},
		want: `{"model":"claude-x","max_tokens":4096,"system":[{"type":"text","text":"Be brief."}],
			"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
	}, {
		name: "tool declarations and choice of one tool",
		req:  llm.Request{Model: "m", MaxTokens: 10, Messages: []llm.Message{llm.UserText("Weather?")}, Tools: []llm.Tool{weather, {Name: "now"}}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get_weather"}},
		want: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"Weather?"}]}],
			"tools":[{"name":"get_weather","description":"Current weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}},
			         {"name":"now","input_schema":{"type":"object","properties":{}}}],
			"tool_choice":{"type":"tool","name":"get_weather"}}`,
	}, {
		name: "tool choice required is any",
		req:  llm.Request{Model: "m", MaxTokens: 10, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceRequired}},
		want: `{"model":"m","max_tokens":10,"tool_choice":{"type":"any"}}`,
	}, {
		name: "tool choice none",
		req:  llm.Request{Model: "m", MaxTokens: 10, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone}},
		want: `{"model":"m","max_tokens":10,"tool_choice":{"type":"none"}}`,
	}, {
		name: "thinking with signature sent back, tool results in a user turn merged",
		req: llm.Request{Model: "m", MaxTokens: 10, Messages: []llm.Message{
			llm.UserText("Weather in Zürich and Genève?"),
			{Role: llm.RoleAssistant, Content: []llm.Block{
				{Kind: llm.BlockThinking, Text: "two calls", Signature: "sig=="},
				{Kind: llm.BlockThinking, Text: "from another provider, unsigned"},
				llm.Text("Checking."),
				llm.ToolUse("t1", "get_weather", json.RawMessage(`{"city":"Zürich"}`)),
				llm.ToolUse("t2", "get_weather", nil),
			}},
			{Role: llm.RoleTool, Content: []llm.Block{llm.ToolResult("t1", "12°C", false)}},
			{Role: llm.RoleTool, Content: []llm.Block{llm.ToolResult("t2", "no such city", true)}},
			llm.UserText("And tomorrow?"),
		}},
		want: `{"model":"m","max_tokens":10,"messages":[
			{"role":"user","content":[{"type":"text","text":"Weather in Zürich and Genève?"}]},
			{"role":"assistant","content":[
				{"type":"thinking","thinking":"two calls","signature":"sig=="},
				{"type":"text","text":"Checking."},
				{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Zürich"}},
				{"type":"tool_use","id":"t2","name":"get_weather","input":{}}]},
			{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"12°C"}]},
				{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"no such city"}],"is_error":true},
				{"type":"text","text":"And tomorrow?"}]}]}`,
	}, {
		name: "images by URL and by data",
		req: llm.Request{Model: "m", MaxTokens: 10, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
			llm.Text("What is this?"),
			{Kind: llm.BlockImage, URL: "https://example.com/a.png"},
			{Kind: llm.BlockImage, MediaType: "image/png", Data: []byte{1, 2, 3}},
		}}}},
		want: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[
			{"type":"text","text":"What is this?"},
			{"type":"image","source":{"type":"url","url":"https://example.com/a.png"}},
			{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AQID"}}]}]}`,
	}, {
		name: "documents: PDF inline and by URL, plain text",
		req: llm.Request{Model: "m", MaxTokens: 10, Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
			{Kind: llm.BlockDocument, MediaType: "application/pdf", Data: []byte{1, 2, 3}, Title: "r.pdf"},
			{Kind: llm.BlockDocument, URL: "https://example.com/r.pdf"},
			{Kind: llm.BlockDocument, MediaType: "text/plain", Data: []byte("notes")},
		}}}},
		want: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[
			{"type":"document","title":"r.pdf","source":{"type":"base64","media_type":"application/pdf","data":"AQID"}},
			{"type":"document","source":{"type":"url","url":"https://example.com/r.pdf"}},
			{"type":"document","source":{"type":"text","media_type":"text/plain","data":"notes"}}]}]}`,
	}, {
		name: "response schema as output_config.format",
		req:  llm.Request{Model: "m", MaxTokens: 10, ResponseSchema: &llm.ResponseSchema{Name: "city", Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`), Strict: true}},
		want: `{"model":"m","max_tokens":10,"output_config":{"format":{"type":"json_schema",
			"schema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}}}}`,
	}, {
		name: "thinking budget raises max_tokens, sampling as extra fields",
		req:  llm.Request{Model: "m", MaxTokens: 2000, Thinking: &llm.Thinking{BudgetTokens: 5000}, Temperature: ptr(1.0), TopP: ptr(0.9), Stop: []string{"END"}},
		want: `{"model":"m","max_tokens":9096,"thinking":{"type":"enabled","budget_tokens":5000},"temperature":1,"top_p":0.9,"stop_sequences":["END"]}`,
	}, {
		name: "thinking budget below the minimum",
		req:  llm.Request{Model: "m", MaxTokens: 8000, Thinking: &llm.Thinking{}},
		want: `{"model":"m","max_tokens":8000,"thinking":{"type":"enabled","budget_tokens":1024}}`,
	}, {
		name: "extra merged into the body, overriding",
		req:  llm.Request{Model: "m", MaxTokens: 10, Temperature: ptr(0.5), Extra: map[string]any{"temperature": 0.1, "metadata": map[string]any{"user_id": "u1"}}},
		want: `{"model":"m","max_tokens":10,"temperature":0.1,"metadata":{"user_id":"u1"}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewParams(&tc.req, "default")
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
		{"schema not an object", llm.Request{Model: "m", Tools: []llm.Tool{{Name: "t", Schema: json.RawMessage(`{"type":"string"}`)}}}, "arguments are an object"},
		{"image in assistant turn", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleAssistant, Content: []llm.Block{{Kind: llm.BlockImage, URL: "u"}}}}}, "message 0 (assistant)"},
		{"image without data", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Kind: llm.BlockImage}}}}}, "neither URL nor Data"},
		{"document of another type", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Kind: llm.BlockDocument, MediaType: "application/zip", Data: []byte{1}}}}}}, "PDF and plain text"},
		{"response schema not an object", llm.Request{Model: "m", ResponseSchema: &llm.ResponseSchema{Schema: json.RawMessage(`[1]`)}}, "response schema"},
		{"tool input not JSON", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUse("x", "t", json.RawMessage("{"))}}}}, "not JSON"},
		{"unknown role", llm.Request{Model: "m", Messages: []llm.Message{{Role: "robot"}}}, `unknown role "robot"`},
		{"tool choice without name", llm.Request{Model: "m", ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool}}, "names no tool"},
	} {
		_, err := NewParams(&tc.req, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}
