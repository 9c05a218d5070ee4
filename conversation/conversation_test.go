package conversation_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/conversation"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
	"github.com/saap-go/agent/step"
)

// model is a scripted task model: it answers each of the capability's
// calls by its instructions and records the calls it got.
type model struct {
	mu       sync.Mutex
	calls    map[string]int
	prompts  map[string][]string
	title    string
	condense string
	summary  string
	meta     string
}

func newModel() *model {
	return &model{calls: map[string]int{}, prompts: map[string][]string{}, title: `{"title": "Swiss taxes"}`,
		condense: "What is the VAT rate in Switzerland?", summary: "The user lives in Bern and asked about taxes.",
		meta: `{"meta": false, "reasoning": "a task"}`}
}

func (m *model) kind(req *llm.Request) string {
	switch {
	case strings.Contains(req.System, "short title"):
		return "title"
	case strings.Contains(req.System, "questions the user could ask next"):
		return "follow_ups"
	case strings.Contains(req.System, "standalone question"):
		return "condense"
	case strings.Contains(req.System, "Summarise the conversation"):
		return "summary"
	case strings.Contains(req.System, "meta question"):
		return "detect"
	}
	return "answer"
}

func (m *model) provider() llm.Provider {
	return llmtest.Func(func(req *llm.Request) *llmtest.Turn {
		k := m.kind(req)
		m.mu.Lock()
		m.calls[k]++
		if len(req.Messages) > 0 {
			m.prompts[k] = append(m.prompts[k], req.Messages[len(req.Messages)-1].Text())
		}
		m.mu.Unlock()
		switch k {
		case "title":
			return llmtest.Reply(m.title)
		case "follow_ups":
			return llmtest.Reply(`Here: {"questions": ["What about cantonal taxes?", " ", "When is the deadline?"]}`)
		case "condense":
			return llmtest.Reply(m.condense)
		case "summary":
			return llmtest.Reply(m.summary)
		case "detect":
			return llmtest.Reply(m.meta)
		}
		return llmtest.Reply("The answer ", "is 8.1%.")
	})
}

func (m *model) count(k string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[k]
}

// agentOf is a chat agent on the capability: its answer step takes the
// fitted history and ends the turn with Complete.
func agentOf(t *testing.T, c *conversation.Conversation, answerer llm.Provider) *step.Workflow {
	t.Helper()
	respond := func(ctx step.Context, h *event.LimitChatHistoryEvent) (*event.LLMStopEvent, error) {
		call, err := llm.StreamTo(ctx, answerer, c.Request(h.LimitedHistory))
		if err != nil {
			return nil, err
		}
		return conversation.Complete(ctx, c, h.LimitedHistory, call.Response.Message.Text(), call.StopEvent())
	}
	answer := step.New(respond, step.Name("answer"))
	if c.CondenseQuestion {
		// The answer waits for the condensed question, as a RAG agent's
		// retrieval would.
		answer = step.New(func(ctx step.Context, h *event.LimitChatHistoryEvent, _ *event.StandaloneQuestionCondenserEvent) (*event.LLMStopEvent, error) {
			return respond(ctx, h)
		}, step.Name("answer"))
	}
	wf, err := step.NewWorkflow("ChatAgent", append(c.Steps(), answer)...)
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

func userMessage(msgs ...event.ChatMessage) *event.UserMessageEvent {
	return &event.UserMessageEvent{Locale: "en", User: &event.UserIdentity{}, Messages: msgs}
}

func u(s string) event.ChatMessage   { return event.Text(event.RoleUser, s) }
func a(s string) event.ChatMessage   { return event.Text(event.RoleAssistant, s) }
func sys(s string) event.ChatMessage { return event.Text(event.RoleSystem, s) }

// perMessage counts one token per byte of text and ten per message, and
// records how often it was asked.
type perMessage struct {
	mu sync.Mutex
	n  int
}

func (p *perMessage) CountTokens(_ context.Context, req *llm.Request) (int, error) {
	p.mu.Lock()
	p.n++
	p.mu.Unlock()
	n := len(req.System)
	for _, m := range req.Messages {
		n += 10 + len(m.Text())
	}
	return n, nil
}

func texts(msgs []event.ChatMessage) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Role+":"+m.Content())
	}
	return out
}

func TestFitPassesAHistoryThatFits(t *testing.T) {
	pc := &perMessage{}
	c := &conversation.Conversation{Budget: 1000, Counter: pc}
	msgs := []event.ChatMessage{sys("Be brief."), u("Hi"), a("Hello"), u("Tax?")}
	got, err := c.Fit(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	agenttest.Equal(t, texts(got.History), texts(msgs))
	if got.Dropped != 0 || got.Tokens != len("Be brief.")+3*10+len("HiHelloTax?") || pc.n != 1 {
		t.Errorf("dropped %d, tokens %d, counts %d; want 0, the count, one count", got.Dropped, got.Tokens, pc.n)
	}
}

func TestFitTrimsTheOldestTurns(t *testing.T) {
	var msgs []event.ChatMessage
	msgs = append(msgs, sys("S"))
	for i := range 20 {
		msgs = append(msgs, u(strings.Repeat("q", 40)+string(rune('a'+i))), a(strings.Repeat("r", 40)))
	}
	msgs = append(msgs, u("last"))
	pc := &perMessage{}
	// Each turn costs 100, the last message 14, the system prompt 1.
	c := &conversation.Conversation{Budget: 320, Counter: pc}
	got, err := c.Fit(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	h := got.History
	if h[0].Content() != "S" || h[len(h)-1].Content() != "last" || h[1].Role != event.RoleUser {
		t.Fatalf("history %v: want the system prompt, whole turns from a user message, the last message", texts(h))
	}
	if len(h) != 1+3*2+1 || got.Dropped != 17*2 || got.Tokens > 320 {
		t.Errorf("kept %d messages, dropped %d, %d tokens: want the three newest turns within 320", len(h), got.Dropped, got.Tokens)
	}
	if !strings.HasSuffix(h[1].Content(), "r") { // the 18th question, 'a'+17
		t.Errorf("first kept %q, want the 18th turn", h[1].Content())
	}
	if pc.n > 2+6 {
		t.Errorf("%d counts for 21 turns: want a binary search", pc.n)
	}
}

func TestFitInputTooLarge(t *testing.T) {
	c := &conversation.Conversation{Budget: 50, Counter: &perMessage{}, System: strings.Repeat("x", 30)}
	_, err := c.Fit(context.Background(), []event.ChatMessage{u("short"), a("ok"), u(strings.Repeat("y", 30))})
	var tl *conversation.TooLargeError
	if !errorsAs(err, &tl) || tl.Needed != 70 || tl.Budget != 50 {
		t.Fatalf("Fit = %v, want a TooLargeError of 70 over 50", err)
	}
}

func TestEstimateIsConservative(t *testing.T) {
	text := "The quick brown fox jumps over the lazy dog. Grüezi mitenand, wie gaht's?"
	n, err := conversation.Estimate.CountTokens(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserText(text)}})
	if err != nil {
		t.Fatal(err)
	}
	// A byte-pair tokenizer needs about one token per four bytes here.
	if n < len(text)/4+1 {
		t.Errorf("Estimate = %d for %d bytes: under a BPE tokenizer's count", n, len(text))
	}
	img, _ := conversation.Estimate.CountTokens(context.Background(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Kind: llm.BlockImage, URL: "http://x/y.png"}}}}})
	if img < conversation.ImageTokens {
		t.Errorf("an image counts %d, want at least %d", img, conversation.ImageTokens)
	}
}

func TestValidate(t *testing.T) {
	if err := (&conversation.Conversation{}).Validate(); err != nil {
		t.Errorf("the zero value: %v", err)
	}
	err := (&conversation.Conversation{Budget: -1, TitleThread: true, Meta: &conversation.Meta{}}).Validate()
	for _, want := range []string{"the Budget is -1", "TitleThread needs a Provider", "Meta needs a Provider"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to say %q", err, want)
		}
	}
}
