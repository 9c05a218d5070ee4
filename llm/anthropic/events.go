package anthropic

import (
	"encoding/json"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/saap-go/agent/llm"
)

// translator turns the messages stream (message_start,
// content_block_start|delta|stop, message_delta, message_stop) into llm
// stream events. Blocks the model does not cover (server tools,
// redacted thinking) are skipped, so the API's block indexes are
// renumbered densely. The stop reason of message_delta is held until
// message_stop: a stream cut before it is truncated.
type translator struct {
	index      []int // the API's block index → ours, -1 for a skipped block
	toolBlocks []int // our indexes of tool-use blocks
	next       int
	stop       llm.StopReason
	model      string
	closed     bool
}

// event appends the events of one stream event to out.
func (t *translator) event(e *sdk.MessageStreamEventUnion, out []llm.StreamEvent) []llm.StreamEvent {
	switch e.Type {
	case "message_start":
		t.model = string(e.Message.Model)
		out = append(out, llm.StreamEvent{Kind: llm.EventUsage, Model: t.model, Usage: usage(&e.Message.Usage)})
	case "content_block_start":
		cb := &e.ContentBlock
		idx := -1
		switch cb.Type {
		case "text", "thinking", "tool_use":
			idx = t.next
			t.next++
		}
		for int64(len(t.index)) <= e.Index {
			t.index = append(t.index, -1)
		}
		t.index[e.Index] = idx
		switch cb.Type {
		case "text":
			if cb.Text != "" {
				out = append(out, llm.StreamEvent{Kind: llm.EventText, Index: idx, Text: cb.Text})
			}
		case "thinking":
			if cb.Thinking != "" || cb.Signature != "" {
				out = append(out, llm.StreamEvent{Kind: llm.EventThinking, Index: idx, Text: cb.Thinking, Signature: cb.Signature})
			}
		case "tool_use":
			t.toolBlocks = append(t.toolBlocks, idx)
			out = append(out, llm.StreamEvent{Kind: llm.EventToolUseStart, Index: idx, ToolUseID: cb.ID, ToolName: cb.Name})
		}
	case "content_block_delta":
		idx := t.lookup(e.Index)
		if idx < 0 {
			break
		}
		d := &e.Delta
		switch d.Type {
		case "text_delta":
			out = append(out, llm.StreamEvent{Kind: llm.EventText, Index: idx, Text: d.Text})
		case "thinking_delta":
			out = append(out, llm.StreamEvent{Kind: llm.EventThinking, Index: idx, Text: d.Thinking})
		case "signature_delta":
			out = append(out, llm.StreamEvent{Kind: llm.EventThinking, Index: idx, Signature: d.Signature})
		case "input_json_delta":
			if d.PartialJSON != "" {
				out = append(out, llm.StreamEvent{Kind: llm.EventToolUseDelta, Index: idx, Text: d.PartialJSON})
			}
		}
	case "content_block_stop":
		idx := t.lookup(e.Index)
		if idx >= 0 && t.isTool(idx) {
			out = append(out, llm.StreamEvent{Kind: llm.EventToolUseEnd, Index: idx})
		}
	case "message_delta":
		t.stop = stopReason(e.Delta.StopReason)
		out = append(out, llm.StreamEvent{Kind: llm.EventUsage, Usage: deltaUsage(&e.Usage)})
	case "message_stop":
		if !t.closed {
			t.closed = true
			out = append(out, llm.StreamEvent{Kind: llm.EventStop, StopReason: t.stop})
		}
	}
	// Other types (and "ping", which the SDK drops) carry nothing the
	// model needs.
	return out
}

func (t *translator) lookup(i int64) int {
	if i < 0 || i >= int64(len(t.index)) {
		return -1
	}
	return t.index[i]
}

// isTool reports whether our block idx is a tool use.
func (t *translator) isTool(idx int) bool {
	for _, k := range t.toolBlocks {
		if k == idx {
			return true
		}
	}
	return false
}

func stopReason(r sdk.StopReason) llm.StopReason {
	switch r {
	case "":
		return ""
	case sdk.StopReasonEndTurn:
		return llm.StopEndTurn
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return llm.StopMaxTokens
	case sdk.StopReasonStopSequence:
		return llm.StopSequence
	case sdk.StopReasonToolUse:
		return llm.StopToolUse
	case sdk.StopReasonRefusal:
		return llm.StopRefusal
	}
	return llm.StopReason(r)
}

func usage(u *sdk.Usage) llm.Usage {
	return llm.Usage{
		InputTokens:      int(u.InputTokens),
		OutputTokens:     int(u.OutputTokens),
		CacheReadTokens:  int(u.CacheReadInputTokens),
		CacheWriteTokens: int(u.CacheCreationInputTokens),
	}
}

func deltaUsage(u *sdk.MessageDeltaUsage) llm.Usage {
	return llm.Usage{
		InputTokens:      int(u.InputTokens),
		OutputTokens:     int(u.OutputTokens),
		CacheReadTokens:  int(u.CacheReadInputTokens),
		CacheWriteTokens: int(u.CacheCreationInputTokens),
	}
}

// FromMessage translates a non-streaming answer, keeping the blocks llm
// covers in their order.
func FromMessage(m *sdk.Message) *llm.Response {
	r := &llm.Response{
		Model:      string(m.Model),
		Message:    llm.Message{Role: llm.RoleAssistant},
		StopReason: stopReason(m.StopReason),
		Usage:      usage(&m.Usage),
	}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			r.Message.Content = append(r.Message.Content, llm.Text(b.Text))
		case "thinking":
			r.Message.Content = append(r.Message.Content, llm.Block{Kind: llm.BlockThinking, Text: b.Thinking, Signature: b.Signature})
		case "tool_use":
			in := b.Input
			if len(in) == 0 {
				in = json.RawMessage("{}")
			}
			r.Message.Content = append(r.Message.Content, llm.ToolUse(b.ID, b.Name, in))
		}
	}
	return r
}
