package guard

import (
	"context"
	"fmt"
	"strings"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
)

// AgentSuitability asks a model whether the agent, as Description
// describes it, is the right one for the user's request, as the reference's
// agent description guard does. A rejection ends the run with a
// RefusalStopEvent (out_of_scope) before the agent's own model sees the
// request. Its decisions are AgentSuitabilityAcceptEvents and
// AgentSuitabilityRejectEvents. A judge without a verdict accepts.
type AgentSuitability struct {
	// Description says what the agent does and for whom.
	Description string
	Judge       Judge
}

// Name implements Guard.
func (g *AgentSuitability) Name() string { return "agent_suitability" }

const suitabilityInstructions = `You are a guard in front of an AI agent. Decide whether the agent described below is suitable to handle the user's request, given the conversation so far. Success is true when the request falls within what the agent is for; false when the agent is not meant for it. Judge the request, not whether it can be answered well.`

// Check implements Guard.
func (g *AgentSuitability) Check(ctx context.Context, c *Check) (Verdict, error) {
	prompt := fmt.Sprintf("Agent description:\n%s\n\nConversation so far:\n%s\nUser request:\n%s",
		strings.TrimSpace(g.Description), orNone(history(c.Messages)), c.Query())
	j, err := judged(ctx, g.Judge, suitabilityInstructions, prompt)
	if err != nil {
		return Verdict{}, err
	}
	v := Verdict{Accepted: j.Success, Reason: j.Reasoning}
	if !v.Accepted {
		v.Refusal = event.RefusalOutOfScope
	}
	return v, nil
}

// Record implements Recorder.
func (g *AgentSuitability) Record(v Verdict) event.Event {
	if v.Accepted {
		return &event.AgentSuitabilityAcceptEvent{GuardAcceptEvent: event.GuardAcceptEvent{Reason: v.Reason}}
	}
	return &event.AgentSuitabilityRejectEvent{GuardRejectionEvent: event.GuardRejectionEvent{Reason: v.Reason}}
}

// Emits implements Recorder.
func (g *AgentSuitability) Emits() []event.Event {
	return []event.Event{(*event.AgentSuitabilityAcceptEvent)(nil), (*event.AgentSuitabilityRejectEvent)(nil)}
}

// ContextSufficiency asks a model whether the context at hand suffices to
// answer the user's question, as the reference's context sufficiency guard
// does after retrieval. The context is Check.Context when a step set it,
// else the system prompt and the tool results of the conversation. A
// rejection ends the run with a RefusalStopEvent, unless OnReject is set:
// then the turn goes on and the model is given OnReject and the reason (the
// reference answers this way, telling the user what it could not find).
// The judge may suggest a revised query (Verdict.NewQuery) for another
// retrieval. Its decisions are ContextSufficientAcceptEvents and
// ContextInsufficientRejectEvents. A judge without a verdict accepts.
type ContextSufficiency struct {
	Judge Judge
	// OnReject, when set, is the instruction the model answers an
	// insufficient context with, instead of the run ending.
	OnReject string
}

// Name implements Guard.
func (g *ContextSufficiency) Name() string { return "context_sufficiency" }

const sufficiencyInstructions = `You are a guard in front of an AI agent that answers from the context it was given. Decide whether the context below holds enough information to answer the user's question. Success is true when it does; false when information is missing. When it is false, you may add "new_query": a single revised search query that could find what is missing.`

// Check implements Guard.
func (g *ContextSufficiency) Check(ctx context.Context, c *Check) (Verdict, error) {
	docs := c.Context
	if len(docs) == 0 {
		docs = conversationContext(c)
	}
	var b strings.Builder
	for i, d := range docs {
		fmt.Fprintf(&b, "[%d] %s\n", i+1, strings.TrimSpace(d))
	}
	prompt := fmt.Sprintf("Context:\n%s\nConversation so far:\n%s\nQuestion:\n%s", orNone(b.String()), orNone(history(c.Messages)), c.Query())
	j, err := judged(ctx, g.Judge, sufficiencyInstructions, prompt)
	if err != nil {
		return Verdict{}, err
	}
	v := Verdict{Accepted: j.Success, Reason: j.Reasoning}
	if !v.Accepted {
		v.NewQuery = j.NewQuery
		if g.OnReject != "" {
			v.Instruction = g.OnReject + "\n\nReason: " + v.Reason
		}
	}
	return v, nil
}

// conversationContext is what the model has been given besides the user's
// words: the system prompt and the tools' results.
func conversationContext(c *Check) []string {
	var out []string
	if s := strings.TrimSpace(c.System); s != "" {
		out = append(out, s)
	}
	for _, m := range c.Messages {
		for _, b := range m.Content {
			if b.Kind == llm.BlockToolResult && !b.IsError && b.Text != "" {
				out = append(out, b.Text)
			}
		}
	}
	return out
}

// Record implements Recorder.
func (g *ContextSufficiency) Record(v Verdict) event.Event {
	if v.Accepted {
		return &event.ContextSufficientAcceptEvent{GuardAcceptEvent: event.GuardAcceptEvent{Reason: v.Reason}}
	}
	return &event.ContextInsufficientRejectEvent{GuardRejectionEvent: event.GuardRejectionEvent{Reason: v.Reason}}
}

// Emits implements Recorder.
func (g *ContextSufficiency) Emits() []event.Event {
	return []event.Event{(*event.ContextSufficientAcceptEvent)(nil), (*event.ContextInsufficientRejectEvent)(nil)}
}

// Example is a few-shot example of FewShot: a user request and whether the
// agent takes it, and why.
type Example struct {
	User    string `json:"user"`
	Success bool   `json:"success"`
	Reason  string `json:"reason"`
}

// FewShot asks a model whether the user's request is of the kind the
// examples accept, as the reference's few-shot guard does: each example is
// a request, whether it is accepted, and why. Without examples it accepts.
// A rejection ends the run with a RefusalStopEvent (out_of_scope), unless
// OnReject is set: then the turn goes on with OnReject and the reason for
// the model (the reference answers a rejected request this way). Its
// decisions are FewShotAcceptEvents and FewShotRejectEvents. A judge
// without a verdict accepts.
type FewShot struct {
	Examples []Example
	Judge    Judge
	// OnReject, when set, is the instruction the model answers a rejected
	// request with, instead of the run ending.
	OnReject string
}

// Name implements Guard.
func (g *FewShot) Name() string { return "few_shot" }

const fewShotInstructions = `You are a guard in front of an AI agent. The examples below show requests the agent accepts and requests it rejects, each with the reason. Decide whether the user's request is accepted, judging it the way the examples are judged. Success is true when it is accepted.`

// Check implements Guard.
func (g *FewShot) Check(ctx context.Context, c *Check) (Verdict, error) {
	if len(g.Examples) == 0 {
		return Accept("there are no few-shot examples to check against"), nil
	}
	var b strings.Builder
	for _, e := range g.Examples {
		fmt.Fprintf(&b, "User: %s\nSuccess: %t\nReason: %s\n\n", strings.TrimSpace(e.User), e.Success, strings.TrimSpace(e.Reason))
	}
	prompt := fmt.Sprintf("Examples:\n\n%sUser request:\n%s", b.String(), c.Query())
	j, err := judged(ctx, g.Judge, fewShotInstructions, prompt)
	if err != nil {
		return Verdict{}, err
	}
	v := Verdict{Accepted: j.Success, Reason: j.Reasoning}
	if !v.Accepted {
		v.Refusal = event.RefusalOutOfScope
		if g.OnReject != "" {
			v.Instruction = g.OnReject + "\n\nReason: " + v.Reason
		}
	}
	return v, nil
}

// Record implements Recorder.
func (g *FewShot) Record(v Verdict) event.Event {
	if v.Accepted {
		return &event.FewShotAcceptEvent{GuardAcceptEvent: event.GuardAcceptEvent{Reason: v.Reason}}
	}
	return &event.FewShotRejectEvent{GuardRejectionEvent: event.GuardRejectionEvent{Reason: v.Reason}}
}

// Emits implements Recorder.
func (g *FewShot) Emits() []event.Event {
	return []event.Event{(*event.FewShotAcceptEvent)(nil), (*event.FewShotRejectEvent)(nil)}
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(none)\n"
	}
	return s
}
