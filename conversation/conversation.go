package conversation

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/semantic"
	"github.com/saap-go/agent/step"
)

// Conversation is the conversation capability of an agent: its settings
// and the helpers and steps built on them. Every feature is off until its
// field says otherwise; the zero value passes a history through unchanged.
// A Conversation is read-only once in use and safe for concurrent use.
type Conversation struct {
	// Provider and Model answer the capability's own calls: summaries,
	// condensed questions, titles, follow-up questions, meta questions
	// (the reference's task model). A small, fast model does.
	Provider llm.Provider
	Model    string

	// Budget is the most input tokens the agent's answering call may
	// take (the reference's number_of_input_tokens). 0 fits nothing: the
	// history passes unchanged and nothing is refused.
	Budget int
	// Counter counts tokens; Estimate when nil. Pass the answering
	// provider where it counts (an *anthropic.Provider or
	// *gemini.Provider), with AnswerModel naming its model.
	Counter TokenCounter
	// AnswerModel is the agent's answering model: the one the budget is
	// counted for, and the model of Request. Model when empty.
	AnswerModel string
	// System is the agent's own system prompt, which every answering
	// call carries and the budget therefore always holds.
	System string
	// Summarise folds the turns that do not fit into a summary the model
	// writes, instead of leaving them out.
	Summarise bool
	// SummaryTokens is the room kept for that summary; 512 when 0.
	SummaryTokens int

	// Condense rewrites the user's last message into a standalone
	// question against the history (the reference's condense_question).
	CondenseQuestion bool
	// Title names the thread once, after its first answered turn.
	TitleThread bool
	// FollowUps suggests the user's next questions after each answer.
	FollowUps bool
	// MaxFollowUps bounds the suggestions; 3 when 0.
	MaxFollowUps int
	// Meta answers questions about the agent itself (who it is, what it
	// can do, why it answered as it did) from its description instead of
	// its workflow; nil leaves them to the workflow.
	Meta *Meta

	// Recall is the hook for memory: what it returns for the user's
	// message (memories of earlier threads, as system messages) joins the
	// history's system messages in FitStep, before the turns, and is never
	// trimmed. nil recalls nothing. A memory service plugs in here.
	Recall func(ctx step.Context, msg *event.UserMessageEvent) ([]event.ChatMessage, error)

	// Texts are the user-facing messages of refusals; DefaultTexts when
	// nil.
	Texts func(locale string) Texts
}

// Texts are the messages a user reads when the capability ends a turn.
type Texts struct {
	// InputTooLarge is the answer to a turn that cannot fit the budget.
	InputTooLarge string
	// CondensationEmpty is the answer to a message no question could be
	// made of.
	CondensationEmpty string
}

// DefaultTexts are the built-in refusals, in the platform's four
// languages (German when the locale is unknown, as the platform's
// default locale is).
func DefaultTexts(locale string) Texts {
	switch strings.ToLower(strings.SplitN(locale, "-", 2)[0]) {
	case "en":
		return Texts{
			InputTooLarge:     "Your message is too long for me to process. Please shorten it, or split it into smaller parts, and send it again.",
			CondensationEmpty: "I could not work out what you are asking. Could you rephrase your question?",
		}
	case "fr":
		return Texts{
			InputTooLarge:     "Votre message est trop long pour que je puisse le traiter. Raccourcissez-le ou divisez-le en plusieurs parties, puis renvoyez-le.",
			CondensationEmpty: "Je n'ai pas compris votre demande. Pourriez-vous reformuler votre question ?",
		}
	case "it":
		return Texts{
			InputTooLarge:     "Il suo messaggio è troppo lungo perché io possa elaborarlo. Lo accorci o lo divida in parti più piccole e lo invii di nuovo.",
			CondensationEmpty: "Non ho capito che cosa chiede. Potrebbe riformulare la domanda?",
		}
	}
	return Texts{
		InputTooLarge:     "Ihre Nachricht ist zu lang, als dass ich sie verarbeiten könnte. Bitte kürzen Sie sie oder teilen Sie sie in kleinere Teile auf und senden Sie sie erneut.",
		CondensationEmpty: "Ich konnte nicht erkennen, was Sie fragen. Könnten Sie Ihre Frage umformulieren?",
	}
}

func (c *Conversation) texts(locale string) Texts {
	if c.Texts != nil {
		return c.Texts(locale)
	}
	return DefaultTexts(locale)
}

// ErrNoModel is returned by a helper that needs the capability's model
// when Provider is nil.
var ErrNoModel = errors.New("conversation: no Provider for the capability's own calls")

// Refuse ends a turn with a reply rather than an error, as the reference
// does: it publishes thought (the mechanism, for the run's record) as a
// ThoughtEvent and text as a ChunkEvent, which a chat client shows as the
// answer, and returns the RefusalStopEvent with reason (one of the
// event.Refusal… constants) carrying the same text for clients that read
// only the stop.
func Refuse(ctx step.Context, reason, thought, text, model string) (*event.RefusalStopEvent, error) {
	model = cmpOr(model, "aihub")
	if thought != "" {
		if err := ctx.Emit(&event.ThoughtEvent{ReasoningContent: &thought}); err != nil {
			return nil, fmt.Errorf("conversation: publish the refusal's thought: %w", err)
		}
	}
	if err := ctx.Emit(&event.ChunkEvent{Content: text, ModelName: model}); err != nil {
		return nil, fmt.Errorf("conversation: publish the refusal: %w", err)
	}
	msg := event.MessageFromString(event.RoleAssistant, text)
	msg.Name = &model
	stop := &event.RefusalStopEvent{Reason: reason}
	stop.OutputMessages = []event.Message{msg}
	stop.ChatModelName = &model
	return stop, nil
}

// generate makes one of the capability's own model calls, under a span of
// the step's tracer (an LLM span with the OpenInference attributes of the
// call) when ctx is a step's context.
func (c *Conversation) generate(ctx context.Context, name string, req *llm.Request) (*llm.Response, error) {
	if c.Provider == nil {
		return nil, ErrNoModel
	}
	req.Model = cmpOr(req.Model, c.Model)
	sc, traced := ctx.(step.Context)
	if !traced {
		return llm.Generate(ctx, c.Provider, req)
	}
	sctx, span := sc.Tracer().Start(ctx, name)
	defer span.End()
	resp, err := llm.Generate(sctx, c.Provider, req)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return nil, err
	}
	if attrs, aerr := semantic.Attributes(llm.NewLLMEvent(c.Provider.Name(), req, resp)); aerr == nil {
		span.SetAttributes(attrs...)
	}
	span.SetAttributes(attribute.String("conversation.call", name))
	return resp, nil
}

// toLLM turns chat messages into the system prompt (system and developer
// messages) and the turns of a model request.
func toLLM(msgs []event.ChatMessage) (string, []llm.Message) {
	var system []string
	var out []llm.Message
	for _, m := range msgs {
		text := m.Content()
		switch m.Role {
		case event.RoleSystem, event.RoleDeveloper:
			system = append(system, text)
		case event.RoleAssistant, event.RoleModel, event.RoleChatbot:
			out = append(out, llm.AssistantText(text))
		default:
			out = append(out, llm.UserText(text))
		}
	}
	return strings.Join(system, "\n\n"), out
}

// Request is the answering call for history: the agent's System first,
// then the history's own system messages, then its turns. An agent's
// answer step may send it as it is (adding its tools and options).
func (c *Conversation) Request(history []event.ChatMessage) *llm.Request {
	system, msgs := toLLM(history)
	return &llm.Request{Model: c.answerModel(), System: joinNonEmpty(c.System, system), Messages: msgs}
}

func (c *Conversation) answerModel() string { return cmpOr(c.AnswerModel, c.Model) }

// transcript writes messages as "role: text" lines, the form the
// capability's prompts read.
func transcript(msgs []event.ChatMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		t := strings.TrimSpace(m.Content())
		if t == "" {
			continue
		}
		b.WriteString(m.Role)
		b.WriteString(": ")
		b.WriteString(t)
		b.WriteByte('\n')
	}
	return b.String()
}

func joinNonEmpty(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, "\n\n")
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

func isSystem(m event.ChatMessage) bool {
	return m.Role == event.RoleSystem || m.Role == event.RoleDeveloper
}

// Validate reports every setting that cannot work, at once: a negative
// budget or bound, and features that need the capability's model without
// a Provider. Call it where the agent is built, so a misconfiguration
// fails at startup rather than on a user's turn.
func (c *Conversation) Validate() error {
	var errs []error
	if c.Budget < 0 {
		errs = append(errs, fmt.Errorf("the Budget is %d: want a number of tokens, 0 for no limit", c.Budget))
	}
	if c.SummaryTokens < 0 || c.MaxFollowUps < 0 {
		errs = append(errs, fmt.Errorf("SummaryTokens (%d) and MaxFollowUps (%d) must not be negative", c.SummaryTokens, c.MaxFollowUps))
	}
	if c.Provider == nil {
		for _, f := range []struct {
			on   bool
			name string
		}{{c.Summarise, "Summarise"}, {c.CondenseQuestion, "CondenseQuestion"}, {c.TitleThread, "TitleThread"},
			{c.FollowUps, "FollowUps"}, {c.Meta != nil, "Meta"}} {
			if f.on {
				errs = append(errs, fmt.Errorf("%s needs a Provider for the capability's own model calls", f.name))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("conversation: %w", err)
	}
	return nil
}
