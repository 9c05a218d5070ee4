package llm

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/saap-go/agent/event"
)

// EventMessages converts a conversation to the messages of an LLMEvent:
// the system instructions first (role "system") when there are any, tool
// uses as OpenAI-style tool_calls, each tool result as a "tool" message of
// its own with its tool_call_id, images as image contents. Thinking is
// left out (it is published as ThoughtEvents), and so are documents,
// which the reference's message contents have no type for.
func EventMessages(system string, msgs []Message) []event.Message {
	out := make([]event.Message, 0, len(msgs)+1)
	if system != "" {
		out = append(out, event.MessageFromString("system", system))
	}
	for _, m := range msgs {
		out = appendEventMessage(out, m)
	}
	return out
}

func appendEventMessage(out []event.Message, m Message) []event.Message {
	cur := event.Message{Role: string(m.Role)}
	has := false
	for _, b := range m.Content {
		switch b.Kind {
		case BlockText:
			cur.Contents = append(cur.Contents, event.MessageContent{Type: "text", Text: b.Text})
			has = true
		case BlockImage:
			url := b.URL
			if url == "" && len(b.Data) > 0 {
				url = "data:" + b.MediaType + ";base64," + base64.StdEncoding.EncodeToString(b.Data)
			}
			cur.Contents = append(cur.Contents, event.MessageContent{Type: "image", URL: &url})
			has = true
		case BlockDocument:
			// The reference's message contents are text, image and
			// audio only: a document has no place in the record.
		case BlockToolUse:
			cur.ToolCalls = append(cur.ToolCalls, toolCall(b))
			has = true
		case BlockToolResult:
			tm := event.MessageFromString(string(RoleTool), b.Text)
			tm.ToolCallID = event.Str(b.ToolUseID)
			out = append(out, tm)
		}
	}
	if has || len(m.Content) == 0 {
		out = append(out, cur)
	}
	return out
}

// toolCall is a tool use in the OpenAI shape the reference's messages
// carry: the arguments as a JSON string.
func toolCall(b Block) map[string]json.RawMessage {
	args := b.Input
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	fn, _ := json.Marshal(struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}{b.ToolName, string(args)})
	id, _ := json.Marshal(b.ToolUseID)
	return map[string]json.RawMessage{"id": id, "type": json.RawMessage(`"function"`), "function": fn}
}

// EventTools converts tool declarations to the tools of an LLMEvent, in
// the OpenAI function shape.
func EventTools(tools []Tool) []map[string]json.RawMessage {
	if len(tools) == 0 {
		return nil
	}
	out := make([]map[string]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		schema := t.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		fn, _ := json.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		}{t.Name, t.Description, schema})
		out = append(out, map[string]json.RawMessage{"type": json.RawMessage(`"function"`), "function": fn})
	}
	return out
}

// invocationParameters are the request's sampling options, as the
// invocation_parameters of an LLMEvent.
func invocationParameters(req *Request) map[string]json.RawMessage {
	p := map[string]json.RawMessage{}
	put := func(k string, v any) {
		if raw, err := json.Marshal(v); err == nil {
			p[k] = raw
		}
	}
	if req.Model != "" {
		put("model", req.Model)
	}
	if req.MaxTokens > 0 {
		p["max_tokens"] = json.RawMessage(strconv.Itoa(req.MaxTokens))
	}
	if req.Temperature != nil {
		put("temperature", *req.Temperature)
	}
	if req.TopP != nil {
		put("top_p", *req.TopP)
	}
	if len(req.Stop) > 0 {
		put("stop", req.Stop)
	}
	if req.ToolChoice.Mode != ToolChoiceAuto {
		put("tool_choice", strings.TrimSpace(string(req.ToolChoice.Mode)+" "+req.ToolChoice.Name))
	}
	if req.Thinking != nil {
		put("thinking_budget_tokens", req.Thinking.BudgetTokens)
	}
	if rs := req.ResponseSchema; rs != nil {
		put("response_format", map[string]any{"type": "json_schema", "name": cmpOr(rs.Name, "response"), "strict": rs.Strict})
	}
	if len(p) == 0 {
		return nil
	}
	return p
}

// NewLLMEvent records a finished call as an LLMEvent: model, provider,
// token counts, the request's messages (with its system instructions) as
// input, the answer as output, the sampling options and the tools.
func NewLLMEvent(provider string, req *Request, resp *Response) *event.LLMEvent {
	ev := &event.LLMEvent{
		InputMessages:        EventMessages(req.System, req.Messages),
		OutputMessages:       EventMessages("", []Message{resp.Message}),
		InvocationParameters: invocationParameters(req),
		Tools:                EventTools(req.Tools),
	}
	if m := cmpOr(resp.Model, req.Model); m != "" {
		ev.ChatModelName = event.Str(m)
	}
	if provider != "" {
		ev.Provider = event.Str(provider)
	}
	in, out := int64(resp.Usage.InputTokens), int64(resp.Usage.OutputTokens)
	if in != 0 || out != 0 {
		total := in + out
		ev.TokenCountPrompt, ev.TokenCountCompletion, ev.TokenCountTotal = &in, &out, &total
	}
	return ev
}

// StopEvent is the run's answer as the reference's LLM agents end a run:
// an LLMStopEvent carrying the call's record, whose output_messages end
// with the assistant's answer.
func StopEvent(call *event.LLMEvent) *event.LLMStopEvent {
	stop := &event.LLMStopEvent{}
	if call != nil {
		stop.LLMEvent = *call
		stop.LLMEvent.SemanticEvent = event.SemanticEvent{}
	}
	return stop
}

// NewToolEvent records a tool call as a ToolEvent: the call's id, the
// tool's name, description and schema, and the arguments.
func NewToolEvent(def Tool, use Block) *event.ToolEvent {
	ev := &event.ToolEvent{ToolCallID: event.Str(use.ToolUseID), Name: event.Str(cmpOr(use.ToolName, def.Name))}
	if def.Description != "" {
		ev.Description = event.Str(def.Description)
	}
	if len(def.Schema) > 0 {
		var m map[string]json.RawMessage
		if json.Unmarshal(def.Schema, &m) == nil {
			ev.JSONSchema = m
		}
	}
	ev.Parameters = objectOf(use.Input)
	return ev
}

// objectOf reads a JSON object's members; anything else gives an empty
// map, never nil, so the record shows the call had no usable arguments.
func objectOf(raw json.RawMessage) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			return map[string]json.RawMessage{}
		}
	}
	return m
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Price is what a model costs, in any currency, per million tokens.
type Price struct {
	Input  float64
	Output float64
}

// Prices is a price table by model name. A model without an entry of its
// own takes the entry of the longest name it begins with, so
// "gpt-4o-2024-08-06" is priced as "gpt-4o".
type Prices map[string]Price

// Lookup returns the price of model.
func (p Prices) Lookup(model string) (Price, bool) {
	if pr, ok := p[model]; ok {
		return pr, true
	}
	best, found := "", false
	for name := range p {
		if name != "" && strings.HasPrefix(model, name) && len(name) > len(best) {
			best, found = name, true
		}
	}
	return p[best], found
}

// CostEvent prices usage of model as an LLMCostEvent, and false when the
// table has no price for it.
func (p Prices) CostEvent(model string, u Usage) (*event.LLMCostEvent, bool) {
	pr, ok := p.Lookup(model)
	if !ok {
		return nil, false
	}
	ev := &event.LLMCostEvent{LLMName: model}
	ev.PromptTokenCount, ev.CompletionTokenCount = int64(u.InputTokens), int64(u.OutputTokens)
	ev.PromptTokensCosts = float64(u.InputTokens) * pr.Input / 1e6
	ev.CompletionTokensCosts = float64(u.OutputTokens) * pr.Output / 1e6
	return ev, true
}
