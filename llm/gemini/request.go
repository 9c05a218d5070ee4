package gemini

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/saap-go/agent/llm"
)

// madeUpID prefixes the ids given to function calls that came without
// one; such ids are not sent back.
const madeUpID = "gemini-call-"

// Call is one generateContent call in the SDK's terms.
type Call struct {
	Model    string
	Contents []*genai.Content
	Config   *genai.GenerateContentConfig
}

// NewCall translates req into the SDK's arguments. model is used when req
// names none. req.Extra is merged into the request body by the SDK
// (HTTPOptions.ExtraBody).
func NewCall(req *llm.Request, model string) (*Call, error) {
	c := &Call{Model: model, Config: &genai.GenerateContentConfig{}}
	if req.Model != "" {
		c.Model = req.Model
	}
	if c.Model == "" {
		return nil, fmt.Errorf("request names no model")
	}
	cfg := c.Config
	if req.System != "" {
		cfg.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: req.System}}}
	}
	names := map[string]string{} // tool-use id → function name, for the responses
	for i, m := range req.Messages {
		role, parts, err := content(m, names)
		if err != nil {
			return nil, fmt.Errorf("message %d (%s): %w", i, m.Role, err)
		}
		if len(parts) == 0 {
			continue
		}
		if n := len(c.Contents); n > 0 && c.Contents[n-1].Role == role {
			c.Contents[n-1].Parts = append(c.Contents[n-1].Parts, parts...)
			continue
		}
		c.Contents = append(c.Contents, &genai.Content{Role: role, Parts: parts})
	}
	if len(req.Tools) > 0 {
		t := &genai.Tool{}
		for _, tool := range req.Tools {
			schema, err := schemaValue(tool.Schema)
			if err != nil {
				return nil, fmt.Errorf("tool %q: %w", tool.Name, err)
			}
			t.FunctionDeclarations = append(t.FunctionDeclarations, &genai.FunctionDeclaration{
				Name: tool.Name, Description: tool.Description, ParametersJsonSchema: schema,
			})
		}
		cfg.Tools = []*genai.Tool{t}
	}
	switch req.ToolChoice.Mode {
	case llm.ToolChoiceAuto:
	case llm.ToolChoiceNone:
		cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeNone}}
	case llm.ToolChoiceRequired:
		cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAny}}
	case llm.ToolChoiceTool:
		if req.ToolChoice.Name == "" {
			return nil, fmt.Errorf("tool choice %q names no tool", req.ToolChoice.Mode)
		}
		cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{
			Mode: genai.FunctionCallingConfigModeAny, AllowedFunctionNames: []string{req.ToolChoice.Name},
		}}
	default:
		return nil, fmt.Errorf("unknown tool choice %q", req.ToolChoice.Mode)
	}
	if req.MaxTokens > 0 {
		cfg.MaxOutputTokens = int32(req.MaxTokens)
	}
	if req.Temperature != nil {
		v := float32(*req.Temperature)
		cfg.Temperature = &v
	}
	if req.TopP != nil {
		v := float32(*req.TopP)
		cfg.TopP = &v
	}
	cfg.StopSequences = req.Stop
	if req.Thinking != nil {
		cfg.ThinkingConfig = &genai.ThinkingConfig{IncludeThoughts: true}
		if req.Thinking.BudgetTokens > 0 {
			b := int32(req.Thinking.BudgetTokens)
			cfg.ThinkingConfig.ThinkingBudget = &b
		}
	}
	if rs := req.ResponseSchema; rs != nil {
		// responseJsonSchema takes JSON Schema as it is; responseSchema
		// would want it rewritten into the OpenAPI subset of genai.Schema.
		var schema map[string]any
		if err := json.Unmarshal(rs.Schema, &schema); err != nil {
			return nil, fmt.Errorf("response schema: not a JSON object: %w", err)
		}
		cfg.ResponseMIMEType, cfg.ResponseJsonSchema = "application/json", schema
	}
	if len(req.Extra) > 0 {
		cfg.HTTPOptions = &genai.HTTPOptions{ExtraBody: req.Extra}
	}
	return c, nil
}

func schemaValue(raw json.RawMessage) (any, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("schema is not a JSON object: %w", err)
	}
	return m, nil
}

// content translates one message into Gemini's role and parts; names
// learns the function names of tool uses, which responses must repeat.
func content(m llm.Message, names map[string]string) (string, []*genai.Part, error) {
	var parts []*genai.Part
	switch m.Role {
	case llm.RoleUser, llm.RoleTool:
		for _, b := range m.Content {
			switch b.Kind {
			case llm.BlockText:
				parts = append(parts, &genai.Part{Text: b.Text})
			case llm.BlockImage, llm.BlockDocument:
				if m.Role == llm.RoleTool {
					return "", nil, fmt.Errorf("a tool message holds an %s; only tool results belong there", b.Kind)
				}
				p, err := image(b)
				if err != nil {
					return "", nil, err
				}
				parts = append(parts, p)
			case llm.BlockToolResult:
				name, ok := names[b.ToolUseID]
				if !ok {
					return "", nil, fmt.Errorf("tool result %q answers no earlier tool use (Gemini needs the function's name)", b.ToolUseID)
				}
				resp := map[string]any{"output": b.Text}
				if b.IsError {
					resp = map[string]any{"error": b.Text}
				}
				fr := &genai.FunctionResponse{Name: name, Response: resp}
				if !strings.HasPrefix(b.ToolUseID, madeUpID) {
					fr.ID = b.ToolUseID
				}
				parts = append(parts, &genai.Part{FunctionResponse: fr})
			default:
				return "", nil, fmt.Errorf("a %s message cannot hold a %s block", m.Role, b.Kind)
			}
		}
		return genai.RoleUser, parts, nil
	case llm.RoleAssistant:
		var sig []byte // a signature waiting for the part it belongs to
		for _, b := range m.Content {
			var p *genai.Part
			switch b.Kind {
			case llm.BlockThinking:
				s := decodeSignature(b.Signature)
				if b.Text == "" {
					sig = s
					continue
				}
				p = &genai.Part{Text: b.Text, Thought: true, ThoughtSignature: s}
			case llm.BlockText:
				p = &genai.Part{Text: b.Text}
			case llm.BlockImage, llm.BlockDocument:
				// What the model made, sent back as it came.
				var err error
				if p, err = image(b); err != nil {
					return "", nil, err
				}
			case llm.BlockToolUse:
				names[b.ToolUseID] = b.ToolName
				args := map[string]any{}
				if len(strings.TrimSpace(string(b.Input))) > 0 {
					if err := json.Unmarshal(b.Input, &args); err != nil {
						return "", nil, fmt.Errorf("tool use %q: input is not a JSON object: %w", b.ToolUseID, err)
					}
				}
				fc := &genai.FunctionCall{Name: b.ToolName, Args: args}
				if !strings.HasPrefix(b.ToolUseID, madeUpID) {
					fc.ID = b.ToolUseID
				}
				p = &genai.Part{FunctionCall: fc}
			default:
				return "", nil, fmt.Errorf("an assistant message cannot hold a %s block", b.Kind)
			}
			if sig != nil && p.ThoughtSignature == nil {
				p.ThoughtSignature, sig = sig, nil
			}
			parts = append(parts, p)
		}
		return genai.RoleModel, parts, nil
	}
	return "", nil, fmt.Errorf("unknown role %q", m.Role)
}

// decodeSignature returns the bytes of a Gemini thought signature; one
// that is not base64 was made by another provider and means nothing to
// Gemini, so it is left out.
func decodeSignature(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil
	}
	return b
}

// image is an image or document part: inline data, or a file by URI.
func image(b llm.Block) (*genai.Part, error) {
	if len(b.Data) > 0 {
		if b.MediaType == "" {
			return nil, fmt.Errorf("%s data without MediaType", b.Kind)
		}
		return &genai.Part{InlineData: &genai.Blob{MIMEType: b.MediaType, Data: b.Data}}, nil
	}
	if b.URL == "" {
		return nil, fmt.Errorf("%s block has neither URL nor Data with MediaType", b.Kind)
	}
	return &genai.Part{FileData: &genai.FileData{FileURI: b.URL, MIMEType: b.MediaType}}, nil
}
