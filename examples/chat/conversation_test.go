package main

import (
	"strings"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

func chatHarness(t *testing.T, budget int) *agenttest.Harness {
	t.Helper()
	a := NewChatAgent(Scripted(), "scripted", budget, nil)
	wf, err := step.NewWorkflow(a.Class(), a.Steps()...)
	if err != nil {
		t.Fatal(err)
	}
	return agenttest.New(t, wf, agenttest.FailOnStall())
}

func turn(msgs ...event.ChatMessage) *event.UserMessageEvent {
	return &event.UserMessageEvent{Locale: "en", User: &event.UserIdentity{}, Messages: msgs}
}

// A thread of several turns, each start event carrying the thread's
// conversation so far (as the gateway fills it from the thread's history):
// the first turn titles the thread, every turn gets follow-ups, and the
// agent answers the last message.
func TestChatHoldsTheThreadsConversation(t *testing.T) {
	h := chatHarness(t, 100_000)
	var history []event.ChatMessage
	for i, q := range []string{"Hello there", "What can you do?", "Why is the sky blue?"} {
		history = append(history, event.Text(event.RoleUser, q))
		res := h.Start(turn(history...), agenttest.Thread("thread-1"))
		stop, ok := agenttest.TerminalAs[*event.LLMStopEvent](res)
		if !ok {
			t.Fatalf("turn %d ended %s", i, res.Ended())
		}
		lim := res.Get("LimitChatHistoryEvent")[0].(*event.LimitChatHistoryEvent)
		if len(lim.LimitedHistory) != len(history) {
			t.Errorf("turn %d: the agent saw %d messages, want %d", i, len(lim.LimitedHistory), len(history))
		}
		if want := 1 - min(i, 1); res.Count("ConversationTitleEvent") != want {
			t.Errorf("turn %d: %d titles, want %d", i, res.Count("ConversationTitleEvent"), want)
		}
		if res.Count("FollowUpQuestionsEvent") != 1 {
			t.Errorf("turn %d: no follow-up questions", i)
		}
		answer := stop.OutputMessages[len(stop.OutputMessages)-1].Content()
		if i == 2 && !strings.Contains(answer, "Why is the sky blue?") {
			t.Errorf("turn %d answered %q", i, answer)
		}
		history = append(history, event.Text(event.RoleAssistant, answer))
	}
}

// A small budget keeps the newest turns; a message alone over it is
// refused with the platform's input_too_large stop.
func TestChatBudget(t *testing.T) {
	h := chatHarness(t, 200)
	var history []event.ChatMessage
	for range 10 {
		history = append(history, event.Text(event.RoleUser, strings.Repeat("question ", 10)),
			event.Text(event.RoleAssistant, strings.Repeat("answer ", 10)))
	}
	res := h.Start(turn(append(history, event.Text(event.RoleUser, "last"))...))
	lim := res.Get("LimitChatHistoryEvent")[0].(*event.LimitChatHistoryEvent).LimitedHistory
	if len(lim) >= 21 || lim[len(lim)-1].Content() != "last" || lim[0].Role != event.RoleUser {
		t.Errorf("kept %d of 21 messages: want the newest whole turns and the last message", len(lim))
	}
	res = h.Start(turn(event.Text(event.RoleUser, strings.Repeat("x", 1000))))
	if stop, ok := agenttest.TerminalAs[*event.RefusalStopEvent](res); !ok || stop.Reason != event.RefusalInputTooLarge {
		t.Errorf("an oversized message ended %s", res.Ended())
	}
}

// A fact a user told the agent in one thread is recalled in another
// thread of the same user, from an index on disk that was closed and
// opened again in between; another user asking the same gets none of it.
func TestChatRemembersAcrossThreads(t *testing.T) {
	dir := t.TempDir()
	ada := &event.UserIdentity{ID: "ada"}
	ask := func(user *event.UserIdentity, thread, text string) (*agenttest.Result, string) {
		t.Helper()
		mem, err := OpenMemories(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := mem.Close(); err != nil {
				t.Error(err)
			}
		}()
		a := NewChatAgent(Scripted(), "scripted", 100_000, mem)
		wf, err := step.NewWorkflow(a.Class(), a.Steps()...)
		if err != nil {
			t.Fatal(err)
		}
		h := agenttest.New(t, wf, agenttest.FailOnStall())
		res := h.Start(&event.UserMessageEvent{Locale: "en", User: user, Messages: []event.ChatMessage{event.Text(event.RoleUser, text)}},
			agenttest.Thread(thread))
		stop, ok := agenttest.TerminalAs[*event.LLMStopEvent](res)
		if !ok {
			t.Fatalf("%s in %s ended %s", text, thread, res.Ended())
		}
		return res, stop.OutputMessages[len(stop.OutputMessages)-1].Content()
	}
	ask(ada, "thread-1", "My favourite colour is green.")
	if _, answer := ask(ada, "thread-2", "What is my favourite colour?"); !strings.Contains(answer, "My favourite colour is green.") {
		t.Errorf("in a new thread the agent answered %q, want what Ada told it before", answer)
	}
	res, answer := ask(&event.UserIdentity{ID: "bob"}, "thread-3", "What is my favourite colour?")
	if strings.Contains(answer, "green") {
		t.Errorf("Bob was answered %q: Ada's memory", answer)
	}
	for _, e := range res.Get("LimitChatHistoryEvent") {
		for _, m := range e.(*event.LimitChatHistoryEvent).LimitedHistory {
			if strings.Contains(m.Content(), "green") {
				t.Errorf("Bob's history holds %q", m.Content())
			}
		}
	}
}
