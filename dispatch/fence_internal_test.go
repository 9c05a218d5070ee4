package dispatch

import (
	"testing"

	"github.com/saap-go/agent/event"
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
