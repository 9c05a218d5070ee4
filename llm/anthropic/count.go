package anthropic

import (
	"context"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/saap-go/agent/llm"
)

// CountTokens asks Anthropic's token counting endpoint how many input
// tokens req costs: the system prompt, the messages and the tools, as the
// model will count them. It makes no answer and is free of charge, but it
// is a network call: a caller fitting a history into a budget counts a
// whole candidate prompt at a time rather than each message.
func (p *Provider) CountTokens(ctx context.Context, req *llm.Request) (int, error) {
	params, err := p.params(req)
	if err != nil {
		return 0, err
	}
	cp := sdk.MessageCountTokensParams{
		Messages:     params.Messages,
		Model:        params.Model,
		Thinking:     params.Thinking,
		ToolChoice:   params.ToolChoice,
		OutputConfig: params.OutputConfig,
	}
	if len(params.System) > 0 {
		cp.System.OfTextBlockArray = params.System
	}
	for _, t := range params.Tools {
		cp.Tools = append(cp.Tools, sdk.MessageCountTokensToolUnionParam{OfTool: t.OfTool})
	}
	if len(cp.Messages) == 0 {
		// The endpoint wants at least one message; an empty turn costs
		// what its system prompt and tools cost.
		cp.Messages = []sdk.MessageParam{sdk.NewUserMessage(sdk.NewTextBlock(" "))}
	}
	res, err := p.client.Messages.CountTokens(ctx, cp)
	if err != nil {
		return 0, mapError(err, false)
	}
	if res == nil {
		return 0, fmt.Errorf("%s: count_tokens gave no answer", Name)
	}
	return int(res.InputTokens), nil
}
