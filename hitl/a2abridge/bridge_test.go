package a2abridge_test

import (
	"strings"
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/hitl/a2abridge"
)

func TestNewRefusesBadRemotes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		class   string
		remotes map[string]a2abridge.Remote
		want    string
	}{
		{"blank class", " ", map[string]a2abridge.Remote{"x": {URL: "http://x"}}, "blank class"},
		{"no remotes", "Bridge", nil, "no remote agents"},
		{"not http", "Bridge", map[string]a2abridge.Remote{"x": {URL: "ftp://x"}}, `remote "x"`},
	} {
		if _, err := a2abridge.New(tc.class, tc.remotes); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	b, err := a2abridge.New("Bridge", map[string]a2abridge.Remote{"x": {URL: "https://x.example"}})
	if err != nil || b.Class() != "Bridge" || len(b.Steps()) != 1 {
		t.Fatalf("New: %v %v", b, err)
	}
}

func TestDelegateBuildsTheAITLRequest(t *testing.T) {
	user := &event.UserIdentity{ID: "u1", Name: "Ursula"}
	r, err := a2abridge.Delegate("Bridge", "translator", user, "Bonjour", hitl.DelegateTimeout(90e9))
	if err != nil {
		t.Fatal(err)
	}
	if *r.OtherAgentTopic.AgentClass != "Bridge" || *r.OtherAgentTopic.AgentID != "translator" ||
		r.TimeoutSeconds == nil || *r.TimeoutSeconds != 90 {
		t.Fatalf("request %+v", r)
	}
	m, ok := r.StartEvent.(*event.UserMessageEvent)
	if !ok || m.User.ID != "u1" || m.Messages[0].Content() != "Bonjour" {
		t.Fatalf("start event %+v", r.StartEvent)
	}
	if _, err := a2abridge.Delegate("Bridge", "translator", nil, "x"); err == nil {
		t.Error("a delegation without a user was accepted")
	}
	if _, err := a2abridge.Delegate("Bridge", "bad id", user, "x"); err == nil {
		t.Error("an agent id that cannot be a subject token was accepted")
	}
	stop := &event.LLMStopEvent{}
	stop.OutputMessages = []event.Message{event.MessageFromString("assistant", "Hello")}
	if got := a2abridge.Answer(&event.AgentInTheLoopResponseEvent{StopEvent: stop}); got != "Hello" {
		t.Errorf("Answer = %q", got)
	}
}
