package hitl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// Option changes a request a helper builds.
type Option func(*options)

type options struct {
	timeout time.Duration
	set     bool
}

// Timeout makes the question time out after d: if no answer has arrived
// by then, the engine publishes one timeout event into the waiting run
// (HumanInTheLoopTimeoutEvent for a HITL question), which a step can take
// as its input. d counts from the request's creation and must be positive.
func Timeout(d time.Duration) Option {
	return func(o *options) { o.timeout, o.set = d, true }
}

// ErrInvalid is wrapped by the errors of the helpers: a blank question or
// tool name, or a timeout that is not positive.
var ErrInvalid = errors.New("hitl: invalid request")

// Input asks a human for free text. The answer arrives as a
// HumanInTheLoopInputResponseEvent.
func Input(question string, opts ...Option) (*event.HumanInTheLoopInputRequestEvent, error) {
	req := event.New[event.HumanInTheLoopInputRequestEvent]()
	return req, build(req, &req.HumanInTheLoopRequestEvent, question, event.HITLInput, "HumanInTheLoopInputResponseEvent", opts)
}

// Confirm asks a human for yes or no. The answer arrives as a
// HumanInTheLoopConfirmationResponseEvent.
func Confirm(question string, opts ...Option) (*event.HumanInTheLoopConfirmationRequestEvent, error) {
	req := event.New[event.HumanInTheLoopConfirmationRequestEvent]()
	return req, build(req, &req.HumanInTheLoopRequestEvent, question, event.HITLConfirmation, "HumanInTheLoopConfirmationResponseEvent", opts)
}

// Chat asks a human to answer in the chat: the user's next message in the
// thread becomes the answer, a HumanInTheLoopChatResponseEvent.
func Chat(question string, opts ...Option) (*event.HumanInTheLoopChatRequestEvent, error) {
	req := event.New[event.HumanInTheLoopChatRequestEvent]()
	return req, build(req, &req.HumanInTheLoopRequestEvent, question, event.HITLChat, "HumanInTheLoopChatResponseEvent", opts)
}

// Tool is the tool call a ToolApproval question asks about.
type Tool struct {
	// CallID is the id of the model's tool call.
	CallID string
	// Name is the tool's name.
	Name string
	// Kind says what sort of tool it is; chat clients may show it.
	Kind string
	// Arguments are the call's arguments, each as raw JSON.
	Arguments map[string]json.RawMessage
}

// ToolApproval asks a human to approve a tool call before it runs. Chat
// clients show it as a yes/no confirmation; the answer arrives as a
// HumanInTheLoopConfirmationResponseEvent.
func ToolApproval(question string, tool Tool, opts ...Option) (*event.ToolApprovalRequestEvent, error) {
	req := event.New[event.ToolApprovalRequestEvent]()
	if strings.TrimSpace(tool.CallID) == "" || strings.TrimSpace(tool.Name) == "" || strings.TrimSpace(tool.Kind) == "" {
		return nil, fmt.Errorf("%w: ToolApproval needs the tool's CallID, Name and Kind (got %q, %q, %q)", ErrInvalid, tool.CallID, tool.Name, tool.Kind)
	}
	for k, v := range tool.Arguments {
		if !json.Valid(v) {
			return nil, fmt.Errorf("%w: ToolApproval: argument %q is not valid JSON", ErrInvalid, k)
		}
	}
	req.ToolCallID, req.Name, req.Kind = tool.CallID, tool.Name, tool.Kind
	if tool.Arguments != nil {
		req.Arguments = tool.Arguments
	}
	err := build(req, &req.HumanInTheLoopRequestEvent, question, event.HITLConfirmation, "HumanInTheLoopConfirmationResponseEvent", opts)
	if err != nil {
		return nil, err
	}
	return req, nil
}

// build fills a HITL request as the reference's factories do: the
// question, the HITL type and a topic naming the response event, which the
// engine completes with the run's ids when the request is published.
func build(ev event.Event, base *event.HumanInTheLoopRequestEvent, question, kind, response string, opts []Option) error {
	if strings.TrimSpace(question) == "" {
		return fmt.Errorf("%w: %s with a blank question", ErrInvalid, event.Name(ev))
	}
	// The engine stamps created_at when it publishes the request, on its
	// clock; the timeout counts from then.
	ev.EventBase().CreatedAt = 0
	base.Question, base.HITLType = question, kind
	base.Topic = &event.Topic{EventType: event.Str(string(topic.Control)), EventName: event.Str(response)}
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.set {
		return SetTimeout(ev, o.timeout)
	}
	return nil
}

// SetTimeout gives a question (a HITL, BITL or AITL request) a timeout of
// d. An AgentInTheLoopRequestEvent keeps it in its timeout_seconds field;
// other requests carry it as an extra timeout_seconds member, which the
// reference accepts and keeps. It is part of the request the step returns,
// so it is kept with the step's outputs and survives a crash before the
// request is published.
func SetTimeout(ev event.Event, d time.Duration) error {
	if ev == nil {
		return fmt.Errorf("%w: SetTimeout of a nil event", ErrInvalid)
	}
	if d <= 0 {
		return fmt.Errorf("%w: timeout of %s %v: it must be positive", ErrInvalid, event.Name(ev), d)
	}
	if !event.IsHITLRequest(ev) && !event.IsBITLRequest(ev) && !event.IsAITLRequest(ev) {
		return fmt.Errorf("%w: %s is not a HITL, BITL or AITL request; only questions time out", ErrInvalid, event.Name(ev))
	}
	secs := d.Seconds()
	if q, ok := ev.(*event.AgentInTheLoopRequestEvent); ok {
		q.TimeoutSeconds = &secs
		return nil
	}
	return event.SetExtra(ev, event.TimeoutField, strconv.AppendFloat(nil, secs, 'g', -1, 64))
}

// TimeoutOf returns the timeout a question carries, and false if it has
// none (or an unusable one).
func TimeoutOf(ev event.Event) (time.Duration, bool) {
	d, ok, err := event.QuestionTimeout(ev)
	if err != nil {
		return 0, false
	}
	return d, ok
}
