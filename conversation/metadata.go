package conversation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/step"
)

// TitleKey is the thread state key that marks a titled thread; the
// reference's name, so Python and Go steps of one agent class agree.
const TitleKey = "title_generated"

const titlePrompt = `Give the conversation below a short title (at most six words) in the language of the conversation, naming its topic. If the conversation has no topic yet (a greeting, small talk), answer with an empty title. Answer with one JSON object and nothing else: {"title": "..."}`

const followUpPrompt = `Suggest up to %d short questions the user could ask next, grounded on the assistant's last answer in the conversation below, written as the user would ask them, in the language of the conversation. Answer with one JSON object and nothing else: {"questions": ["...", "..."]}`

// Title names the thread once, as the reference does: unless the thread
// state says the thread has a title (TitleKey), the model titles the
// conversation and the title is published as a ConversationTitleEvent; the
// mark is then set, so later turns make no call. A conversation without a
// topic yet leaves the mark unset, and a later turn tries again. It
// returns the title published, "" for none.
func (c *Conversation) Title(ctx step.Context, history []event.ChatMessage) (string, error) {
	var done bool
	if _, err := ctx.ThreadState().Get(ctx, TitleKey, &done); err != nil {
		return "", fmt.Errorf("conversation: read the title mark: %w", err)
	}
	if done {
		return "", nil
	}
	var out struct {
		Title string `json:"title"`
	}
	text, err := c.ask(ctx, "conversation.title", titlePrompt, history, 64)
	if err != nil {
		return "", fmt.Errorf("conversation: title the thread: %w", err)
	}
	if !decodeObject(text, &out) {
		out.Title = text // a model that forgot the JSON still named the topic
	}
	title := strings.TrimSpace(strings.Trim(strings.TrimSpace(out.Title), "\"'“”«»`"))
	if title == "" {
		return "", nil
	}
	if err := ctx.Emit(&event.ConversationTitleEvent{Title: title}); err != nil {
		return "", fmt.Errorf("conversation: publish the title: %w", err)
	}
	if err := ctx.ThreadState().Set(ctx, TitleKey, true); err != nil {
		return "", fmt.Errorf("conversation: keep the title mark: %w", err)
	}
	return title, nil
}

// SuggestFollowUps asks the model for the user's next questions after the
// last answer of history and publishes them as a FollowUpQuestionsEvent
// (none when the model suggests none). It returns the questions.
func (c *Conversation) SuggestFollowUps(ctx step.Context, history []event.ChatMessage) ([]string, error) {
	limit := cmpOr(c.MaxFollowUps, 3)
	text, err := c.ask(ctx, "conversation.follow_ups", fmt.Sprintf(followUpPrompt, limit), history, 256)
	if err != nil {
		return nil, fmt.Errorf("conversation: suggest follow-up questions: %w", err)
	}
	var out struct {
		Questions []string `json:"questions"`
	}
	decodeObject(text, &out)
	var qs []string
	for _, q := range out.Questions {
		if q = strings.TrimSpace(q); q != "" && len(qs) < limit {
			qs = append(qs, q)
		}
	}
	if len(qs) == 0 {
		return nil, nil
	}
	if err := ctx.Emit(&event.FollowUpQuestionsEvent{Questions: qs}); err != nil {
		return nil, fmt.Errorf("conversation: publish the follow-up questions: %w", err)
	}
	return qs, nil
}

// Complete ends a turn as the reference's complete step does: with the
// answer given, it titles the thread (Title, when c.TitleThread) and suggests
// follow-up questions (SuggestFollowUps, when c.FollowUps), both at once,
// then returns stop for the step to return. The two are extras: a failure
// of either is logged and the run still ends with its answer. Call it in
// the step that returns the run's stop, since nothing runs after a stop.
func Complete[S event.Event](ctx step.Context, c *Conversation, history []event.ChatMessage, answer string, stop S) (S, error) {
	if c == nil || (!c.TitleThread && !c.FollowUps) {
		return stop, nil
	}
	full := append(append([]event.ChatMessage(nil), history...), event.Text(event.RoleAssistant, answer))
	var wg sync.WaitGroup
	run := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				ctx.Logger().Warn("conversation: "+name+" failed; the answer stands", "err", err)
			}
		}()
	}
	if c.TitleThread {
		run("title", func() error { _, err := c.Title(ctx, full); return err })
	}
	if c.FollowUps {
		run("follow-up questions", func() error { _, err := c.SuggestFollowUps(ctx, full); return err })
	}
	wg.Wait()
	return stop, nil
}

// ask sends the conversation to the model under instructions and returns
// its text.
func (c *Conversation) ask(ctx context.Context, name, instructions string, history []event.ChatMessage, maxTokens int) (string, error) {
	zero := 0.0
	resp, err := c.generate(ctx, name, &llm.Request{System: instructions,
		Messages:  []llm.Message{llm.UserText("Conversation:\n" + transcript(history))},
		MaxTokens: maxTokens, Temperature: &zero})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(resp.Message.Text()), nil
}

// decodeObject decodes the first JSON object of text into v (also inside
// a code fence or after some words) and reports whether there was one.
func decodeObject(text string, v any) bool {
	for i := strings.IndexByte(text, '{'); i >= 0; {
		if json.NewDecoder(strings.NewReader(text[i:])).Decode(v) == nil {
			return true
		}
		next := strings.IndexByte(text[i+1:], '{')
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}
