package gemini

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/internal/replaytest"
)

func ptr[T any](v T) *T { return &v }

// TestNewCall checks the contents and configuration each part of
// llm.Request makes, as the SDK writes them in JSON.
func TestNewCall(t *testing.T) {
	weather := llm.Tool{Name: "get_weather", Description: "Current weather", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
	for _, tc := range []struct {
		name     string
		req      llm.Request
		contents string
		config   string
	}{{
		name:     "system prompt as the system instruction",
		req:      llm.Request{Model: "g", System: "Be brief.", Messages: []llm.Message{llm.UserText("Hi")}},
		contents: `[{"role":"user","parts":[{"text":"Hi"}]}]`,
		config:   `{"systemInstruction":{"parts":[{"text":"Be brief."}]}}`,
	}, {
		name:     "tool declarations and choice of one tool",
		req:      llm.Request{Model: "g", Tools: []llm.Tool{weather, {Name: "now"}}, ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool, Name: "get_weather"}},
		contents: `null`,
		config: `{"tools":[{"functionDeclarations":[
			{"name":"get_weather","description":"Current weather","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
			{"name":"now","parametersJsonSchema":{"type":"object","properties":{}}}]}],
			"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}}}`,
	}, {
		name:     "tool choice none",
		req:      llm.Request{Model: "g", ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceNone}},
		contents: `null`,
		config:   `{"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}`,
	}, {
		name: "tool uses and results by name, signatures sent back, made-up ids left out",
		req: llm.Request{Model: "g", Messages: []llm.Message{
			llm.UserText("Weather?"),
			{Role: llm.RoleAssistant, Content: []llm.Block{
				{Kind: llm.BlockThinking, Text: "two calls", Signature: "AQID"},
				{Kind: llm.BlockThinking, Signature: "BAUG"},
				llm.ToolUse("gemini-call-0", "get_weather", json.RawMessage(`{"city":"Zürich"}`)),
				llm.ToolUse("fc-7", "get_weather", nil),
			}},
			{Role: llm.RoleTool, Content: []llm.Block{llm.ToolResult("gemini-call-0", "12°C", false), llm.ToolResult("fc-7", "no such city", true)}},
		}},
		contents: `[{"role":"user","parts":[{"text":"Weather?"}]},
			{"role":"model","parts":[
				{"text":"two calls","thought":true,"thoughtSignature":"AQID"},
				{"functionCall":{"name":"get_weather","args":{"city":"Zürich"}},"thoughtSignature":"BAUG"},
				{"functionCall":{"id":"fc-7","name":"get_weather"}}]},
			{"role":"user","parts":[
				{"functionResponse":{"name":"get_weather","response":{"output":"12°C"}}},
				{"functionResponse":{"id":"fc-7","name":"get_weather","response":{"error":"no such city"}}}]}]`,
		config: `{}`,
	}, {
		name: "images inline and by URI",
		req: llm.Request{Model: "g", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{
			llm.Text("What is this?"),
			{Kind: llm.BlockImage, URL: "gs://bucket/a.png", MediaType: "image/png"},
			{Kind: llm.BlockImage, MediaType: "image/png", Data: []byte{1, 2, 3}},
		}}}},
		contents: `[{"role":"user","parts":[{"text":"What is this?"},
			{"fileData":{"fileUri":"gs://bucket/a.png","mimeType":"image/png"}},
			{"inlineData":{"mimeType":"image/png","data":"AQID"}}]}]`,
		config: `{}`,
	}, {
		name: "documents and the model's own images",
		req: llm.Request{Model: "g", Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{{Kind: llm.BlockDocument, MediaType: "application/pdf", Data: []byte{1, 2, 3}, Title: "r.pdf"}}},
			{Role: llm.RoleAssistant, Content: []llm.Block{{Kind: llm.BlockImage, MediaType: "image/png", Data: []byte{4}}}},
		}},
		contents: `[{"role":"user","parts":[{"inlineData":{"mimeType":"application/pdf","data":"AQID"}}]},
			{"role":"model","parts":[{"inlineData":{"mimeType":"image/png","data":"BA=="}}]}]`,
		config: `{}`,
	}, {
		name:     "response schema as responseJsonSchema",
		req:      llm.Request{Model: "g", ResponseSchema: &llm.ResponseSchema{Name: "city", Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}},
		contents: `null`,
		config:   `{"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`,
	}, {
		name:     "sampling, stop, thinking, extra",
		req:      llm.Request{Model: "g", MaxTokens: 100, Temperature: ptr(0.5), TopP: ptr(0.25), Stop: []string{"END"}, Thinking: &llm.Thinking{BudgetTokens: 512}, Extra: map[string]any{"labels": map[string]any{"team": "a"}}},
		contents: `null`,
		config: `{"maxOutputTokens":100,"temperature":0.5,"topP":0.25,"stopSequences":["END"],
			"thinkingConfig":{"includeThoughts":true,"thinkingBudget":512},
			"httpOptions":{"extraBody":{"labels":{"team":"a"}}}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCall(&tc.req, "default")
			if err != nil {
				t.Fatal(err)
			}
			if c.Model != tc.req.Model {
				t.Errorf("model = %q", c.Model)
			}
			jsonEqual(t, "contents", c.Contents, tc.contents)
			jsonEqual(t, "config", c.Config, tc.config)
		})
	}
}

func jsonEqual(t *testing.T, what string, v any, want string) {
	t.Helper()
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want: %v", err)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("%s (-want +got):\n%s\ngot %s", what, d, got)
	}
}

func TestNewCallRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  llm.Request
		want string
	}{
		{"no model", llm.Request{}, "no model"},
		{"bad schema", llm.Request{Model: "m", Tools: []llm.Tool{{Name: "t", Schema: json.RawMessage(`[1]`)}}}, `tool "t"`},
		{"result without its use", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleTool, Content: []llm.Block{llm.ToolResult("x", "r", false)}}}}, "answers no earlier tool use"},
		{"image without data", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Kind: llm.BlockImage}}}}}, "neither URL nor Data"},
		{"document without data", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Kind: llm.BlockDocument}}}}}, "neither URL nor Data"},
		{"response schema not an object", llm.Request{Model: "m", ResponseSchema: &llm.ResponseSchema{Schema: json.RawMessage(`[1]`)}}, "response schema"},
		{"tool input not an object", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUse("x", "t", json.RawMessage("[1]"))}}}}, "not a JSON object"},
		{"unknown role", llm.Request{Model: "m", Messages: []llm.Message{{Role: "robot"}}}, `unknown role "robot"`},
		{"tool choice without name", llm.Request{Model: "m", ToolChoice: llm.ToolChoice{Mode: llm.ToolChoiceTool}}, "names no tool"},
	} {
		_, err := NewCall(&tc.req, "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

// TestExtraReachesTheServer checks that the SDK merges Extra into the body.
func TestExtraReachesTheServer(t *testing.T) {
	p, rep := server(t, 200, nil, "text.json")
	req := replaytest.Question()
	req.Extra = map[string]any{"cachedContent": "cachedContents/abc"}
	if _, err := p.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := rep.Request(t)["cachedContent"]; got != "cachedContents/abc" {
		t.Errorf("body cachedContent = %v, want the Extra value", got)
	}
}
