package conversation

import (
	"fmt"
	"strings"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/step"
)

// MetaQuestionDetectedEvent says the user's message is a question about
// the agent itself (its identity, its capabilities, or why it behaved as
// it did) rather than a task: the reference's event of that name, which
// routes the run to the answer from the agent's own description.
type MetaQuestionDetectedEvent struct {
	event.ControlAndDisplayEvent
	// UserQuery is the message classified as a meta question.
	UserQuery string `json:"user_query" event:"required"`
	// Category is which aspect of the agent it is about.
	Category string `json:"category" event:"required,oneof=identity|capabilities|behavior"`
	// Reasoning says why it was classified so.
	Reasoning string `json:"reasoning" event:"required"`
}

// NotAMetaQuestionEvent clears the user's message as a task: the
// reference's all-clear, which the agent's entry steps (FitStep) wait for.
type NotAMetaQuestionEvent struct {
	event.ControlAndDisplayEvent
	// Reasoning says why the message is an ordinary request.
	Reasoning string `json:"reasoning" event:"required"`
}

// Meta question categories.
const (
	MetaIdentity     = "identity"
	MetaCapabilities = "capabilities"
	MetaBehavior     = "behavior"
)

func init() {
	event.MustRegister[MetaQuestionDetectedEvent](event.WithDisplay(
		event.L("Meta-Frage erkannt", "Meta question detected", "Méta-question détectée", "Meta-domanda rilevata"),
		event.L("Die Nachricht fragt nach dem Agenten selbst.", "The message asks about the agent itself.",
			"Le message porte sur l'agent lui-même.", "Il messaggio riguarda l'agente stesso.")))
	event.MustRegister[NotAMetaQuestionEvent](event.WithDisplay(
		event.L("Keine Meta-Frage", "Not a meta question", "Pas une méta-question", "Non è una meta-domanda"),
		event.L("Die Nachricht ist eine gewöhnliche Anfrage.", "The message is an ordinary request.",
			"Le message est une demande ordinaire.", "Il messaggio è una richiesta ordinaria.")))
}

// Meta is the reference's self-awareness: a gate that tells questions
// about the agent from tasks, and an answer to them from what the agent
// says of itself. Its steps are "detect_meta_question" (UserMessageEvent →
// MetaQuestionDetectedEvent or NotAMetaQuestionEvent) and
// "answer_meta_question" (streams the answer and ends the run with an
// LLMStopEvent, titled and with follow-ups as Complete does). A message
// the model cannot classify, or a start with no user text, is cleared: a
// flaky classifier must not keep a user from their answer.
type Meta struct {
	// Name and Description are the agent's, as its users know it.
	Name, Description string
	// Workflow says in a few sentences what the agent does to answer,
	// for questions on its behaviour; optional.
	Workflow string
}

const detectPrompt = `Decide whether the user's message is a meta question: a question about the assistant itself (who or what it is, what it can or cannot do, how it works, or why it answered as it did) rather than a request for the assistant to do something or to answer a question on a topic. Answer with one JSON object and nothing else: {"meta": true or false, "category": "identity" or "capabilities" or "behavior", "reasoning": "one sentence saying why"}`

func (m *Meta) steps(c *Conversation) []*step.Step {
	detect := step.New(func(ctx step.Context, msg *event.UserMessageEvent) (event.Event, error) {
		return m.detect(ctx, c, msg)
	}, step.Name("detect_meta_question"), step.MaxExecutions(1),
		step.Emits((*MetaQuestionDetectedEvent)(nil), (*NotAMetaQuestionEvent)(nil)),
		step.Description("tells questions about the agent from tasks"), step.Icon("mdi:help-circle-outline"))
	answer := step.New(func(ctx step.Context, q *MetaQuestionDetectedEvent, msg *event.UserMessageEvent) (*event.LLMStopEvent, error) {
		return m.answer(ctx, c, q, msg)
	}, step.Name("answer_meta_question"), step.MaxExecutions(1),
		step.Description("answers a question about the agent from its description"), step.Icon("mdi:account-voice"))
	return []*step.Step{detect, answer}
}

func lastUserText(msgs []event.ChatMessage) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == event.RoleUser {
			return strings.TrimSpace(msgs[i].Content())
		}
	}
	return ""
}

func (m *Meta) detect(ctx step.Context, c *Conversation, msg *event.UserMessageEvent) (event.Event, error) {
	query := lastUserText(msg.Messages)
	if query == "" {
		return &NotAMetaQuestionEvent{Reasoning: "No user message to inspect."}, nil
	}
	zero := 0.0
	resp, err := c.generate(ctx, "conversation.detect_meta_question", &llm.Request{System: detectPrompt,
		Messages: []llm.Message{llm.UserText(query)}, MaxTokens: 256, Temperature: &zero})
	if err != nil {
		return nil, fmt.Errorf("conversation: classify the message: %w", err)
	}
	var v struct {
		Meta      bool   `json:"meta"`
		Category  string `json:"category"`
		Reasoning string `json:"reasoning"`
	}
	if !decodeObject(resp.Message.Text(), &v) {
		return &NotAMetaQuestionEvent{Reasoning: "The classifier gave no verdict; the message is treated as a request."}, nil
	}
	reason := cmpOr(strings.TrimSpace(v.Reasoning), "classified by the model")
	if !v.Meta {
		return &NotAMetaQuestionEvent{Reasoning: reason}, nil
	}
	switch v.Category {
	case MetaIdentity, MetaCapabilities, MetaBehavior:
	default:
		v.Category = MetaCapabilities
	}
	return &MetaQuestionDetectedEvent{UserQuery: query, Category: v.Category, Reasoning: reason}, nil
}

func (m *Meta) answer(ctx step.Context, c *Conversation, q *MetaQuestionDetectedEvent, msg *event.UserMessageEvent) (*event.LLMStopEvent, error) {
	if c.Provider == nil {
		return nil, ErrNoModel
	}
	var sys strings.Builder
	fmt.Fprintf(&sys, "You are %s. %s\n", cmpOr(m.Name, "an assistant"), m.Description)
	if m.Workflow != "" {
		fmt.Fprintf(&sys, "How you work: %s\n", m.Workflow)
	}
	sys.WriteString("The user asks about you (" + q.Category + "). Answer from what is said here only, briefly, in the user's language; do not invent abilities.")
	history := msg.Messages
	req := c.Request(history)
	req.Model, req.System = c.Model, joinNonEmpty(sys.String(), req.System)
	call, err := llm.StreamTo(ctx, c.Provider, req)
	if err != nil {
		return nil, err
	}
	return Complete(ctx, c, history, call.Response.Message.Text(), call.StopEvent())
}
