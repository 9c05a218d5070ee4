package hitl_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/topic"
)

func start() *event.UserMessageEvent {
	return &event.UserMessageEvent{Messages: []event.ChatMessage{event.Text(event.RoleUser, "8")}}
}

func TestDelegateDefaults(t *testing.T) {
	s := start()
	r, err := hitl.Delegate("Worker", "w1", s)
	if err != nil {
		t.Fatal(err)
	}
	if !r.ShareThreadID || !r.ShareDisplayID || r.ShareRunID || r.TimeoutSeconds != nil {
		t.Errorf("share flags/timeout %v %v %v %v, want the reference's defaults true true false nil",
			r.ShareThreadID, r.ShareDisplayID, r.ShareRunID, r.TimeoutSeconds)
	}
	if s.EventID == "" || r.StartEvent != event.Event(s) {
		t.Errorf("start event not carried with an id: %+v", r.StartEvent)
	}
	ot := r.OtherAgentTopic
	if *ot.AgentClass != "Worker" || *ot.AgentID != "w1" || *ot.EventType != string(topic.Control) ||
		*ot.EventName != "UserMessageEvent" || !event.IsObjectID(*ot.EventID) || *ot.EventID == s.EventID {
		t.Errorf("other_agent_topic %s %s %s %s %s", *ot.AgentClass, *ot.AgentID, *ot.EventType, *ot.EventName, *ot.EventID)
	}
	// It travels as the reference's request: decodes to the same flags.
	data, err := event.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := event.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	br, ok := back.(*event.AgentInTheLoopRequestEvent)
	if !ok || !br.ShareThreadID || !br.ShareDisplayID || br.ShareRunID || !event.IsUserMessage(br.StartEvent) {
		t.Errorf("round trip %T %+v", back, back)
	}
}

func TestDelegateOptions(t *testing.T) {
	r, err := hitl.Delegate("Worker", "w1", start(), hitl.ShareThread(false), hitl.ShareDisplay(false),
		hitl.ShareRun(true), hitl.DelegateTimeout(1500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if r.ShareThreadID || r.ShareDisplayID || !r.ShareRunID || r.TimeoutSeconds == nil || *r.TimeoutSeconds != 1.5 {
		t.Errorf("options not applied: %v %v %v %v", r.ShareThreadID, r.ShareDisplayID, r.ShareRunID, r.TimeoutSeconds)
	}
}

func TestDelegateRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		name, class, id string
		start           event.Event
		opts            []hitl.DelegateOption
		want            string
	}{
		{"blank class", "", "w1", start(), nil, "agent_class"},
		{"blank id", "Worker", " ", start(), nil, "agent_id"},
		{"dotted class", "a.b", "w1", start(), nil, "agent_class"},
		{"no start", "Worker", "w1", nil, nil, "no start event"},
		{"not a start", "Worker", "w1", &event.ChunkEvent{}, nil, "not a start event"},
		{"zero timeout", "Worker", "w1", start(), []hitl.DelegateOption{hitl.DelegateTimeout(0)}, "not positive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := hitl.Delegate(c.class, c.id, c.start, c.opts...)
			if err == nil || r != nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Delegate = %v, %v; want an error naming %q", r, err, c.want)
			}
			var te *topic.TokenError
			if strings.HasPrefix(c.want, "agent_") && !errors.As(err, &te) {
				t.Errorf("error %v does not wrap the token error", err)
			}
		})
	}
}
