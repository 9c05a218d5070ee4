package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/saap-go/agent/llm"
)

// minThinkingBudget is the smallest thinking budget the API accepts.
const minThinkingBudget = 1024

// NewParams translates req into the SDK's message parameters. model is
// used when req names none. Temperature and top_p, which the SDK's
// parameters do not carry, and req.Extra are merged into the body; Extra
// last, so it can override any field.
func NewParams(req *llm.Request, model string) (sdk.MessageNewParams, error) {
	var p sdk.MessageNewParams
	p.Model = sdk.Model(model)
	if req.Model != "" {
		p.Model = sdk.Model(req.Model)
	}
	if p.Model == "" {
		return p, fmt.Errorf("request names no model")
	}
	p.MaxTokens = DefaultMaxTokens
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	if req.Thinking != nil {
		budget := int64(max(req.Thinking.BudgetTokens, minThinkingBudget))
		p.Thinking = sdk.ThinkingConfigParamOfEnabled(budget)
		if p.MaxTokens <= budget {
			// The budget counts against max_tokens; leave room to answer.
			p.MaxTokens = budget + DefaultMaxTokens
		}
	}
	if req.System != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	for i, m := range req.Messages {
		user, blocks, err := message(m)
		if err != nil {
			return p, fmt.Errorf("message %d (%s): %w", i, m.Role, err)
		}
		if len(blocks) == 0 {
			continue
		}
		// Consecutive turns of one role (a tool turn after a user
		// turn, say) become one: the API wants them alternating.
		if n := len(p.Messages); n > 0 {
			last := &p.Messages[n-1]
			if user && last.OfUser != nil {
				last.OfUser.Content = append(last.OfUser.Content, blocks...)
				continue
			}
			if !user && last.OfAssistant != nil {
				last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
				continue
			}
		}
		if user {
			p.Messages = append(p.Messages, sdk.NewUserMessage(blocks...))
		} else {
			p.Messages = append(p.Messages, sdk.NewAssistantMessage(blocks...))
		}
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Schema)
		if err != nil {
			return p, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		tp := &sdk.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = sdk.String(t.Description)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	switch req.ToolChoice.Mode {
	case llm.ToolChoiceAuto:
	case llm.ToolChoiceNone:
		p.ToolChoice.OfNone = &sdk.ToolChoiceNoneParam{}
	case llm.ToolChoiceRequired:
		p.ToolChoice.OfAny = &sdk.ToolChoiceAnyParam{}
	case llm.ToolChoiceTool:
		if req.ToolChoice.Name == "" {
			return p, fmt.Errorf("tool choice %q names no tool", req.ToolChoice.Mode)
		}
		p.ToolChoice = sdk.ToolChoiceParamOfTool(req.ToolChoice.Name)
	default:
		return p, fmt.Errorf("unknown tool choice %q", req.ToolChoice.Mode)
	}
	p.StopSequences = req.Stop
	if rs := req.ResponseSchema; rs != nil {
		var schema map[string]any
		if err := json.Unmarshal(rs.Schema, &schema); err != nil {
			return p, fmt.Errorf("response schema: not a JSON object: %w", err)
		}
		p.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: schema}
	}
	extra := map[string]any{}
	if req.Temperature != nil {
		extra["temperature"] = *req.Temperature
	}
	if req.TopP != nil {
		extra["top_p"] = *req.TopP
	}
	for k, v := range req.Extra {
		extra[k] = v
	}
	if len(extra) > 0 {
		p.SetExtraFields(extra)
	}
	return p, nil
}

func inputSchema(raw json.RawMessage) (sdk.ToolInputSchemaParam, error) {
	var s sdk.ToolInputSchemaParam
	if len(strings.TrimSpace(string(raw))) == 0 {
		s.Properties = map[string]any{}
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, fmt.Errorf("schema is not a JSON object: %w", err)
	}
	if t, ok := m["type"]; ok && t != "object" {
		return s, fmt.Errorf("schema type is %v; tool arguments are an object", t)
	}
	delete(m, "type")
	if props, ok := m["properties"]; ok {
		s.Properties = props
		delete(m, "properties")
	}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
		delete(m, "required")
	}
	if len(m) > 0 {
		s.ExtraFields = m
	}
	return s, nil
}

// message translates one message and says whether it is a user turn.
func message(m llm.Message) (bool, []sdk.ContentBlockParamUnion, error) {
	var blocks []sdk.ContentBlockParamUnion
	switch m.Role {
	case llm.RoleUser, llm.RoleTool:
		for _, b := range m.Content {
			switch b.Kind {
			case llm.BlockText:
				blocks = append(blocks, sdk.NewTextBlock(b.Text))
			case llm.BlockImage:
				if m.Role == llm.RoleTool {
					return false, nil, fmt.Errorf("a tool message holds an image; only tool results belong there")
				}
				ib, err := image(b)
				if err != nil {
					return false, nil, err
				}
				blocks = append(blocks, ib)
			case llm.BlockDocument:
				if m.Role == llm.RoleTool {
					return false, nil, fmt.Errorf("a tool message holds a document; only tool results belong there")
				}
				db, err := document(b)
				if err != nil {
					return false, nil, err
				}
				blocks = append(blocks, db)
			case llm.BlockToolResult:
				tr := &sdk.ToolResultBlockParam{
					ToolUseID: b.ToolUseID,
					Content:   []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: b.Text}}},
				}
				if b.IsError {
					tr.IsError = sdk.Bool(true)
				}
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: tr})
			default:
				return false, nil, fmt.Errorf("a %s message cannot hold a %s block", m.Role, b.Kind)
			}
		}
		return true, blocks, nil
	case llm.RoleAssistant:
		for _, b := range m.Content {
			switch b.Kind {
			case llm.BlockText:
				if b.Text != "" {
					blocks = append(blocks, sdk.NewTextBlock(b.Text))
				}
			case llm.BlockThinking:
				if b.Signature != "" {
					blocks = append(blocks, sdk.NewThinkingBlock(b.Signature, b.Text))
				}
			case llm.BlockToolUse:
				in := b.Input
				if len(strings.TrimSpace(string(in))) == 0 {
					in = json.RawMessage("{}")
				}
				if !json.Valid(in) {
					return false, nil, fmt.Errorf("tool use %q: input is not JSON", b.ToolUseID)
				}
				blocks = append(blocks, sdk.NewToolUseBlock(b.ToolUseID, in, b.ToolName))
			default:
				return false, nil, fmt.Errorf("an assistant message cannot hold a %s block", b.Kind)
			}
		}
		return false, blocks, nil
	}
	return false, nil, fmt.Errorf("unknown role %q", m.Role)
}

func image(b llm.Block) (sdk.ContentBlockParamUnion, error) {
	if b.URL != "" {
		return sdk.NewImageBlock(sdk.URLImageSourceParam{URL: b.URL}), nil
	}
	if len(b.Data) == 0 || b.MediaType == "" {
		return sdk.ContentBlockParamUnion{}, fmt.Errorf("image block has neither URL nor Data with MediaType")
	}
	return sdk.NewImageBlockBase64(b.MediaType, base64.StdEncoding.EncodeToString(b.Data)), nil
}

// document is a document block: a PDF inline or by URL, or plain text.
func document(b llm.Block) (sdk.ContentBlockParamUnion, error) {
	var u sdk.ContentBlockParamUnion
	switch {
	case b.URL != "":
		u = sdk.NewDocumentBlock(sdk.URLPDFSourceParam{URL: b.URL})
	case len(b.Data) == 0:
		return u, fmt.Errorf("document block has neither URL nor Data")
	case b.MediaType == "application/pdf":
		u = sdk.NewDocumentBlock(sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(b.Data)})
	case strings.HasPrefix(b.MediaType, "text/"):
		u = sdk.NewDocumentBlock(sdk.PlainTextSourceParam{Data: string(b.Data)})
	default:
		return u, fmt.Errorf("document of type %q: Anthropic takes PDF and plain text", b.MediaType)
	}
	if b.Title != "" {
		u.OfDocument.Title = sdk.String(b.Title)
	}
	return u, nil
}
