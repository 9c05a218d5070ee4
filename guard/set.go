package guard

import (
	"fmt"
	"strings"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/step"
)

// Set is the guards of a turn, by stage. It is the llm.TurnGuard of a tool
// loop (llm.Loop.Guards) and makes the guard step of an agent (Step).
//
// At each stage the guards run in parallel (Run) and every decision is
// published; then:
//   - Input: a rejection ends the run with a RefusalStopEvent (its answer
//     also streamed as a ChunkEvent) and the model is never called, unless
//     the rejection carries an Instruction, which the model is given with
//     the turn instead.
//   - Output: a rejection with a cleaned answer makes the cleaned answer
//     the run's answer (the first such rejection, in the guards' order);
//     one without ends the run with a RefusalStopEvent.
//   - ToolCall: a rejected call does not run; the model reads the reason
//     as the call's failed result and goes on.
type Set struct {
	Input    []Guard
	Output   []Guard
	ToolCall []Guard
	// Message writes the answer of a refused turn; DefaultRefusal when nil.
	Message func(Decision) string
	// Model and Provider name the agent's model in the RefusalStopEvent of
	// Step (the tool loop names its own).
	Model, Provider string
}

// CheckTurn implements llm.TurnGuard.
func (s *Set) CheckTurn(ctx step.Context, lc *llm.GuardCheck) (llm.GuardResult, error) {
	c := &Check{Stage: lc.Point, Model: lc.Model, Provider: lc.Provider, System: lc.System, Messages: lc.Messages, Answer: lc.Answer, ToolUse: lc.ToolUse}
	var guards []Guard
	switch lc.Point {
	case Input:
		guards = s.Input
	case Output:
		guards = s.Output
	case ToolCall:
		guards = s.ToolCall
	default:
		return llm.GuardResult{}, fmt.Errorf("guard: unknown stage %d", lc.Point)
	}
	if len(guards) == 0 {
		return llm.GuardResult{}, nil
	}
	out, err := Run(ctx, c, guards...)
	if err != nil {
		return llm.GuardResult{}, err
	}
	res := llm.GuardResult{Events: out.Events()}
	if d, ok := out.Ending(); ok {
		if lc.Point == ToolCall {
			res.Refusal = "a guard refused this call: " + d.Verdict.Reason
			return res, nil
		}
		stop, err := s.refuse(ctx, c, d)
		res.Stop = stop
		return res, err
	}
	var notes []string
	for _, d := range out.Decisions {
		v := d.Verdict
		switch {
		case v.Accepted:
		case lc.Point == Input && v.Instruction != "":
			notes = append(notes, v.Instruction)
		case lc.Point == Output && v.Cleaned != "" && res.Answer == nil:
			res.Answer = &llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text(v.Cleaned)}}
		case lc.Point == ToolCall && res.Refusal == "":
			res.Refusal = "a guard refused this call: " + v.Reason
		}
	}
	res.Instruction = strings.Join(notes, "\n\n")
	return res, nil
}

// refuse returns the RefusalStopEvent of d and streams its answer.
func (s *Set) refuse(ctx step.Context, c *Check, d Decision) (*event.RefusalStopEvent, error) {
	msg := DefaultRefusal
	if s.Message != nil {
		msg = s.Message
	}
	text := msg(d)
	if err := ctx.Emit(&event.ChunkEvent{Content: text, ModelName: cmpOr(c.Model, "aihub")}); err != nil {
		return nil, fmt.Errorf("guard: publish the refusal: %w", err)
	}
	return Refusal(d, c, text), nil
}

// Emits returns samples of every event the Set's guards may publish, and
// RefusalStopEvent.
func (s *Set) Emits() []event.Event {
	seen := map[string]bool{}
	var out []event.Event
	add := func(evs ...event.Event) {
		for _, e := range evs {
			if n := fmt.Sprintf("%T", e); !seen[n] {
				seen[n] = true
				out = append(out, e)
			}
		}
	}
	for _, gs := range [][]Guard{s.Input, s.Output, s.ToolCall} {
		for _, g := range gs {
			if g != nil {
				add(emitsOf(g)...)
			}
		}
	}
	add((*event.RefusalStopEvent)(nil))
	return out
}

// Step returns a step named name that checks the user's message with the
// Set's Input guards, the way an agent declares its guards in its own
// workflow: it takes the UserMessageEvent and publishes each guard's
// decision, so the agent's next step waits for the acceptances it needs
// (an *event.AgentSuitabilityAcceptEvent parameter, say) and may take a
// soft rejection (an *event.FewShotRejectEvent) to answer differently. A
// rejection that ends the run publishes the rejections and the
// RefusalStopEvent only: no acceptance that could start a later step.
func (s *Set) Step(name string) *step.Step {
	fn := func(ctx step.Context, msg *event.UserMessageEvent) ([]event.Event, error) {
		system, msgs := Conversation(msg)
		c := &Check{Stage: Input, Model: s.Model, Provider: s.Provider, System: system, Messages: msgs}
		out, err := Run(ctx, c, s.Input...)
		if err != nil {
			return nil, err
		}
		d, ends := out.Ending()
		if !ends {
			return out.Events(), nil
		}
		var evs []event.Event
		for _, o := range out.Decisions {
			if !o.Verdict.Accepted {
				evs = append(evs, o.Event)
			}
		}
		stop, err := s.refuse(ctx, c, d)
		if err != nil {
			return nil, err
		}
		return append(evs, stop), nil
	}
	var emits []event.Event
	seen := map[string]bool{}
	for _, g := range s.Input {
		if g == nil {
			continue
		}
		for _, e := range emitsOf(g) {
			if n := fmt.Sprintf("%T", e); !seen[n] {
				seen[n] = true
				emits = append(emits, e)
			}
		}
	}
	emits = append(emits, (*event.RefusalStopEvent)(nil))
	return step.New(fn, step.Name(name), step.Emits(emits...),
		step.Description("checks the user's message with the agent's guards"), step.Icon("mage:shield-check"))
}

// Conversation turns a user's message into the system prompt (its system
// and developer messages) and the conversation a guard checks, as the tool
// loop does.
func Conversation(msg *event.UserMessageEvent) (string, []llm.Message) {
	if msg == nil {
		return "", nil
	}
	var msgs []llm.Message
	var system []string
	for _, m := range msg.Messages {
		text := m.Content()
		switch m.Role {
		case event.RoleSystem, event.RoleDeveloper:
			system = append(system, text)
		case event.RoleAssistant:
			msgs = append(msgs, llm.AssistantText(text))
		default:
			msgs = append(msgs, llm.UserText(text))
		}
	}
	return strings.Join(system, "\n\n"), msgs
}
