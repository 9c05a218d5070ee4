package guard

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
)

// Stage is where in a turn a guard runs.
type Stage = llm.GuardPoint

// The stages of a turn.
const (
	// Input is the turn's input, before any model sees it.
	Input = llm.GuardInput
	// Output is the model's answer, before it becomes the run's answer.
	Output = llm.GuardOutput
	// ToolCall is a tool call the model asked for, before the tool runs.
	ToolCall = llm.GuardToolCall
)

// Check is what a guard looks at.
type Check struct {
	Stage Stage
	// Model and Provider name the model the turn is for, when known.
	Model, Provider string
	// System is the system prompt of the turn.
	System string
	// Messages is the conversation so far; at Input it ends with the
	// turn's input.
	Messages []llm.Message
	// Answer is the model's answer (Output).
	Answer *llm.Message
	// ToolUse is the call about to run (ToolCall).
	ToolUse *llm.Block
	// Context are the documents an answer is to rest on, for
	// ContextSufficiency; a step that retrieved them sets it.
	Context []string
}

// Query is the text of the last user message.
func (c *Check) Query() string {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if c.Messages[i].Role == llm.RoleUser {
			if t := c.Messages[i].Text(); t != "" {
				return t
			}
		}
	}
	return ""
}

// Text is what the stage judges: the last user message at Input, the
// answer at Output, the call's JSON arguments at ToolCall.
func (c *Check) Text() string {
	switch {
	case c.Stage == Output && c.Answer != nil:
		return c.Answer.Text()
	case c.Stage == ToolCall && c.ToolUse != nil:
		return string(c.ToolUse.Input)
	}
	return c.Query()
}

// Verdict is a guard's decision.
type Verdict struct {
	Accepted bool
	// Reason says why, in words for people (it is the event's reason).
	Reason string
	// Cleaned, on a rejected answer, is the answer without what the guard
	// objected to: the turn goes on with it instead of ending.
	Cleaned string
	// Refusal is the RefusalStopEvent reason when the rejection ends the run
	// (event.RefusalInputTooLarge, event.RefusalOutOfScope); out of scope
	// when empty.
	Refusal string
	// Instruction, on a rejected input, lets the turn go on with this
	// instruction to the model instead of ending it (the reference answers
	// a few-shot or context rejection this way).
	Instruction string
	// NewQuery, from ContextSufficiency, is a revised query that might find
	// the missing context.
	NewQuery string
}

// Accept returns an accepting verdict.
func Accept(reason string) Verdict { return Verdict{Accepted: true, Reason: reason} }

// Reject returns a rejecting verdict.
func Reject(reason string) Verdict { return Verdict{Reason: reason} }

// ends reports whether a rejection ends the run.
func (v Verdict) ends() bool { return !v.Accepted && v.Cleaned == "" && v.Instruction == "" }

// Guard checks a turn. Check must be safe for concurrent use: the guards
// of a stage run in parallel, and one guard may check several tool calls at
// once. An error fails the step (the run ends with an ExceptionEvent, or
// the step is retried under its policy); a guard that cannot decide should
// rather accept or reject with a reason.
type Guard interface {
	Name() string
	Check(ctx context.Context, c *Check) (Verdict, error)
}

// Recorder is a Guard whose decisions are events of its own types: the
// built-in guards record theirs as the reference does
// (AgentSuitabilityAcceptEvent, SensitiveInfoRejectEvent…). Other guards'
// decisions are GuardAcceptEvents and GuardRejectionEvents.
type Recorder interface {
	// Record returns the event of a verdict.
	Record(v Verdict) event.Event
	// Emits returns samples of every type Record returns.
	Emits() []event.Event
}

// Func returns a Guard named name that checks with fn.
func Func(name string, fn func(ctx context.Context, c *Check) (Verdict, error)) Guard {
	return funcGuard{name, fn}
}

type funcGuard struct {
	name string
	fn   func(ctx context.Context, c *Check) (Verdict, error)
}

func (f funcGuard) Name() string { return f.name }

func (f funcGuard) Check(ctx context.Context, c *Check) (Verdict, error) {
	if f.fn == nil {
		return Verdict{}, fmt.Errorf("guard %s: no function", f.name)
	}
	return f.fn(ctx, c)
}

// Decision is one guard's verdict and the event that records it.
type Decision struct {
	Guard   string
	Verdict Verdict
	Event   event.Event
}

// Outcome is the decisions of the guards of one check, in the order the
// guards were given.
type Outcome struct {
	Decisions []Decision
}

// Events returns the decisions' events.
func (o Outcome) Events() []event.Event {
	out := make([]event.Event, len(o.Decisions))
	for i, d := range o.Decisions {
		out[i] = d.Event
	}
	return out
}

// Accepted reports whether every guard accepted.
func (o Outcome) Accepted() bool {
	for _, d := range o.Decisions {
		if !d.Verdict.Accepted {
			return false
		}
	}
	return true
}

// Ending returns the first rejection that ends the run: one with neither a
// cleaned text nor an instruction.
func (o Outcome) Ending() (Decision, bool) {
	for _, d := range o.Decisions {
		if d.Verdict.ends() {
			return d, true
		}
	}
	return Decision{}, false
}

// Run checks c with every guard, in parallel, and returns their decisions.
// Each decision's event carries when its guard started and ended
// ("started_at", "ended_at", Unix nanoseconds), so that its GUARDRAIL span
// lasts as long as the guard did. A guard's error or panic is returned,
// joined with the others'; Run waits for every guard.
func Run(ctx context.Context, c *Check, guards ...Guard) (Outcome, error) {
	out := Outcome{Decisions: make([]Decision, len(guards))}
	errs := make([]error, len(guards))
	var wg sync.WaitGroup
	for i, g := range guards {
		if g == nil {
			errs[i] = errors.New("guard: a nil Guard")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			v, err := check(ctx, g, c)
			end := time.Now()
			if err != nil {
				errs[i] = fmt.Errorf("guard %s: %w", g.Name(), err)
				return
			}
			ev := record(g, v)
			setTime(ev, "started_at", start)
			setTime(ev, "ended_at", end)
			out.Decisions[i] = Decision{Guard: g.Name(), Verdict: v, Event: ev}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Outcome{}, err
	}
	return out, nil
}

func check(ctx context.Context, g Guard, c *Check) (v Verdict, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the guard panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return g.Check(ctx, c)
}

func record(g Guard, v Verdict) event.Event {
	if r, ok := g.(Recorder); ok {
		if ev := r.Record(v); ev != nil {
			return ev
		}
	}
	if v.Accepted {
		return &event.GuardAcceptEvent{Reason: v.Reason}
	}
	return &event.GuardRejectionEvent{Reason: v.Reason}
}

// setTime records t on ev as the member key, in Unix nanoseconds as
// created_at is.
func setTime(ev event.Event, key string, t time.Time) {
	_ = event.SetExtra(ev, key, strconv.AppendInt(nil, t.UnixNano(), 10)) // a key no guard event declares
}

// baseEmits are the events of a guard that is not a Recorder.
var baseEmits = []event.Event{(*event.GuardAcceptEvent)(nil), (*event.GuardRejectionEvent)(nil)}

func emitsOf(g Guard) []event.Event {
	if r, ok := g.(Recorder); ok {
		return r.Emits()
	}
	return baseEmits
}

// DefaultRefusal is the answer a run ends with when a guard refused its
// turn, unless the Set says otherwise.
func DefaultRefusal(d Decision) string {
	if d.Verdict.Refusal == event.RefusalInputTooLarge {
		return "Your message is too long for me to process. Please shorten it and try again."
	}
	if r := strings.TrimSpace(d.Verdict.Reason); r != "" {
		return "I can't help with this request. " + r
	}
	return "I can't help with this request."
}

// Refusal returns the RefusalStopEvent that ends the run of c refused by
// d, its answer being text: as an LLMStopEvent it records the turn's input
// and the model the turn was for.
func Refusal(d Decision, c *Check, text string) *event.RefusalStopEvent {
	reason := d.Verdict.Refusal
	switch reason {
	case event.RefusalInputTooLarge, event.RefusalOutOfScope, event.RefusalCondensationEmpty:
	default:
		reason = event.RefusalOutOfScope
	}
	stop := &event.RefusalStopEvent{Reason: reason}
	stop.OutputMessages = []event.Message{event.MessageFromString(event.RoleAssistant, text)}
	if c != nil {
		stop.InputMessages = llm.EventMessages(c.System, c.Messages)
		if c.Model != "" {
			stop.ChatModelName = event.Str(c.Model)
		}
		if c.Provider != "" {
			stop.Provider = event.Str(c.Provider)
		}
	}
	return stop
}
