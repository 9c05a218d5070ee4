package conversation

import (
	"errors"
	"fmt"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// Steps returns the capability's steps for an agent's workflow, the way
// the reference's conversation capability installs its steps next to a
// blueprint's:
//
//   - "limit_chat_history" takes the UserMessageEvent and returns a
//     LimitChatHistoryEvent with the history fitted into the budget (Fit),
//     or ends the run with a RefusalStopEvent input_too_large. With Meta it
//     waits for the NotAMetaQuestionEvent that clears the message.
//   - with CondenseQuestion, "condense_question" takes the LimitChatHistoryEvent
//     and returns a StandaloneQuestionCondenserEvent, or ends the run with
//     a RefusalStopEvent condensation_empty.
//   - with Meta, "detect_meta_question" and "answer_meta_question" (see
//     Meta).
//
// The agent's answer step takes the LimitChatHistoryEvent (and the
// StandaloneQuestionCondenserEvent, with CondenseQuestion) and ends its turn with
// Complete, which adds the title and the follow-up questions. The steps
// are ordinary steps: durable, retried and traced as any other.
func (c *Conversation) Steps() []*step.Step {
	steps := []*step.Step{c.FitStep("limit_chat_history")}
	if c.CondenseQuestion {
		steps = append(steps, c.CondenseStep("condense_question"))
	}
	if c.Meta != nil {
		steps = append(steps, c.Meta.steps(c)...)
	}
	return steps
}

// FitStep returns the step named name that fits the user's message's
// history into the budget: a LimitChatHistoryEvent, or the run's end with
// a RefusalStopEvent input_too_large. With c.Meta set it also takes the
// NotAMetaQuestionEvent, so it starts only once the message is cleared.
func (c *Conversation) FitStep(name string) *step.Step {
	opts := []step.Option{step.Name(name), step.MaxExecutions(1),
		step.Emits((*event.LimitChatHistoryEvent)(nil), (*event.RefusalStopEvent)(nil)),
		step.Description("fits the conversation into the model's input budget"), step.Icon("mage:edit")}
	if c.Meta != nil {
		return step.New(func(ctx step.Context, msg *event.UserMessageEvent, _ *NotAMetaQuestionEvent) (event.Event, error) {
			return c.fitStep(ctx, msg)
		}, opts...)
	}
	return step.New(c.fitStep, opts...)
}

func (c *Conversation) fitStep(ctx step.Context, msg *event.UserMessageEvent) (event.Event, error) {
	msgs := msg.Messages
	if c.Recall != nil {
		recalled, err := c.Recall(ctx, msg)
		if err != nil {
			return nil, fmt.Errorf("conversation: recall: %w", err)
		}
		msgs = withRecalled(msgs, recalled)
	}
	fitted, err := c.Fit(ctx, msgs)
	var tooLarge *TooLargeError
	if errors.As(err, &tooLarge) {
		thought := fmt.Sprintf("The message needs about %d input tokens, more than the budget of %d; the turn is refused.", tooLarge.Needed, tooLarge.Budget)
		return Refuse(ctx, event.RefusalInputTooLarge, thought, c.texts(msg.Locale).InputTooLarge, c.answerModel())
	}
	if err != nil {
		return nil, err
	}
	history := fitted.History
	if history == nil {
		history = []event.ChatMessage{}
	}
	return &event.LimitChatHistoryEvent{LimitedHistory: history}, nil
}

// CondenseStep returns the step named name that condenses the fitted
// history's last message into a standalone question: a
// StandaloneQuestionCondenserEvent, or the run's end with a
// RefusalStopEvent condensation_empty.
func (c *Conversation) CondenseStep(name string) *step.Step {
	fn := func(ctx step.Context, h *event.LimitChatHistoryEvent, msg *event.UserMessageEvent) (event.Event, error) {
		if err := ctx.Emit(&event.ThoughtEvent{ReasoningContent: event.Str("Condensing the question against the conversation.")}); err != nil {
			return nil, err
		}
		q, err := c.Condense(ctx, h.LimitedHistory)
		if errors.Is(err, ErrCondensationEmpty) {
			return Refuse(ctx, event.RefusalCondensationEmpty, "The condensed question came back empty; the user is asked to rephrase.",
				c.texts(msg.Locale).CondensationEmpty, c.Model)
		}
		if err != nil {
			return nil, err
		}
		m := event.Text(event.RoleUser, q)
		return &event.StandaloneQuestionCondenserEvent{CondensedChatMessage: &m}, nil
	}
	return step.New(fn, step.Name(name), step.MaxExecutions(1),
		step.Emits((*event.StandaloneQuestionCondenserEvent)(nil), (*event.RefusalStopEvent)(nil)),
		step.Description("condenses the user's message into a standalone question"), step.Icon("mage:archive"))
}

// withRecalled puts recalled after the leading system messages of msgs.
func withRecalled(msgs, recalled []event.ChatMessage) []event.ChatMessage {
	if len(recalled) == 0 {
		return msgs
	}
	head := 0
	for head < len(msgs) && isSystem(msgs[head]) {
		head++
	}
	out := make([]event.ChatMessage, 0, len(msgs)+len(recalled))
	out = append(out, msgs[:head]...)
	for _, m := range recalled {
		if !isSystem(m) {
			m = event.Text(event.RoleSystem, m.Content())
		}
		out = append(out, m)
	}
	return append(out, msgs[head:]...)
}
