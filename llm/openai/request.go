package openai

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/saap-go/agent/llm"
)

// NewParams translates req into the SDK's chat-completion parameters.
// model is used when req names none; legacyMaxTokens sends the limit as
// "max_tokens". req.Extra is merged into the request body last, so it
// can override any field.
func NewParams(req *llm.Request, model string, legacyMaxTokens bool) (oai.ChatCompletionNewParams, error) {
	var p oai.ChatCompletionNewParams
	p.Model = model
	if req.Model != "" {
		p.Model = req.Model
	}
	if p.Model == "" {
		return p, fmt.Errorf("request names no model")
	}
	if req.System != "" {
		p.Messages = append(p.Messages, oai.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		msgs, err := messages(m)
		if err != nil {
			return p, fmt.Errorf("message %d (%s): %w", i, m.Role, err)
		}
		p.Messages = append(p.Messages, msgs...)
	}
	for _, t := range req.Tools {
		schema, err := schemaMap(t.Schema)
		if err != nil {
			return p, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fd.Description = oai.String(t.Description)
		}
		p.Tools = append(p.Tools, oai.ChatCompletionFunctionTool(fd))
	}
	switch req.ToolChoice.Mode {
	case llm.ToolChoiceAuto:
	case llm.ToolChoiceNone:
		p.ToolChoice.OfAuto = oai.String("none")
	case llm.ToolChoiceRequired:
		p.ToolChoice.OfAuto = oai.String("required")
	case llm.ToolChoiceTool:
		if req.ToolChoice.Name == "" {
			return p, fmt.Errorf("tool choice %q names no tool", req.ToolChoice.Mode)
		}
		p.ToolChoice = oai.ToolChoiceOptionFunctionToolChoice(oai.ChatCompletionNamedToolChoiceFunctionParam{Name: req.ToolChoice.Name})
	default:
		return p, fmt.Errorf("unknown tool choice %q", req.ToolChoice.Mode)
	}
	if req.MaxTokens > 0 {
		if legacyMaxTokens {
			p.MaxTokens = oai.Int(int64(req.MaxTokens))
		} else {
			p.MaxCompletionTokens = oai.Int(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil {
		p.Temperature = oai.Float(*req.Temperature)
	}
	if req.TopP != nil {
		p.TopP = oai.Float(*req.TopP)
	}
	if len(req.Stop) > 0 {
		p.Stop.OfStringArray = req.Stop
	}
	if req.Thinking != nil {
		p.ReasoningEffort = effort(req.Thinking.BudgetTokens)
	}
	if rs := req.ResponseSchema; rs != nil {
		schema, err := schemaMap(rs.Schema)
		if err != nil {
			return p, fmt.Errorf("response schema: %w", err)
		}
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: cmpOr(rs.Name, "response"), Schema: schema}
		if rs.Strict {
			js.Strict = oai.Bool(true)
		}
		if rs.Description != "" {
			js.Description = oai.String(rs.Description)
		}
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}
	}
	if len(req.Extra) > 0 {
		p.SetExtraFields(req.Extra)
	}
	return p, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// effort maps a token budget to chat completions' coarse reasoning effort.
func effort(budget int) shared.ReasoningEffort {
	switch {
	case budget == 0:
		return shared.ReasoningEffortMedium
	case budget <= 2048:
		return shared.ReasoningEffortLow
	case budget <= 16384:
		return shared.ReasoningEffortMedium
	}
	return shared.ReasoningEffortHigh
}

func schemaMap(raw json.RawMessage) (shared.FunctionParameters, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return shared.FunctionParameters{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("schema is not a JSON object: %w", err)
	}
	return m, nil
}

// messages translates one message; a tool message becomes one "tool"
// message per result, as chat completions wants.
func messages(m llm.Message) ([]oai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case llm.RoleUser:
		return userMessages(m)
	case llm.RoleAssistant:
		a, err := assistantMessage(m)
		if err != nil {
			return nil, err
		}
		return []oai.ChatCompletionMessageParamUnion{{OfAssistant: a}}, nil
	case llm.RoleTool:
		var out []oai.ChatCompletionMessageParamUnion
		for _, b := range m.Content {
			if b.Kind != llm.BlockToolResult {
				return nil, fmt.Errorf("a tool message holds a %s block; only tool results belong there", b.Kind)
			}
			out = append(out, oai.ToolMessage(b.Text, b.ToolUseID))
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown role %q", m.Role)
}

func userMessages(m llm.Message) ([]oai.ChatCompletionMessageParamUnion, error) {
	var (
		out      []oai.ChatCompletionMessageParamUnion
		parts    []oai.ChatCompletionContentPartUnionParam
		onlyText = true
	)
	for _, b := range m.Content {
		switch b.Kind {
		case llm.BlockText:
			parts = append(parts, oai.TextContentPart(b.Text))
		case llm.BlockImage:
			u, err := imageURL(b)
			if err != nil {
				return nil, err
			}
			onlyText = false
			parts = append(parts, oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: u}))
		case llm.BlockDocument:
			f, err := file(b)
			if err != nil {
				return nil, err
			}
			onlyText = false
			parts = append(parts, oai.FileContentPart(f))
		case llm.BlockToolResult:
			// Results written into a user turn still go as tool messages.
			out = append(out, oai.ToolMessage(b.Text, b.ToolUseID))
		default:
			return nil, fmt.Errorf("a user message cannot hold a %s block", b.Kind)
		}
	}
	switch {
	case len(parts) == 0:
	case len(parts) == 1 && onlyText:
		out = append(out, oai.UserMessage(*parts[0].GetText()))
	default:
		out = append(out, oai.UserMessage(parts))
	}
	return out, nil
}

func imageURL(b llm.Block) (string, error) {
	if b.URL != "" {
		return b.URL, nil
	}
	if len(b.Data) == 0 || b.MediaType == "" {
		return "", fmt.Errorf("image block has neither URL nor Data with MediaType")
	}
	return "data:" + b.MediaType + ";base64," + base64.StdEncoding.EncodeToString(b.Data), nil
}

// file is a document as chat completions takes it: inline, as a data
// URL with a file name.
func file(b llm.Block) (oai.ChatCompletionContentPartFileFileParam, error) {
	if len(b.Data) == 0 || b.MediaType == "" {
		return oai.ChatCompletionContentPartFileFileParam{}, fmt.Errorf("document block without Data and MediaType (chat completions takes no document URL)")
	}
	return oai.ChatCompletionContentPartFileFileParam{
		FileData: oai.String("data:" + b.MediaType + ";base64," + base64.StdEncoding.EncodeToString(b.Data)),
		Filename: oai.String(cmpOr(b.Title, "document")),
	}, nil
}

func assistantMessage(m llm.Message) (*oai.ChatCompletionAssistantMessageParam, error) {
	a := &oai.ChatCompletionAssistantMessageParam{}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Kind {
		case llm.BlockText:
			text.WriteString(b.Text)
		case llm.BlockThinking:
			// Chat completions has no field for earlier reasoning.
		case llm.BlockToolUse:
			args := string(b.Input)
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
					ID:       b.ToolUseID,
					Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: b.ToolName, Arguments: args},
				},
			})
		default:
			return nil, fmt.Errorf("an assistant message cannot hold a %s block", b.Kind)
		}
	}
	if text.Len() > 0 || len(a.ToolCalls) == 0 {
		a.Content.OfString = oai.String(text.String())
	}
	return a, nil
}
