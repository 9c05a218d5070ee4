package conversation_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/conversation"
	"github.com/saap-go/agent/event"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestWireShapes compares the JSON of every event the capability
// publishes with the reference's shape (testdata/*.json: the reference's
// field names, parents and defaults), ids and times left out.
func TestWireShapes(t *testing.T) {
	m := newModel()
	m.meta = `{"meta": true, "category": "identity", "reasoning": "asks who the agent is"}`
	c := &conversation.Conversation{Provider: m.provider(), Model: "task", TitleThread: true, FollowUps: true,
		Meta: &conversation.Meta{Name: "TaxBot", Description: "Answers questions on Swiss taxes."}}
	h := agenttest.New(t, agentOf(t, c, m.provider()), agenttest.FailOnStall())
	got := map[string]event.Event{}
	collect := func(res *agenttest.Result) {
		for _, p := range res.Events() {
			name := event.Name(p.Event)
			if r, ok := p.Event.(*event.RefusalStopEvent); ok {
				name += "/" + r.Reason
			}
			got[name] = p.Event
		}
	}
	collect(h.Start(userMessage(u("Who are you?"))))
	m.meta = `{"meta": false, "reasoning": "a task"}`
	collect(h.Start(userMessage(u("What is the VAT rate?"))))
	big := &conversation.Conversation{Budget: 10}
	collect(agenttest.New(t, agentOf(t, big, m.provider())).Start(userMessage(u("a message far longer than ten tokens allow"))))
	cond := &conversation.Conversation{Provider: m.provider(), Model: "task", CondenseQuestion: true}
	collect(agenttest.New(t, agentOf(t, cond, m.provider())).Start(userMessage(u("VAT?"), a("Yes."), u("Rate?"))))
	m.condense = ""
	collect(agenttest.New(t, agentOf(t, cond, m.provider())).Start(userMessage(u("VAT?"), a("Yes."), u("Rate?"))))

	for name, file := range map[string]string{
		"ConversationTitleEvent":              "conversation_title.json",
		"FollowUpQuestionsEvent":              "follow_up_questions.json",
		"LimitChatHistoryEvent":               "limit_chat_history.json",
		"StandaloneQuestionCondenserEvent":    "standalone_question.json",
		"MetaQuestionDetectedEvent":           "meta_question_detected.json",
		"NotAMetaQuestionEvent":               "not_a_meta_question.json",
		"RefusalStopEvent/input_too_large":    "refusal_input_too_large.json",
		"RefusalStopEvent/condensation_empty": "refusal_condensation_empty.json",
	} {
		ev, ok := got[name]
		if !ok {
			t.Errorf("no %s was published", name)
			continue
		}
		b, err := event.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		delete(v, "event_id")
		delete(v, "created_at")
		path := filepath.Join("testdata", file)
		if *update {
			out, _ := json.MarshalIndent(v, "", "  ")
			if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]any
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if d := cmp.Diff(want, v); d != "" {
			t.Errorf("%s differs from %s (-want +got):\n%s", name, path, d)
		}
		// And it reads back as the same type.
		if back, err := event.Unmarshal(b); err != nil || event.Name(back) != event.Name(ev) {
			t.Errorf("%s reads back as %v, %v", name, back, err)
		}
	}
}
