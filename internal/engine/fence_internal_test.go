package engine

import (
	"encoding/json"
	"testing"

	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// answerOf reads the request id from every shape of answer, and an answer
// without a request gives "" rather than a panic.
func TestAnswerOf(t *testing.T) {
	req := &event.HumanInTheLoopInputRequestEvent{}
	req.EventID = "req1"
	req.Topic = &event.Topic{AgentClass: event.Str("C")}
	bot := &event.BotInTheLoopRequestEvent{Topic: &event.Topic{RunID: event.Str("r")}}
	bot.EventID = "req2"
	timeout := &event.HumanInTheLoopTimeoutEvent{}
	timeout.RequestEventID = "req4"
	for _, tc := range []struct {
		ev    event.Event
		id    string
		topic bool
	}{
		{&event.HumanInTheLoopInputResponseEvent{RequestEvent: req}, "req1", true},
		{&event.HumanInTheLoopResponseEvent{RequestEvent: req}, "req1", true}, // the base type: request_event as an Event
		{&event.BotInTheLoopResponseEvent{RequestEvent: bot}, "req2", true},
		{&event.AgentInTheLoopExceptionEvent{RequestEventID: "req3"}, "req3", false},
		{timeout, "req4", false},
		{&event.HumanInTheLoopInputResponseEvent{}, "", false},
		{&event.HumanInTheLoopResponseEvent{}, "", false},
		{&event.HumanInTheLoopResponseEvent{RequestEvent: (*event.HumanInTheLoopInputRequestEvent)(nil)}, "", false},
	} {
		if !isAnswer(tc.ev) {
			t.Errorf("%s is not an answer", event.Name(tc.ev))
		}
		id, tp := answerOf(tc.ev)
		if id != tc.id || (tp != nil) != tc.topic {
			t.Errorf("answerOf(%s) = %q, topic %v; want %q, topic %v", event.Name(tc.ev), id, tp != nil, tc.id, tc.topic)
		}
	}
	for _, q := range []event.Event{req, bot, &event.AgentInTheLoopRequestEvent{}} {
		if !isQuestion(q) || isAnswer(q) {
			t.Errorf("%s: question %v, answer %v", event.Name(q), isQuestion(q), isAnswer(q))
		}
	}
}

// The identity record is encoding/json's encoding of the identity, also for
// ids that need escaping, and reads back as what was recorded.
func TestNewIdentityEncoding(t *testing.T) {
	for _, tp := range []topic.Agent{
		{Class: "C", ID: "profile", Thread: "66b9f0a1c2d3e4f5a6b7c8d0", Run: "r"},
		{Class: "C", ID: `a"b\c<d>&é`, Thread: "t\u2028x", Run: "r"},
	} {
		id, raw, err := newIdentity(tp, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(id)
		if raw != string(want) {
			t.Fatalf("identity record %s, encoding/json gives %s", raw, want)
		}
		back, err := parseIdentity(store.RunKey{Class: "C", Run: "r"}, raw)
		if err != nil {
			t.Fatal(err)
		}
		if back.Key != id.Key || back.AgentID != tp.ID || back.ThreadID != tp.Thread || string(back.secret) != string(id.secret) {
			t.Fatalf("read back %+v, recorded %+v", back, id)
		}
	}
}
