package conversation_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/conversation"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

func TestAgentTrimsToItsBudget(t *testing.T) {
	m := newModel()
	c := &conversation.Conversation{Provider: m.provider(), Model: "task", Budget: 320, Counter: &perMessage{}}
	h := agenttest.New(t, agentOf(t, c, m.provider()), agenttest.FailOnStall())
	var msgs []event.ChatMessage
	for range 10 {
		msgs = append(msgs, u(strings.Repeat("q", 40)), a(strings.Repeat("r", 40)))
	}
	res := h.Start(userMessage(append(msgs, u("last"))...))
	agenttest.Equal(t, res.Steps(), []string{"limit_chat_history", "answer"})
	lim := res.Get("LimitChatHistoryEvent")[0].(*event.LimitChatHistoryEvent)
	if n := len(lim.LimitedHistory); n != 7 || lim.LimitedHistory[n-1].Content() != "last" {
		t.Errorf("limited history %d messages, want the three newest turns and the last message", n)
	}
	if _, ok := agenttest.TerminalAs[*event.LLMStopEvent](res); !ok {
		t.Errorf("terminal %s, want LLMStopEvent", res.Ended())
	}
}

func TestAgentSummarisesTheOldestTurns(t *testing.T) {
	m := newModel()
	c := &conversation.Conversation{Provider: m.provider(), Model: "task", Budget: 420, Counter: &perMessage{},
		Summarise: true, SummaryTokens: 100}
	h := agenttest.New(t, agentOf(t, c, m.provider()), agenttest.FailOnStall())
	var msgs []event.ChatMessage
	msgs = append(msgs, u("I live in Bern."), a("Noted."))
	for range 6 {
		msgs = append(msgs, u(strings.Repeat("q", 40)), a(strings.Repeat("r", 40)))
	}
	res := h.Start(userMessage(append(msgs, u("last"))...), agenttest.Thread("th1"))
	lim := res.Get("LimitChatHistoryEvent")[0].(*event.LimitChatHistoryEvent).LimitedHistory
	if lim[0].Role != event.RoleSystem || !strings.Contains(lim[0].Content(), m.summary) {
		t.Fatalf("history starts %v, want the summary as a system message", texts(lim[:1]))
	}
	if m.count("summary") != 1 || !strings.Contains(m.prompts["summary"][0], "I live in Bern.") {
		t.Fatalf("summary calls %d, prompts %q: want one, of the turns left out", m.count("summary"), m.prompts["summary"])
	}
	// The next turn of the thread: the summary is extended, not written
	// again from the start.
	msgs = append(msgs, u("last"), a("answer"))
	res = h.Start(userMessage(append(msgs, u("next"))...), agenttest.Thread("th1"))
	if m.count("summary") != 2 || !strings.HasPrefix(m.prompts["summary"][1], "Summary so far: "+m.summary) ||
		strings.Contains(m.prompts["summary"][1], "I live in Bern.") {
		t.Errorf("second summary prompt %q: want the summary so far and the newly dropped turns only", m.prompts["summary"][1:])
	}
	// A re-run of the same turn (the same dropped turns) reuses it.
	h.Start(userMessage(append(msgs, u("next"))...), agenttest.Thread("th1"))
	if m.count("summary") != 2 {
		t.Errorf("summary calls %d after a repeated turn, want 2", m.count("summary"))
	}
	if _, ok := agenttest.TerminalAs[*event.LLMStopEvent](res); !ok {
		t.Errorf("terminal %s, want LLMStopEvent", res.Ended())
	}
}

func TestAgentRefusesATurnTooLarge(t *testing.T) {
	m := newModel()
	c := &conversation.Conversation{Provider: m.provider(), Model: "task", AnswerModel: "big", Budget: 100, Counter: &perMessage{}}
	h := agenttest.New(t, agentOf(t, c, m.provider()), agenttest.FailOnStall())
	res := h.Start(userMessage(u("hi"), a("hello"), u(strings.Repeat("x", 200))))
	stop, ok := agenttest.TerminalAs[*event.RefusalStopEvent](res)
	if !ok || stop.Reason != event.RefusalInputTooLarge {
		t.Fatalf("terminal %s, want RefusalStopEvent input_too_large", res.Ended())
	}
	want := conversation.DefaultTexts("en").InputTooLarge
	chunks := res.Get("ChunkEvent")
	if len(chunks) != 1 || chunks[0].(*event.ChunkEvent).Content != want || stop.OutputMessages[0].Content() != want ||
		*stop.ChatModelName != "big" || res.Count("ThoughtEvent") != 1 {
		t.Errorf("refusal chunks %v, stop %+v: want the answer streamed and in the stop, with a thought", chunks, stop)
	}
	if res.Count("LimitChatHistoryEvent") != 0 || len(m.calls) != 0 {
		t.Errorf("the turn went on: %v, model calls %v", res.Names(), m.calls)
	}
}

func TestAgentCondensesTheQuestion(t *testing.T) {
	m := newModel()
	c := &conversation.Conversation{Provider: m.provider(), Model: "task", CondenseQuestion: true}
	h := agenttest.New(t, agentOf(t, c, m.provider()), agenttest.FailOnStall())
	res := h.Start(userMessage(u("I want to know about VAT."), a("Sure."), u("What is the rate?")))
	ev := res.Get("StandaloneQuestionCondenserEvent")
	if len(ev) != 1 || ev[0].(*event.StandaloneQuestionCondenserEvent).CondensedQuestion() != m.condense {
		t.Fatalf("events %v, want the condensed question", res.Names())
	}
	if !strings.Contains(m.prompts["condense"][0], "VAT") {
		t.Errorf("condense prompt %q: want the history in it", m.prompts["condense"][0])
	}
	// A first message is its own standalone question: no model call.
	res = h.Start(userMessage(u("What is the VAT rate?")))
	if q := res.Get("StandaloneQuestionCondenserEvent")[0].(*event.StandaloneQuestionCondenserEvent).CondensedQuestion(); q != "What is the VAT rate?" || m.count("condense") != 1 {
		t.Errorf("first message condensed to %q with %d calls", q, m.count("condense"))
	}
}

func TestAgentRefusesAnEmptyCondensation(t *testing.T) {
	m := newModel()
	m.condense = "  \"\" "
	c := &conversation.Conversation{Provider: m.provider(), Model: "task", CondenseQuestion: true}
	wf := agentOf(t, c, m.provider())
	h := agenttest.New(t, wf, agenttest.FailOnStall())
	res := h.Start(userMessage(u("Tell me about VAT."), a("Sure."), u("and?")))
	stop, ok := agenttest.TerminalAs[*event.RefusalStopEvent](res)
	if !ok || stop.Reason != event.RefusalCondensationEmpty || stop.OutputMessages[0].Content() != conversation.DefaultTexts("en").CondensationEmpty {
		t.Fatalf("terminal %s, want RefusalStopEvent condensation_empty with the message", res.Ended())
	}
	if m.count("answer") != 0 {
		t.Errorf("the answer ran after the refusal")
	}
}

func TestAgentTitlesTheThreadOnce(t *testing.T) {
	m := newModel()
	c := &conversation.Conversation{Provider: m.provider(), Model: "task", TitleThread: true}
	h := agenttest.New(t, agentOf(t, c, m.provider()), agenttest.FailOnStall())
	res := h.Start(userMessage(u("What is the VAT rate?")), agenttest.Thread("t1"))
	titles := res.Get("ConversationTitleEvent")
	if len(titles) != 1 || titles[0].(*event.ConversationTitleEvent).Title != "Swiss taxes" {
		t.Fatalf("events %v, want one ConversationTitleEvent", res.Names())
	}
	var order []string
	for _, p := range res.Events() {
		order = append(order, event.Name(p.Event))
	}
	if i, j := slices.Index(order, "ConversationTitleEvent"), slices.Index(order, "LLMStopEvent"); i < 0 || i > j {
		t.Errorf("published %v: the title must come before the stop", order)
	}
	res = h.Start(userMessage(u("What is the VAT rate?"), a("8.1%"), u("And in 2020?")), agenttest.Thread("t1"))
	if res.Count("ConversationTitleEvent") != 0 || m.count("title") != 1 {
		t.Errorf("second turn: %d titles, %d title calls; want none and one", res.Count("ConversationTitleEvent"), m.count("title"))
	}
	// Another thread gets its own title.
	res = h.Start(userMessage(u("Hello")), agenttest.Thread("t2"))
	if res.Count("ConversationTitleEvent") != 1 {
		t.Errorf("another thread: %v", res.Names())
	}
}

func TestAgentLeavesAThreadWithoutTopicUntitled(t *testing.T) {
	m := newModel()
	m.title = `{"title": ""}`
	c := &conversation.Conversation{Provider: m.provider(), Model: "task", TitleThread: true}
	h := agenttest.New(t, agentOf(t, c, m.provider()), agenttest.FailOnStall())
	h.Start(userMessage(u("Hi")), agenttest.Thread("t1"))
	m.title = `{"title": "Swiss taxes"}`
	res := h.Start(userMessage(u("Hi"), a("Hello"), u("VAT?")), agenttest.Thread("t1"))
	if res.Count("ConversationTitleEvent") != 1 || m.count("title") != 2 {
		t.Errorf("a later turn: %v, %d title calls; want the title, two calls", res.Names(), m.count("title"))
	}
}

func TestAgentSuggestsFollowUps(t *testing.T) {
	m := newModel()
	c := &conversation.Conversation{Provider: m.provider(), Model: "task", FollowUps: true, MaxFollowUps: 2}
	h := agenttest.New(t, agentOf(t, c, m.provider()), agenttest.FailOnStall())
	for turn := range 2 {
		res := h.Start(userMessage(u("What is the VAT rate?")), agenttest.Thread("t1"))
		ev := res.Get("FollowUpQuestionsEvent")
		if len(ev) != 1 {
			t.Fatalf("turn %d: events %v, want one FollowUpQuestionsEvent", turn, res.Names())
		}
		agenttest.Equal(t, ev[0].(*event.FollowUpQuestionsEvent).Questions, []string{"What about cantonal taxes?", "When is the deadline?"})
	}
	if !strings.Contains(m.prompts["follow_ups"][0], "assistant: The answer is 8.1%.") {
		t.Errorf("follow-up prompt %q: want the answer in it", m.prompts["follow_ups"][0])
	}
}

func TestAgentAnswersMetaQuestions(t *testing.T) {
	m := newModel()
	c := &conversation.Conversation{Provider: m.provider(), Model: "task", FollowUps: true,
		Meta: &conversation.Meta{Name: "TaxBot", Description: "Answers questions on Swiss taxes."}}
	h := agenttest.New(t, agentOf(t, c, m.provider()), agenttest.FailOnStall())
	m.meta = `{"meta": true, "category": "capabilities", "reasoning": "asks what the agent can do"}`
	res := h.Start(userMessage(u("What can you do?")))
	agenttest.Equal(t, res.Steps(), []string{"detect_meta_question", "answer_meta_question"})
	det := res.Get("MetaQuestionDetectedEvent")[0].(*conversation.MetaQuestionDetectedEvent)
	if det.Category != conversation.MetaCapabilities || det.UserQuery != "What can you do?" {
		t.Errorf("detected %+v", det)
	}
	if _, ok := agenttest.TerminalAs[*event.LLMStopEvent](res); !ok || res.Count("FollowUpQuestionsEvent") != 1 {
		t.Errorf("terminal %s, events %v: want the answer with follow-ups", res.Ended(), res.Names())
	}
	m.meta = `{"meta": false, "reasoning": "a task"}`
	res = h.Start(userMessage(u("What is the VAT rate?")))
	agenttest.Equal(t, res.Steps(), []string{"detect_meta_question", "limit_chat_history", "answer"})
	// No verdict clears the message.
	m.meta = "I am not sure."
	res = h.Start(userMessage(u("What is the VAT rate?")))
	if res.Count("NotAMetaQuestionEvent") != 1 || res.Count("LLMStopEvent") != 1 {
		t.Errorf("no verdict: %v", res.Names())
	}
}

func TestRecallJoinsTheSystemMessages(t *testing.T) {
	m := newModel()
	c := &conversation.Conversation{Provider: m.provider(), Model: "task", Budget: 1000, Counter: &perMessage{},
		Recall: func(_ step.Context, msg *event.UserMessageEvent) ([]event.ChatMessage, error) {
			return []event.ChatMessage{u("The user's name is Anna.")}, nil
		}}
	h := agenttest.New(t, agentOf(t, c, m.provider()), agenttest.FailOnStall())
	res := h.Start(userMessage(sys("Be brief."), u("What is my name?")))
	lim := res.Get("LimitChatHistoryEvent")[0].(*event.LimitChatHistoryEvent).LimitedHistory
	agenttest.Equal(t, texts(lim), []string{"system:Be brief.", "system:The user's name is Anna.", "user:What is my name?"})
}
