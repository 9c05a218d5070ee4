package openai

import (
	"encoding/json"
	"fmt"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/saap-go/agent/llm"
)

// translator turns chat-completion chunks into llm stream events. Chat
// completions streams flat deltas: text, reasoning and tool-call
// fragments keyed by the call's index, a finish reason, and (asked for)
// a last chunk with usage only. Blocks are numbered in the order they
// first appear; the stop is held back until usage has arrived or the
// stream ends, so it is always the last event.
type translator struct {
	next     int // index of the next block to open
	open     int // index of the block opened last, -1 for none
	openKind llm.BlockKind
	tools    map[int64]int // chat completions' tool index → block index
	toolIdx  []int         // block indexes of the tool uses, in order
	model    string
	refused  bool
	finish   string
	stopped  bool
}

func newTranslator() *translator { return &translator{open: -1} }

// chunk appends the events of c to out.
func (t *translator) chunk(c *oai.ChatCompletionChunk, out []llm.StreamEvent) []llm.StreamEvent {
	first := t.model == "" && c.Model != ""
	if first {
		t.model = c.Model
	}
	start := len(out)
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // only the first choice is asked for
		}
		d := &ch.Delta
		if r := reasoning(d.JSON.ExtraFields); r != "" {
			out = append(out, llm.StreamEvent{Kind: llm.EventThinking, Index: t.block(llm.BlockThinking), Text: r})
		}
		if d.Content != "" {
			out = append(out, llm.StreamEvent{Kind: llm.EventText, Index: t.block(llm.BlockText), Text: d.Content})
		}
		if d.Refusal != "" {
			t.refused = true
			out = append(out, llm.StreamEvent{Kind: llm.EventText, Index: t.block(llm.BlockText), Text: d.Refusal})
		}
		for j := range d.ToolCalls {
			tc := &d.ToolCalls[j]
			idx, ok := t.tools[tc.Index]
			if !ok {
				if t.tools == nil {
					t.tools = map[int64]int{}
				}
				idx = t.next
				t.next++
				t.open, t.openKind = idx, llm.BlockToolUse
				t.tools[tc.Index] = idx
				t.toolIdx = append(t.toolIdx, idx)
				out = append(out, llm.StreamEvent{Kind: llm.EventToolUseStart, Index: idx, ToolUseID: tc.ID, ToolName: tc.Function.Name})
			}
			if tc.Function.Arguments != "" {
				out = append(out, llm.StreamEvent{Kind: llm.EventToolUseDelta, Index: idx, Text: tc.Function.Arguments})
			}
		}
		if ch.FinishReason != "" {
			t.finish = ch.FinishReason
		}
	}
	if c.JSON.Usage.Valid() && c.Usage.JSON.PromptTokens.Valid() {
		out = append(out, llm.StreamEvent{Kind: llm.EventUsage, Usage: usage(&c.Usage)})
		out = t.stop(out)
	}
	if first {
		if len(out) == start {
			// The model's name rides on the first event; a chunk
			// with nothing else (the role-only opener) still says it.
			out = append(out, llm.StreamEvent{Kind: llm.EventUsage})
		}
		out[start].Model = c.Model
	}
	return out
}

// end appends what the end of the stream completes: the held stop when a
// finish reason arrived without usage.
func (t *translator) end(out []llm.StreamEvent) []llm.StreamEvent {
	return t.stop(out)
}

func (t *translator) stop(out []llm.StreamEvent) []llm.StreamEvent {
	if t.stopped || t.finish == "" {
		return out
	}
	t.stopped = true
	for _, idx := range t.toolIdx {
		out = append(out, llm.StreamEvent{Kind: llm.EventToolUseEnd, Index: idx})
	}
	return append(out, llm.StreamEvent{Kind: llm.EventStop, StopReason: stopReason(t.finish, t.refused)})
}

// block returns the index of the open block of kind, opening a new one
// when another kind came in between.
func (t *translator) block(kind llm.BlockKind) int {
	if t.open >= 0 && t.openKind == kind {
		return t.open
	}
	t.open, t.openKind = t.next, kind
	t.next++
	return t.open
}

// reasoning returns the reasoning text OpenAI-compatible servers add to
// a delta or message ("reasoning_content" in vLLM, Ollama, LM Studio and
// DeepSeek; "reasoning" in some proxies).
func reasoning(extra map[string]respjson.Field) string {
	for _, k := range [...]string{"reasoning_content", "reasoning"} {
		f, ok := extra[k]
		if !ok || f.Raw() == "" {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

func stopReason(finish string, refused bool) llm.StopReason {
	if refused {
		return llm.StopRefusal
	}
	switch finish {
	case "stop":
		return llm.StopEndTurn
	case "length":
		return llm.StopMaxTokens
	case "tool_calls", "function_call":
		return llm.StopToolUse
	case "content_filter":
		return llm.StopContentFilter
	}
	return llm.StopReason(finish)
}

func usage(u *oai.CompletionUsage) llm.Usage {
	return llm.Usage{
		InputTokens:     int(u.PromptTokens),
		OutputTokens:    int(u.CompletionTokens),
		CacheReadTokens: int(u.PromptTokensDetails.CachedTokens),
		ReasoningTokens: int(u.CompletionTokensDetails.ReasoningTokens),
	}
}

// FromCompletion translates a non-streaming answer. Its blocks come in
// the order a stream of the same answer opens them: reasoning, text (or
// the refusal), tool calls.
func FromCompletion(c *oai.ChatCompletion) (*llm.Response, error) {
	if len(c.Choices) == 0 {
		return nil, fmt.Errorf("openai: answer has no choices")
	}
	ch := &c.Choices[0]
	m := &ch.Message
	r := &llm.Response{Model: c.Model, Message: llm.Message{Role: llm.RoleAssistant}, Usage: usage(&c.Usage)}
	if s := reasoning(m.JSON.ExtraFields); s != "" {
		r.Message.Content = append(r.Message.Content, llm.Block{Kind: llm.BlockThinking, Text: s})
	}
	switch {
	case m.Refusal != "":
		r.Message.Content = append(r.Message.Content, llm.Text(m.Refusal))
	case m.Content != "":
		r.Message.Content = append(r.Message.Content, llm.Text(m.Content))
	}
	for _, tc := range m.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		args := json.RawMessage(tc.Function.Arguments)
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		r.Message.Content = append(r.Message.Content, llm.ToolUse(tc.ID, tc.Function.Name, args))
	}
	r.StopReason = stopReason(ch.FinishReason, m.Refusal != "")
	return r, nil
}
