package event

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Semantic events: data only. Their OpenInference
// attributes belong to package semantic.

// LLMEvent records one interaction with a language model.
type LLMEvent struct {
	SemanticEvent
	InputMessages           []Message                    `json:"input_messages"`
	OutputMessages          []Message                    `json:"output_messages"`
	InvocationParameters    map[string]json.RawMessage   `json:"invocation_parameters"`
	ChatModelName           *string                      `json:"chat_model_name"`
	Provider                *string                      `json:"provider"`
	System                  *string                      `json:"system"`
	PromptTemplate          *string                      `json:"prompt_template"`
	PromptTemplateVariables map[string]string            `json:"prompt_template_variables"`
	PromptTemplateVersion   *string                      `json:"prompt_template_version"`
	TokenCountPrompt        *int64                       `json:"token_count_prompt"`
	TokenCountCompletion    *int64                       `json:"token_count_completion"`
	TokenCountTotal         *int64                       `json:"token_count_total"`
	Tools                   []map[string]json.RawMessage `json:"tools"`
}

// LLMStopEvent ends a run with an LLM interaction (LLMEvent and StopEvent).
type LLMStopEvent struct{ LLMEvent }

// Refusal reasons of RefusalStopEvent.
const (
	RefusalCondensationEmpty = "condensation_empty"
	RefusalInputTooLarge     = "input_too_large"
	RefusalOutOfScope        = "out_of_scope"
)

// RefusalStopEvent ends a run whose turn the assistant refused.
type RefusalStopEvent struct {
	LLMStopEvent
	Reason string `json:"reason" event:"required,oneof=condensation_empty|input_too_large|out_of_scope"`
}

// RetrieverEvent records retrieved nodes.
type RetrieverEvent struct {
	SemanticEvent
	Nodes []IngestedNode `json:"nodes"`
}

// RerankerEvent records a reranking.
type RerankerEvent struct {
	SemanticEvent
	InputNodes      []IngestedNode `json:"input_nodes"`
	OutputNodes     []IngestedNode `json:"output_nodes"`
	Query           *string        `json:"query"`
	RerankModelName *string        `json:"rerank_model_name"`
	TopN            *int64         `json:"top_n"`
	Reranked        *bool          `json:"reranked"`
}

// Embedding is one embedded text.
type Embedding struct {
	Text   *string   `json:"text"`
	Vector []float64 `json:"vector"`
}

// EmbeddingEvent records an embedding call.
type EmbeddingEvent struct {
	SemanticEvent
	Text               *string     `json:"text"`
	EmbeddingModelName *string     `json:"embedding_model_name"`
	Embeddings         []Embedding `json:"embeddings"`
}

// ToolEvent records a tool call.
type ToolEvent struct {
	SemanticEvent
	ToolCallID  *string                    `json:"tool_call_id"`
	Name        *string                    `json:"name"`
	Description *string                    `json:"description"`
	JSONSchema  map[string]json.RawMessage `json:"json_schema"`
	Parameters  map[string]json.RawMessage `json:"parameters"`
}

// ChainEvent records a chain of actions.
type ChainEvent struct {
	SemanticEvent
	Metadata map[string]json.RawMessage `json:"metadata"`
}

// AgentEvent records an agent's activity.
type AgentEvent struct{ SemanticEvent }

// GuardEvent is the base of guard decisions.
type GuardEvent struct{ SemanticEvent }

// GuardAcceptEvent records that a guard let a request pass.
type GuardAcceptEvent struct {
	GuardEvent
	Reason string `json:"reason" event:"required"`
}

// AgentSuitabilityAcceptEvent: the agent suits the request.
type AgentSuitabilityAcceptEvent struct{ GuardAcceptEvent }

// ContextSufficientAcceptEvent: the context suffices to answer.
type ContextSufficientAcceptEvent struct{ GuardAcceptEvent }

// FewShotAcceptEvent: the request matches the few-shot examples.
type FewShotAcceptEvent struct{ GuardAcceptEvent }

// SensitiveInfoAcceptEvent: the answer holds no sensitive information.
type SensitiveInfoAcceptEvent struct{ GuardAcceptEvent }

// GuardRejectionEvent records that a guard rejected a request.
type GuardRejectionEvent struct {
	GuardEvent
	Reason string `json:"reason" event:"required"`
}

// AgentSuitabilityRejectEvent: the agent does not suit the request.
type AgentSuitabilityRejectEvent struct{ GuardRejectionEvent }

// ContextInsufficientRejectEvent: more context is needed.
type ContextInsufficientRejectEvent struct{ GuardRejectionEvent }

// ExpertRejectEvent: the user declined escalation to an expert.
type ExpertRejectEvent struct{ GuardRejectionEvent }

// FewShotRejectEvent: the request does not match the few-shot examples.
type FewShotRejectEvent struct{ GuardRejectionEvent }

// SensitiveInfoRejectEvent: sensitive information was removed from the answer.
type SensitiveInfoRejectEvent struct {
	GuardRejectionEvent
	CleanedAnswer string `json:"cleaned_answer" event:"required"`
}

// Message is a message of an LLMEvent. Its computed content,
// the concatenated text contents, is written and ignored when read.
type Message struct {
	Role                      string                       `json:"role" event:"required"`
	Name                      *string                      `json:"name"`
	ToolCalls                 []map[string]json.RawMessage `json:"tool_calls"`
	FunctionCallName          *string                      `json:"function_call_name"`
	FunctionCallArgumentsJSON map[string]json.RawMessage   `json:"function_call_arguments_json"`
	ToolCallID                *string                      `json:"tool_call_id"`
	Contents                  []MessageContent             `json:"contents"`
}

// MessageFromString is the reference's Message.from_string: one text content.
func MessageFromString(role, text string) Message {
	return Message{Role: role, Contents: []MessageContent{{Type: "text", Text: text}}}
}

// Content returns the concatenated text of the text contents.
func (m *Message) Content() string {
	var sb strings.Builder
	for _, c := range m.Contents {
		if c.Type == "text" {
			sb.WriteString(c.Text)
		}
	}
	return sb.String()
}

var messagePlan = mustPlan[Message]()

func mustPlan[T any]() *structPlan {
	p, err := planFor(reflectType[T]())
	if err != nil {
		panic(err)
	}
	return p
}

func (m *Message) decodeLax(d *decoder) error {
	*m = Message{}
	if d.null() {
		return nil
	}
	return d.structValue(messagePlan, valueOfPtr(m))
}

func (m *Message) encodeLax(e *encoder) error {
	e.buf = append(e.buf, '{')
	if err := e.fields(messagePlan, valueOfPtr(m), false); err != nil {
		return err
	}
	e.buf = append(e.buf, `, "content": `...)
	e.buf = appendString(e.buf, m.Content())
	e.buf = append(e.buf, '}')
	return nil
}

// MessageContent is one content of a Message, discriminated by Type:
// "text" (Text), "image" (URL) or "audio" (URL, MimeType).
type MessageContent struct {
	Type     string
	Text     string
	URL      *string
	MimeType *string
}

func (c *MessageContent) decodeLax(d *decoder) error {
	*c = MessageContent{}
	if d.null() {
		return nil
	}
	return d.object(func(key []byte) error {
		var err error
		d.push(string(key))
		switch string(key) {
		case "type":
			c.Type, err = d.str()
		case "text":
			c.Text, err = d.str()
		case "url":
			err = mustCodec(strPtrType).dec(d, valueOfPtr(&c.URL))
		case "mime_type":
			err = mustCodec(strPtrType).dec(d, valueOfPtr(&c.MimeType))
		default:
			_, err = d.skip()
		}
		if err == nil {
			d.pop()
		}
		return err
	})
}

func (c *MessageContent) encodeLax(e *encoder) error {
	e.buf = append(e.buf, `{"type": `...)
	e.buf = appendString(e.buf, c.Type)
	optional := func(key string, p *string) {
		e.buf = append(e.buf, key...)
		if p == nil {
			e.buf = append(e.buf, "null"...)
		} else {
			e.buf = appendString(e.buf, *p)
		}
	}
	switch c.Type {
	case "text":
		e.buf = append(e.buf, `, "text": `...)
		e.buf = appendString(e.buf, c.Text)
	case "image":
		optional(`, "url": `, c.URL)
	case "audio":
		optional(`, "url": `, c.URL)
		optional(`, "mime_type": `, c.MimeType)
	default:
		if c.Text != "" {
			e.buf = append(e.buf, `, "text": `...)
			e.buf = appendString(e.buf, c.Text)
		}
		if c.URL != nil {
			optional(`, "url": `, c.URL)
		}
		if c.MimeType != nil {
			optional(`, "mime_type": `, c.MimeType)
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// IngestedNode is a retrieved document node. Its computed
// citation_id is written and ignored when read.
type IngestedNode struct {
	Source           string                     `json:"source"`
	SourceOrigin     *string                    `json:"source_origin"`
	Namespace        string                     `json:"namespace"`
	Version          int64                      `json:"version" event:"default=1"`
	ContentHash      *string                    `json:"content_hash"`
	NumberOfPages    *int64                     `json:"number_of_pages"`
	DocumentTitle    *string                    `json:"document_title"`
	Language         *string                    `json:"language"`
	CreatedAt        string                     `json:"created_at"`
	UpdatedAt        string                     `json:"updated_at"`
	InsertedAt       string                     `json:"inserted_at"`
	Metadata         map[string]json.RawMessage `json:"metadata"`
	ID               string                     `json:"id"`
	Content          string                     `json:"content"`
	Type             string                     `json:"type" event:"default=content"`
	ContentType      string                     `json:"content_type" event:"default=text"`
	DocumentID       string                     `json:"document_id"`
	StartCharIdx     *int64                     `json:"start_char_idx"`
	EndCharIdx       *int64                     `json:"end_char_idx"`
	Index            *int64                     `json:"index"`
	SectionStartLine *int64                     `json:"section_start_line"`
	SectionEndLine   *int64                     `json:"section_end_line"`
	H1               *string                    `json:"h1"`
	H2               *string                    `json:"h2"`
	H3               *string                    `json:"h3"`
	H4               *string                    `json:"h4"`
	H5               *string                    `json:"h5"`
	H6               *string                    `json:"h6"`
	HeadingLevel     *int64                     `json:"heading_level"`
	Score            *float64                   `json:"score"`
}

// CitationID is "s" followed by the first 6 hex digits of the SHA-256 of
// the document id.
func (n *IngestedNode) CitationID() string {
	sum := sha256.Sum256([]byte(n.DocumentID))
	return "s" + hex.EncodeToString(sum[:3])
}

var nodePlan = mustPlan[IngestedNode]()

func (n *IngestedNode) decodeLax(d *decoder) error {
	*n = IngestedNode{}
	if d.null() {
		return nil
	}
	return d.structValue(nodePlan, valueOfPtr(n))
}

func (n *IngestedNode) encodeLax(e *encoder) error {
	e.buf = append(e.buf, '{')
	if err := e.fields(nodePlan, valueOfPtr(n), false); err != nil {
		return err
	}
	e.buf = append(e.buf, `, "citation_id": `...)
	e.buf = appendString(e.buf, n.CitationID())
	e.buf = append(e.buf, '}')
	return nil
}

func registerSemantic() {
	MustRegister[LLMEvent]()
	MustRegister[LLMStopEvent](WithParents("StopEvent"))
	MustRegister[RefusalStopEvent]()
	MustRegister[RetrieverEvent]()
	MustRegister[RerankerEvent]()
	MustRegister[EmbeddingEvent]()
	MustRegister[ToolEvent]()
	MustRegister[ChainEvent]()
	MustRegister[AgentEvent]()
	MustRegister[GuardEvent]()
	MustRegister[GuardAcceptEvent]()
	MustRegister[AgentSuitabilityAcceptEvent]()
	MustRegister[ContextSufficientAcceptEvent]()
	MustRegister[FewShotAcceptEvent]()
	MustRegister[SensitiveInfoAcceptEvent]()
	MustRegister[GuardRejectionEvent]()
	MustRegister[AgentSuitabilityRejectEvent]()
	MustRegister[ContextInsufficientRejectEvent]()
	MustRegister[ExpertRejectEvent]()
	MustRegister[FewShotRejectEvent]()
	MustRegister[SensitiveInfoRejectEvent]()
}
