package gemini

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/saap-go/agent/llm"
)

// CountTokens asks the Gemini API's countTokens method how many input
// tokens req costs. On Vertex AI the system instruction and the tools are
// counted where the model counts them; the Gemini Developer API takes
// neither in countTokens, so there the system instruction is counted as a
// first user turn (the same text, about the same tokens) and the tools'
// declarations are not counted. It is a network call: a caller fitting a
// history into a budget counts a whole candidate prompt at a time.
func (p *Provider) CountTokens(ctx context.Context, req *llm.Request) (int, error) {
	call, err := p.request(req)
	if err != nil {
		return 0, err
	}
	contents := call.Contents
	var cfg *genai.CountTokensConfig
	sys := call.Config.SystemInstruction
	if p.client.ClientConfig().Backend == genai.BackendVertexAI {
		cfg = &genai.CountTokensConfig{SystemInstruction: sys, Tools: call.Config.Tools}
	} else if sys != nil {
		contents = append([]*genai.Content{{Role: genai.RoleUser, Parts: sys.Parts}}, contents...)
	}
	if len(contents) == 0 {
		contents = []*genai.Content{{Role: genai.RoleUser, Parts: []*genai.Part{{Text: " "}}}}
	}
	res, err := p.client.Models.CountTokens(ctx, call.Model, contents, cfg)
	if err != nil {
		return 0, mapError(err, false)
	}
	if res == nil {
		return 0, fmt.Errorf("%s: countTokens gave no answer", Name)
	}
	return int(res.TotalTokens), nil
}
