package llm

import (
	"context"
	"encoding/json"
)

// Role says who wrote a message.
type Role string

// Roles of a conversation. Tool results travel in RoleTool messages;
// providers that put them in user turns (Anthropic, Gemini) translate.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// BlockKind names the kind of a content block.
type BlockKind string

// Kinds of content blocks.
const (
	BlockText       BlockKind = "text"
	BlockImage      BlockKind = "image"
	BlockDocument   BlockKind = "document"
	BlockToolUse    BlockKind = "tool_use"
	BlockToolResult BlockKind = "tool_result"
	BlockThinking   BlockKind = "thinking"
)

// Block is one piece of a message's content. Kind says which fields
// are meaningful.
type Block struct {
	Kind BlockKind

	// Text is the text of a text, thinking or tool-result block.
	Text string
	// Signature is the provider's opaque proof of a thinking block,
	// sent back unchanged on the next turn.
	Signature string

	// Image and document: either URL or Data with MediaType (a
	// document's "application/pdf", "text/plain"…).
	URL       string
	MediaType string
	Data      []byte
	// Title is a document's title or file name.
	Title string

	// ToolUseID ties a tool use to its result.
	ToolUseID string
	// ToolName is the tool a tool-use block calls.
	ToolName string
	// Input is the JSON object of a tool use's arguments.
	Input json.RawMessage
	// IsError marks a tool result that reports a failure.
	IsError bool
}

// Text returns a text block.
func Text(s string) Block { return Block{Kind: BlockText, Text: s} }

// ToolUse returns a tool-use block.
func ToolUse(id, name string, input json.RawMessage) Block {
	return Block{Kind: BlockToolUse, ToolUseID: id, ToolName: name, Input: input}
}

// ToolResult returns a tool-result block.
func ToolResult(id, content string, isError bool) Block {
	return Block{Kind: BlockToolResult, ToolUseID: id, Text: content, IsError: isError}
}

// Message is one turn of a conversation.
type Message struct {
	Role    Role
	Content []Block
}

// Text returns the concatenated text blocks of m.
func (m Message) Text() string {
	var n int
	for _, b := range m.Content {
		if b.Kind == BlockText {
			n += len(b.Text)
		}
	}
	buf := make([]byte, 0, n)
	for _, b := range m.Content {
		if b.Kind == BlockText {
			buf = append(buf, b.Text...)
		}
	}
	return string(buf)
}

// ToolUses returns the tool-use blocks of m, in order.
func (m Message) ToolUses() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Kind == BlockToolUse {
			out = append(out, b)
		}
	}
	return out
}

// UserText returns a user message holding text.
func UserText(s string) Message { return Message{Role: RoleUser, Content: []Block{Text(s)}} }

// AssistantText returns an assistant message holding text.
func AssistantText(s string) Message {
	return Message{Role: RoleAssistant, Content: []Block{Text(s)}}
}

// Tool declares a tool the model may call.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the tool's arguments (an object).
	Schema json.RawMessage
}

// ToolChoiceMode says whether and how the model must call tools.
type ToolChoiceMode string

// Tool choice modes. The zero value lets the provider decide (auto).
const (
	ToolChoiceAuto     ToolChoiceMode = ""
	ToolChoiceNone     ToolChoiceMode = "none"
	ToolChoiceRequired ToolChoiceMode = "required"
	ToolChoiceTool     ToolChoiceMode = "tool"
)

// ToolChoice constrains tool calls; Name is set with ToolChoiceTool.
type ToolChoice struct {
	Mode ToolChoiceMode
	Name string
}

// Thinking asks for extended reasoning where the provider has it.
type Thinking struct {
	// BudgetTokens bounds the reasoning tokens; 0 lets the provider choose.
	BudgetTokens int
}

// Request is one call to a model, the same for every provider.
type Request struct {
	// Model is the provider's model name, without the "provider:" prefix.
	Model    string
	System   string
	Messages []Message
	Tools    []Tool
	ToolChoice

	MaxTokens   int
	Temperature *float64
	TopP        *float64
	Stop        []string
	Thinking    *Thinking

	// ResponseSchema, when set, asks for an answer that is one JSON value
	// valid against its schema, through the provider's own feature for it.
	// GenerateObject sets it from a Go type and decodes the answer.
	ResponseSchema *ResponseSchema

	// Extra holds provider-specific request fields, merged into the
	// provider's request body as given: the escape hatch for what this
	// model does not cover.
	Extra map[string]any
}

// StopReason says why the model stopped.
type StopReason string

// Stop reasons, unified across providers.
const (
	StopEndTurn       StopReason = "end_turn"
	StopToolUse       StopReason = "tool_use"
	StopMaxTokens     StopReason = "max_tokens"
	StopSequence      StopReason = "stop_sequence"
	StopRefusal       StopReason = "refusal"
	StopContentFilter StopReason = "content_filter"
)

// Usage counts tokens. A stream may report it in parts; later reports
// replace the non-zero fields of earlier ones.
type Usage struct {
	InputTokens      int
	OutputTokens     int
	CacheReadTokens  int
	CacheWriteTokens int
	ReasoningTokens  int
}

// Total returns input plus output tokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// Response is a finished call: the assistant's message, why it stopped,
// and what it cost.
type Response struct {
	Model      string
	Message    Message
	StopReason StopReason
	Usage      Usage
}

// EventKind names a stream event.
type EventKind uint8

// Kinds of stream events.
const (
	// EventText carries a text delta in Text.
	EventText EventKind = iota + 1
	// EventToolUseStart opens a tool use: ToolUseID and ToolName.
	EventToolUseStart
	// EventToolUseDelta carries a fragment of the arguments' JSON in Text.
	EventToolUseDelta
	// EventToolUseEnd closes the tool use ToolUseID.
	EventToolUseEnd
	// EventThinking carries a reasoning delta in Text, or a Signature.
	EventThinking
	// EventUsage reports token counts in Usage.
	EventUsage
	// EventStop ends the message with StopReason.
	EventStop
	// EventBlock carries a whole block in Block: an image or document
	// the model made, which arrives in one piece.
	EventBlock
)

// StreamEvent is one event of a model's stream, the same for every
// provider.
type StreamEvent struct {
	Kind EventKind
	// Index is the content block the event belongs to, in the order the
	// blocks appear in the assembled message.
	Index      int
	Text       string
	Signature  string
	ToolUseID  string
	ToolName   string
	Usage      Usage
	StopReason StopReason
	// Block is the block of an EventBlock.
	Block *Block
	// Model is set on the first event when the provider names the model
	// that answers.
	Model string
}

// Stream is a model's answer as it arrives. Next blocks until the next
// event, the end, or an error; Err tells which after Next returns
// false. Close releases the connection and may be called at any time.
type Stream interface {
	Next() bool
	Event() StreamEvent
	Err() error
	Close() error
}

// Provider talks to one model service. Stream starts a call; cancelling
// ctx ends it and closes the connection.
type Provider interface {
	// Name is the registry name ("openai", "anthropic", …).
	Name() string
	Stream(ctx context.Context, req *Request) (Stream, error)
}

// Generator is a Provider that can also answer without streaming.
type Generator interface {
	Generate(ctx context.Context, req *Request) (*Response, error)
}

// Callable is a tool the tool loop can run: its declaration for the
// model and the call itself. Call gets the model's JSON arguments and
// returns the result the model reads; an error goes back to the model
// as a failed tool result, not to the run.
type Callable interface {
	Definition() Tool
	Call(ctx context.Context, input json.RawMessage) (string, error)
}
