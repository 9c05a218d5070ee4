package hitl

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// A DelegateOption changes the request Delegate builds.
type DelegateOption func(*event.AgentInTheLoopRequestEvent) error

// ShareThread says whether the delegate's run joins the caller's thread
// (the default) or gets a thread of its own.
func ShareThread(share bool) DelegateOption {
	return func(r *event.AgentInTheLoopRequestEvent) error { r.ShareThreadID = share; return nil }
}

// ShareDisplay says whether the delegate's display events go to the
// caller's display (the default), so a user interface shows them with the
// caller's, or to a display of their own.
func ShareDisplay(share bool) DelegateOption {
	return func(r *event.AgentInTheLoopRequestEvent) error { r.ShareDisplayID = share; return nil }
}

// ShareRun says whether the delegate's run reuses the caller's run id. It
// is off by default and rarely useful: the delegate's run state is kept
// apart from the caller's in any case.
func ShareRun(share bool) DelegateOption {
	return func(r *event.AgentInTheLoopRequestEvent) error { r.ShareRunID = share; return nil }
}

// DelegateTimeout bounds the wait for the delegate's answer. When it
// expires first, the caller's run gets a timeout event carrying the
// request's event id instead of an answer. Without it the caller waits
// for ever.
func DelegateTimeout(d time.Duration) DelegateOption {
	return func(r *event.AgentInTheLoopRequestEvent) error {
		if d <= 0 {
			return fmt.Errorf("hitl: delegation timeout %v is not positive", d)
		}
		s := d.Seconds()
		r.TimeoutSeconds = &s
		return nil
	}
}

// Delegate returns the request a step returns to hand start to another
// agent: the agent class agentClass, instance agentID. The caller's runtime
// starts the delegate's run with start and brings its outcome back into the
// caller's run as an AgentInTheLoopResponseEvent (the delegate's stop
// event) or an AgentInTheLoopExceptionEvent (its exception), both carrying
// RequestEventID, the request's event id; a later step takes them as input.
// By default the delegate shares the caller's thread and display and runs
// under a new run id.
//
// start must be a start event (a UserMessageEvent is one); it gets an
// event id if it has none. A blank or invalid class or id is an error,
// since it would be a token of the delegate's subject.
func Delegate(agentClass, agentID string, start event.Event, opts ...DelegateOption) (*event.AgentInTheLoopRequestEvent, error) {
	if err := topic.ValidateToken("agent_class", agentClass); err != nil {
		return nil, fmt.Errorf("hitl: delegate: %w", err)
	}
	if err := topic.ValidateToken("agent_id", agentID); err != nil {
		return nil, fmt.Errorf("hitl: delegate: %w", err)
	}
	if start == nil || start.EventBase() == nil {
		return nil, errors.New("hitl: delegate: no start event")
	}
	if !event.IsStart(start) {
		return nil, fmt.Errorf("hitl: delegate: %s is not a start event", event.Name(start))
	}
	event.Stamp(start)
	r := &event.AgentInTheLoopRequestEvent{
		StartEvent: start,
		OtherAgentTopic: &event.Topic{
			AgentClass: event.Str(agentClass),
			AgentID:    event.Str(agentID),
			EventType:  event.Str(string(topic.Control)),
			EventName:  event.Str(event.Name(start)),
			EventID:    event.Str(event.NewID()),
		},
		ShareThreadID:  true,
		ShareDisplayID: true,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(r); err != nil {
			return nil, err
		}
	}
	if r.TimeoutSeconds != nil && (math.IsNaN(*r.TimeoutSeconds) || *r.TimeoutSeconds <= 0) {
		return nil, fmt.Errorf("hitl: delegate: timeout_seconds %v is not positive", *r.TimeoutSeconds)
	}
	return r, nil
}

// DelegateTopic returns the subject of the delegate run that req, asked by
// the run on caller, starts, as the reference chooses it: the caller's
// thread, display and run where the request shares them, new ones derived
// from the request's id otherwise (every delivery of one request chooses
// the same), and the start event's name with other_agent_topic.event_id as
// the subject's event id.
func DelegateTopic(caller topic.Agent, req *event.AgentInTheLoopRequestEvent) (topic.Agent, error) {
	if req == nil || req.EventID == "" {
		return topic.Agent{}, errors.New("AgentInTheLoopRequestEvent has no event_id")
	}
	if req.StartEvent == nil || req.StartEvent.EventBase() == nil || !event.IsStart(req.StartEvent) {
		return topic.Agent{}, fmt.Errorf("AgentInTheLoopRequestEvent %s carries no start event", req.EventID)
	}
	ot := req.OtherAgentTopic
	val := func(p *string) string {
		if p == nil {
			return ""
		}
		return strings.TrimSpace(*p)
	}
	if ot == nil || val(ot.AgentClass) == "" || val(ot.AgentID) == "" {
		return topic.Agent{}, fmt.Errorf("AgentInTheLoopRequestEvent %s: other_agent_topic names no agent class and id", req.EventID)
	}
	t := topic.Agent{
		Class: val(ot.AgentClass), ID: val(ot.AgentID),
		Thread: delegateID(req.EventID, "thread"), Display: delegateID(req.EventID, "display"), Run: delegateID(req.EventID, "run"),
		Type: topic.Control, Name: event.Name(req.StartEvent), EventID: val(ot.EventID),
	}
	if req.ShareThreadID {
		t.Thread = caller.Thread
	}
	if req.ShareDisplayID {
		t.Display = caller.Display
	}
	if req.ShareRunID {
		t.Run = caller.Run
	}
	if t.EventID == "" {
		t.EventID = delegateID(req.EventID, "start")
	}
	if _, err := t.Subject(); err != nil {
		return topic.Agent{}, fmt.Errorf("AgentInTheLoopRequestEvent %s: delegate subject: %w", req.EventID, err)
	}
	return t, nil
}

// delegateID is an ObjectId-shaped id derived from a request id.
func delegateID(requestID, purpose string) string {
	h := sha256.Sum256([]byte("aitl\x00" + purpose + "\x00" + requestID))
	return hex.EncodeToString(h[:12])
}
