package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
)

// ErrIterationLimit is wrapped by the error of a tool loop that reached
// its limit of model calls without an answer.
var ErrIterationLimit = errors.New("llm: the tool loop reached its limit of model calls")

// DefaultMaxIterations bounds a Loop whose MaxIterations is 0.
const DefaultMaxIterations = 10

// Loop is the tool loop of an agent: it sends the conversation to the
// model, streams the answer into the run (StreamTo), runs the tools the
// model asks for (in parallel when it asks for several), gives it their
// results and calls it again, until it answers without tools or has been
// called MaxIterations times.
//
// Tools that need approval (RequireApproval, Approvable) are asked about
// with a ToolApprovalRequestEvent before they run, one at a time; the
// step returns the question and the run pauses. The conversation and the
// pending calls are kept in the run state, so the loop goes on from the
// answer (or the question's timeout) in whichever process receives it, a
// restarted one included. A refused or timed-out call is not run; the
// model is told so in its result.
//
// Steps declares the three steps an agent adds to its workflow; Run and
// Resume serve agents with steps of their own. A Loop is configured once
// and shared by every run; it keeps nothing of a run in memory.
type Loop struct {
	// Provider answers; Model is its model name.
	Provider Provider
	Model    string
	// System is the system prompt.
	System string
	// Tools are the tools offered to the model.
	Tools []Callable
	// MaxIterations bounds the model calls of one run (DefaultMaxIterations
	// when 0). Reaching it ends the run with an error wrapping
	// ErrIterationLimit.
	MaxIterations int
	// Params holds the sampling options of every request (MaxTokens,
	// Temperature, Thinking, Extra…); the loop sets Model, System,
	// Messages and Tools.
	Params Request
	// Prices, when set, prices each call as an LLMCostEvent.
	Prices Prices
	// ApprovalTimeout, when positive, is how long an approval question
	// waits; an unanswered call is then not run.
	ApprovalTimeout time.Duration
	// Name prefixes the steps' names and the run-state key, so two loops
	// can share an agent; "llm" when empty.
	Name string
	// StreamOptions are passed to StreamTo for every call.
	StreamOptions []StreamOption
	// Guards, when set, checks each turn: the input before the first model
	// call, the final answer before it becomes the run's answer, and each
	// tool call before it runs (package guard builds one). With Guards the
	// final answer's chunks are published once the answer has passed, so a
	// rewritten answer is never shown in its first form.
	Guards TurnGuard
}

func (l *Loop) name() string { return cmpOr(l.Name, "llm") }

func (l *Loop) stateKey() string { return l.name() + "_tool_loop" }

func (l *Loop) maxIterations() int {
	if l.MaxIterations > 0 {
		return l.MaxIterations
	}
	return DefaultMaxIterations
}

// Steps returns the loop's steps: <name>_answer takes the user's message
// and answers, <name>_approval takes the answer to an approval question
// and <name>_approval_timeout its timeout. Each returns the LLMEvents and
// ToolEvents of its calls, then the run's LLMStopEvent or the next
// approval question.
func (l *Loop) Steps() []*step.Step {
	samples := []event.Event{(*event.LLMEvent)(nil), (*event.ToolEvent)(nil), (*event.LLMStopEvent)(nil), (*event.ToolApprovalRequestEvent)(nil)}
	if e, ok := l.Guards.(interface{ Emits() []event.Event }); ok {
		samples = append(samples, e.Emits()...)
	}
	emits := step.Emits(samples...)
	n := l.name()
	return []*step.Step{
		step.New(l.Answer, step.Name(n+"_answer"), emits),
		step.New(l.Approval, step.Name(n+"_approval"), emits, step.Loop()),
		step.New(l.Expired, step.Name(n+"_approval_timeout"), emits, step.Loop()),
	}
}

// loopState is what the loop keeps in the run state while a question is
// open.
type loopState struct {
	Messages []Message `json:"messages"`
	// Calls is the number of model calls made.
	Calls int `json:"calls"`
	// Pending are the tool uses of the model's last answer, not yet run.
	Pending []Block `json:"pending,omitempty"`
	// Decisions are the approvals given so far, by tool call id.
	Decisions map[string]string `json:"decisions,omitempty"`
	// Asking is the tool call the open question is about.
	Asking string `json:"asking,omitempty"`
}

const (
	approved = "approved"
	refused  = "refused"
	timedOut = "timed_out"
)

// Answer is the step that answers a user's message: the chat history
// becomes the conversation (system messages are added to System). The
// user's images and documents go to the model as content blocks
// (FromEventBlocks); earlier assistant turns keep their text, as most
// providers take nothing else from the assistant.
func (l *Loop) Answer(ctx step.Context, msg *event.UserMessageEvent) ([]event.Event, error) {
	var msgs []Message
	var system []string
	skipped := 0
	for _, m := range msg.Messages {
		switch m.Role {
		case event.RoleSystem, event.RoleDeveloper:
			system = append(system, m.Content())
		case event.RoleAssistant:
			msgs = append(msgs, AssistantText(m.Content()))
		default:
			blocks, n := FromEventBlocks(m.Blocks)
			skipped += n
			if len(blocks) == 0 {
				blocks = []Block{Text("")}
			}
			msgs = append(msgs, Message{Role: RoleUser, Content: blocks})
		}
	}
	if skipped > 0 {
		ctx.Logger().InfoContext(ctx, "llm: blocks of the user's message that no model takes were left out", "loop", l.name(), "blocks", skipped)
	}
	if len(msgs) == 0 {
		return nil, step.Userf("the message has no text to answer")
	}
	return l.run(ctx, msgs, strings.Join(system, "\n\n"))
}

// Run starts the loop on a conversation and returns what the step
// publishes: the record of each call and tool run, then the run's
// LLMStopEvent, or an approval question (Resume goes on from its answer).
func (l *Loop) Run(ctx step.Context, msgs []Message) ([]event.Event, error) {
	return l.run(ctx, msgs, "")
}

func (l *Loop) run(ctx step.Context, msgs []Message, extraSystem string) ([]event.Event, error) {
	if l.Provider == nil {
		return nil, errors.New("llm: Loop without a Provider")
	}
	st := &loopState{Messages: append([]Message(nil), msgs...)}
	var outs []event.Event
	if l.Guards != nil {
		res, err := l.Guards.CheckTurn(ctx, l.guardCheck(GuardInput, l.system(extraSystem), st.Messages))
		if err != nil {
			return nil, fmt.Errorf("llm: guard the input: %w", err)
		}
		outs = append(outs, res.Events...)
		if res.Stop != nil {
			return append(outs, res.Stop), nil
		}
		if res.Instruction != "" {
			extraSystem = strings.TrimSpace(extraSystem + "\n\n" + res.Instruction)
		}
	}
	evs, err := l.advance(ctx, st, extraSystem)
	if err != nil {
		return nil, err
	}
	return append(outs, evs...), nil
}

func (l *Loop) system(extra string) string {
	if extra == "" {
		return l.System
	}
	return strings.TrimSpace(l.System + "\n\n" + extra)
}

// Approval is the step that takes the answer to an approval question.
func (l *Loop) Approval(ctx step.Context, r *event.HumanInTheLoopConfirmationResponseEvent) ([]event.Event, error) {
	decision := refused
	if r.Response {
		decision = approved
	}
	var callID string
	if r.RequestEvent != nil {
		if raw, ok := event.Extra(r.RequestEvent, "tool_call_id"); ok {
			_ = json.Unmarshal(raw, &callID)
		}
	}
	return l.Resume(ctx, callID, decision == approved, false)
}

// Expired is the step that takes the timeout of an approval question:
// the call is not run.
func (l *Loop) Expired(ctx step.Context, t *event.HumanInTheLoopTimeoutEvent) ([]event.Event, error) {
	return l.Resume(ctx, "", false, true)
}

// Resume goes on from the answer to the loop's open approval question:
// callID names the call answered ("" for the one asked about), ok is the
// answer, expired says nobody answered in time. Without an open question
// of this loop it publishes nothing: the answer belongs to another
// question of the agent.
func (l *Loop) Resume(ctx step.Context, callID string, ok, expired bool) ([]event.Event, error) {
	var st loopState
	found, err := ctx.RunState().Get(ctx, l.stateKey(), &st)
	if err != nil {
		return nil, fmt.Errorf("llm: read the tool loop's state: %w", err)
	}
	if !found || st.Asking == "" {
		ctx.Logger().WarnContext(ctx, "llm: an approval answer without an open question of this tool loop; ignored", "loop", l.name())
		return nil, nil
	}
	switch {
	case callID != "" && callID != st.Asking && st.Decisions[callID] != "":
		// A re-run after a crash: this answer is already recorded.
	case callID != "" && callID != st.Asking:
		ctx.Logger().WarnContext(ctx, "llm: an approval answer for another tool call; ignored", "loop", l.name(), "tool_call_id", callID, "asking", st.Asking)
		return nil, nil
	default:
		if st.Decisions == nil {
			st.Decisions = map[string]string{}
		}
		switch {
		case expired:
			st.Decisions[st.Asking] = timedOut
		case ok:
			st.Decisions[st.Asking] = approved
		default:
			st.Decisions[st.Asking] = refused
		}
	}
	st.Asking = ""
	return l.advance(ctx, &st, "")
}

// advance runs the loop from st until the model answers, a question must
// be asked, or the limit is reached.
func (l *Loop) advance(ctx step.Context, st *loopState, extraSystem string) ([]event.Event, error) {
	var outs []event.Event
	system := l.system(extraSystem)
	for {
		if len(st.Pending) > 0 {
			if q, err := l.nextQuestion(st); err != nil || q != nil {
				if err != nil {
					return nil, err
				}
				if err := ctx.RunState().Set(ctx, l.stateKey(), st); err != nil {
					return nil, fmt.Errorf("llm: keep the tool loop's state: %w", err)
				}
				return append(outs, q), nil
			}
			results, evs, stop, err := l.runTools(ctx, st)
			if err != nil {
				return nil, err
			}
			outs = append(outs, evs...)
			if stop != nil {
				if err := ctx.RunState().Delete(ctx, l.stateKey()); err != nil {
					ctx.Logger().WarnContext(ctx, "llm: could not clear the tool loop's state", "error", err)
				}
				return append(outs, stop), nil
			}
			st.Messages = append(st.Messages, Message{Role: RoleTool, Content: results})
			st.Pending, st.Decisions = nil, nil
		}
		if st.Calls >= l.maxIterations() {
			n := l.maxIterations()
			return nil, step.WithUserMessage(fmt.Errorf("%w (%d calls)", ErrIterationLimit, n),
				fmt.Sprintf("the agent stopped after %d model calls without reaching an answer", n))
		}
		req := l.Params
		req.Model, req.System, req.Messages, req.Tools = l.Model, system, st.Messages, l.definitions()
		var held []event.Event
		opts := l.streamOptions()
		if l.Guards != nil {
			opts = append(opts[:len(opts):len(opts)], holdChunks(&held))
		}
		call, err := StreamTo(ctx, l.Provider, &req, opts...)
		if err != nil {
			return nil, err
		}
		st.Calls++
		st.Messages = append(st.Messages, call.Response.Message)
		uses := call.Response.Message.ToolUses()
		if len(uses) == 0 {
			if err := ctx.RunState().Delete(ctx, l.stateKey()); err != nil {
				ctx.Logger().WarnContext(ctx, "llm: could not clear the tool loop's state", "error", err)
			}
			if l.Guards == nil {
				return append(outs, call.StopEvent()), nil
			}
			return l.guardAnswer(ctx, outs, held, system, st.Messages, call)
		}
		if err := emitAll(ctx, held); err != nil {
			return nil, err
		}
		outs = append(outs, call.Event)
		st.Pending = uses
	}
}

// guardAnswer checks the final answer of call and returns the step's
// results: the guards' decisions, then the run's answer (rewritten if a
// guard rewrote it) or the guards' stop. The held chunks are published only
// for an answer that passed unchanged.
func (l *Loop) guardAnswer(ctx step.Context, outs, held []event.Event, system string, msgs []Message, call *Call) ([]event.Event, error) {
	answer := call.Response.Message
	res, err := l.Guards.CheckTurn(ctx, withAnswer(l.guardCheck(GuardOutput, system, msgs[:len(msgs)-1]), &answer))
	if err != nil {
		return nil, fmt.Errorf("llm: guard the answer: %w", err)
	}
	outs = append(outs, res.Events...)
	if res.Stop != nil {
		return append(outs, res.Stop), nil
	}
	stop := call.StopEvent()
	if res.Answer == nil {
		if err := emitAll(ctx, held); err != nil {
			return nil, err
		}
		return append(outs, stop), nil
	}
	if n := len(stop.OutputMessages); n > 0 {
		stop.OutputMessages[n-1] = EventMessages("", []Message{*res.Answer})[0]
	}
	if text := res.Answer.Text(); text != "" {
		if err := ctx.Emit(&event.ChunkEvent{Content: text, ModelName: cmpOr(l.Model, "aihub")}); err != nil {
			return nil, fmt.Errorf("llm: publish a chunk: %w", err)
		}
	}
	return append(outs, stop), nil
}

func (l *Loop) guardCheck(at GuardPoint, system string, msgs []Message) *GuardCheck {
	return &GuardCheck{Point: at, Model: l.Model, Provider: l.Provider.Name(), System: system, Messages: msgs}
}

func withAnswer(c *GuardCheck, answer *Message) *GuardCheck {
	c.Answer = answer
	return c
}

func emitAll(ctx step.Context, evs []event.Event) error {
	for _, e := range evs {
		if err := ctx.Emit(e); err != nil {
			return fmt.Errorf("llm: publish a chunk: %w", err)
		}
	}
	return nil
}

func (l *Loop) streamOptions() []StreamOption {
	if l.Prices == nil {
		return l.StreamOptions
	}
	return append([]StreamOption{WithPrices(l.Prices)}, l.StreamOptions...)
}

func (l *Loop) definitions() []Tool {
	if len(l.Tools) == 0 {
		return nil
	}
	defs := make([]Tool, len(l.Tools))
	for i, t := range l.Tools {
		defs[i] = t.Definition()
	}
	return defs
}

func (l *Loop) tool(name string) Callable {
	for _, t := range l.Tools {
		if t.Definition().Name == name {
			return t
		}
	}
	return nil
}

// nextQuestion returns the approval question for the first pending call
// that needs one and has none yet, and records that it is asked.
func (l *Loop) nextQuestion(st *loopState) (event.Event, error) {
	for _, u := range st.Pending {
		c := l.tool(u.ToolName)
		if c == nil || !needsApproval(c, u.Input) || st.Decisions[u.ToolUseID] != "" {
			continue
		}
		var opts []hitl.Option
		if l.ApprovalTimeout > 0 {
			opts = append(opts, hitl.Timeout(l.ApprovalTimeout))
		}
		q, err := hitl.ToolApproval(fmt.Sprintf("Allow the agent to call %s with %s?", u.ToolName, compactJSON(u.Input)),
			hitl.Tool{CallID: u.ToolUseID, Name: u.ToolName, Kind: "function", Arguments: objectOf(u.Input)}, opts...)
		if err != nil {
			return nil, fmt.Errorf("llm: approval question for %s: %w", u.ToolName, err)
		}
		if d := c.Definition().Description; d != "" {
			q.Question += " (" + d + ")"
		}
		st.Asking = u.ToolUseID
		return q, nil
	}
	return nil, nil
}

func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// runTools runs the pending calls that may run, in parallel, and returns
// every call's result in the model's order, with a ToolEvent per call run that
// carries the result (member "result") or the error (member "error"), and
// when the call started and ended ("started_at", "ended_at"). With Guards,
// each call is checked before it runs: the guards' decisions come before
// the calls' ToolEvents, a refused call does not run, and a guard's stop
// ends the run (returned as stop).
func (l *Loop) runTools(ctx step.Context, st *loopState) ([]Block, []event.Event, event.Event, error) {
	results := make([]Block, len(st.Pending))
	ran := make([]event.Event, len(st.Pending))
	guarded := make([]GuardResult, len(st.Pending))
	errs := make([]error, len(st.Pending))
	var wg sync.WaitGroup
	for i, u := range st.Pending {
		c := l.tool(u.ToolName)
		switch {
		case c == nil:
			results[i] = ToolResult(u.ToolUseID, fmt.Sprintf("error: there is no tool named %q", u.ToolName), true)
			continue
		case needsApproval(c, u.Input) && st.Decisions[u.ToolUseID] == refused:
			results[i] = ToolResult(u.ToolUseID, "error: the user did not approve this call; it was not run", true)
			continue
		case needsApproval(c, u.Input) && st.Decisions[u.ToolUseID] != approved:
			results[i] = ToolResult(u.ToolUseID, "error: nobody approved this call in time; it was not run", true)
			continue
		}
		ran[i] = NewToolEvent(c.Definition(), u)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if l.Guards != nil {
				c := l.guardCheck(GuardToolCall, l.System, st.Messages)
				c.ToolUse = &u
				res, err := l.Guards.CheckTurn(ctx, c)
				guarded[i], errs[i] = res, err
				if err != nil || res.Stop != nil || res.Refusal != "" {
					results[i] = ToolResult(u.ToolUseID, "error: "+cmpOr(res.Refusal, "a guard stopped this call")+"; it was not run", true)
					ran[i] = nil
					return
				}
			}
			start := time.Now()
			out, stack, err := callTool(ctx, c, u.Input)
			attachTime(ran[i], "started_at", start)
			attachTime(ran[i], "ended_at", time.Now())
			if err != nil {
				attrs := []any{"tool", u.ToolName, "tool_call_id", u.ToolUseID, "error", err}
				if stack != nil {
					attrs = append(attrs, "stack", string(stack))
				}
				ctx.Logger().InfoContext(ctx, "llm: tool failed; the model is told", attrs...)
				results[i] = ToolResult(u.ToolUseID, "error: "+err.Error(), true)
				attach(ran[i], "error", err.Error())
				return
			}
			results[i] = ToolResult(u.ToolUseID, out, false)
			attach(ran[i], "result", out)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, nil, fmt.Errorf("llm: guard a tool call: %w", err)
	}
	evs := make([]event.Event, 0, len(ran))
	var stop event.Event
	for _, g := range guarded {
		evs = append(evs, g.Events...)
		if stop == nil {
			stop = g.Stop
		}
	}
	for _, e := range ran {
		if e != nil {
			evs = append(evs, e)
		}
	}
	return results, evs, stop, nil
}

// attach records a call's outcome on its ToolEvent as the member key,
// for the traces (semantic reads "result" and "error").
func attach(ev event.Event, key, s string) {
	raw, _ := json.Marshal(s)
	_ = event.SetExtra(ev, key, raw) // valid JSON, a key the event does not declare
}

// attachTime records when a call started or ended on its ToolEvent, in
// Unix nanoseconds as created_at is, so its span lasts as long as the call.
func attachTime(ev event.Event, key string, t time.Time) {
	_ = event.SetExtra(ev, key, strconv.AppendInt(nil, t.UnixNano(), 10))
}

// callTool calls c, turning a panic into an error (and its stack, for
// the log).
func callTool(ctx context.Context, c Callable, input json.RawMessage) (out string, stack []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err, stack = fmt.Errorf("the tool panicked: %v", r), debug.Stack()
		}
	}()
	out, err = c.Call(ctx, input)
	return out, nil, err
}
