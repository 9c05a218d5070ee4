package llm

import (
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// GuardPoint says where in a turn of the tool loop a guard check runs.
type GuardPoint uint8

// Points of a turn where the loop asks its TurnGuard.
const (
	// GuardInput is before the turn's first model call: a stop here means
	// the model never sees the input.
	GuardInput GuardPoint = iota + 1
	// GuardOutput is after the model's final answer, before it becomes the
	// run's answer.
	GuardOutput
	// GuardToolCall is before a tool the model asked for runs.
	GuardToolCall
)

// GuardCheck is what the loop hands its TurnGuard at one point of a turn.
type GuardCheck struct {
	Point GuardPoint
	// Model and Provider name the loop's model and its provider.
	Model, Provider string
	// System is the system prompt of the turn.
	System string
	// Messages is the conversation so far; at GuardInput it ends with the
	// turn's input.
	Messages []Message
	// Answer is the model's answer (GuardOutput).
	Answer *Message
	// ToolUse is the call about to run (GuardToolCall).
	ToolUse *Block
}

// GuardResult is a TurnGuard's decision. The zero value lets the turn go on
// unchanged.
type GuardResult struct {
	// Events are the guards' decisions, returned with the step's results.
	Events []event.Event
	// Stop, when set, ends the run with this event instead of going on:
	// at GuardInput the model is not called, at GuardOutput the answer is
	// not the run's answer, at GuardToolCall the run ends before the tool.
	Stop event.Event
	// Answer, at GuardOutput, replaces the model's answer (for instance with
	// sensitive information removed).
	Answer *Message
	// Refusal, at GuardToolCall, keeps the tool from running; the model
	// reads it as the call's failed result.
	Refusal string
	// Instruction, at GuardInput, is added to the system prompt of the
	// turn: a guard that let the turn go on under a condition says so.
	Instruction string
}

// TurnGuard checks the turns of a tool loop (Loop.Guards); package guard
// implements it. CheckTurn is called concurrently for the calls of one
// answer at GuardToolCall. A TurnGuard with a method Emits() []event.Event
// declares the events it may return on the loop's steps.
type TurnGuard interface {
	CheckTurn(ctx step.Context, c *GuardCheck) (GuardResult, error)
}

// holdChunks makes StreamTo keep the call's ChunkEvents in *dst instead of
// publishing them, so that an answer a guard rewrites is not shown first.
func holdChunks(dst *[]event.Event) StreamOption {
	return func(c *streamConfig) { c.held = dst }
}
