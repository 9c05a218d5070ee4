package conversation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/step"
)

// ErrInputTooLarge is wrapped by the *TooLargeError of a turn that cannot
// fit the budget whatever is trimmed.
var ErrInputTooLarge = errors.New("conversation: the input does not fit the budget")

// TooLargeError says how far a turn is over the budget: what cannot be
// trimmed (the system prompts and the last message) needs Needed tokens.
type TooLargeError struct {
	Needed, Budget int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("conversation: the turn needs %d input tokens, more than the budget of %d", e.Needed, e.Budget)
}

// Unwrap makes errors.Is(err, ErrInputTooLarge) true.
func (e *TooLargeError) Unwrap() error { return ErrInputTooLarge }

// Fitted is a history fitted into the budget.
type Fitted struct {
	// History is what the answering call takes: the system messages,
	// then the summary of the turns left out (a system message) when
	// there is one, then the turns kept, the last one always among them.
	History []event.ChatMessage
	// Tokens is the count of the answering call for History (with the
	// agent's System), 0 when no budget is set.
	Tokens int
	// Dropped is how many messages were left out or summarised.
	Dropped int
	// Summary is the summary's text, "" when there is none.
	Summary string
}

// summaryKey is the thread state key of the summary of a thread's oldest
// turns, kept so the next turn extends it instead of writing it again.
const summaryKey = "conversation_summary"

type cachedSummary struct {
	Covered int    `json:"covered"`
	Digest  string `json:"digest"`
	Text    string `json:"text"`
}

// Fit fits msgs into c.Budget, as the reference's limit step does: the
// system messages and the last message are kept whole, and the oldest
// turns give way, whole turns at a time (a turn starts at a user
// message), until the rest fits. With Summarise the turns that give way
// are summarised by the model into one system message within
// SummaryTokens; in a step (ctx a step.Context) the summary is kept in the
// thread state, so the next turn summarises only the turns newly left out.
// When what cannot be trimmed alone is over the budget, Fit returns a
// *TooLargeError (ErrInputTooLarge): the step answers it with Refuse,
// reason input_too_large, which FitStep does.
//
// Fit counts whole candidate prompts with the Counter: one count when the
// history fits, about log2(turns) more when it does not.
func (c *Conversation) Fit(ctx context.Context, msgs []event.ChatMessage) (*Fitted, error) {
	if c.Budget <= 0 {
		return &Fitted{History: msgs}, nil
	}
	var head, turns []event.ChatMessage
	for _, m := range msgs {
		if isSystem(m) {
			head = append(head, m)
		} else {
			turns = append(turns, m)
		}
	}
	// The turns are converted once; each count then takes a slice of them.
	headSystem, _ := toLLM(head)
	_, llmTurns := toLLM(turns)
	counter, model := c.counter(), c.answerModel()
	count := func(summary string, kept []event.ChatMessage) (int, error) {
		sys := joinNonEmpty(c.System, headSystem)
		if summary != "" {
			sys = joinNonEmpty(sys, summaryPrefix+summary)
		}
		req := &llm.Request{Model: model, System: sys, Messages: llmTurns[len(turns)-len(kept):]}
		n, err := counter.CountTokens(ctx, req)
		if err != nil {
			return 0, fmt.Errorf("conversation: count tokens: %w", err)
		}
		return n, nil
	}
	if len(turns) == 0 {
		n, err := count("", nil)
		if err != nil {
			return nil, err
		}
		if n > c.Budget {
			return nil, &TooLargeError{Needed: n, Budget: c.Budget}
		}
		return &Fitted{History: msgs, Tokens: n}, nil
	}
	all, err := count("", turns)
	if err != nil {
		return nil, err
	}
	if all <= c.Budget {
		return &Fitted{History: assemble(head, "", turns), Tokens: all}, nil
	}
	last := len(turns) - 1
	floor, err := count("", turns[last:])
	if err != nil {
		return nil, err
	}
	if floor > c.Budget {
		return nil, &TooLargeError{Needed: floor, Budget: c.Budget}
	}
	// The places a kept part may start: each user message after the
	// first, and the last message, which fits.
	var starts []int
	for i := 1; i < last; i++ {
		if turns[i].Role == event.RoleUser {
			starts = append(starts, i)
		}
	}
	starts = append(starts, last)
	reserve := 0
	if c.Summarise && c.Provider != nil {
		reserve = cmpOr(c.SummaryTokens, 512)
		if floor+reserve > c.Budget {
			reserve = 0 // no room for a summary: trim only
		}
	}
	s, n, err := c.firstFit(starts, reserve, func(i int) (int, error) { return count("", turns[i:]) })
	if err != nil {
		return nil, err
	}
	out := &Fitted{History: assemble(head, "", turns[s:]), Tokens: n, Dropped: s}
	if reserve == 0 {
		return out, nil
	}
	summary, err := c.summarise(ctx, turns[:s], reserve)
	if err != nil {
		return nil, err
	}
	if summary == "" {
		return out, nil
	}
	withSummary, err := count(summary, turns[s:])
	if err != nil {
		return nil, err
	}
	if withSummary > c.Budget {
		return out, nil // the model wrote more than it was given room for
	}
	out.History, out.Tokens, out.Summary = assemble(head, summary, turns[s:]), withSummary, summary
	return out, nil
}

// firstFit returns the first start whose part fits the budget less
// reserve, by binary search (a later start keeps fewer tokens), and its
// count. The last start always fits the budget; with reserve it may not,
// and then it is taken all the same.
func (c *Conversation) firstFit(starts []int, reserve int, count func(int) (int, error)) (int, int, error) {
	counts := make(map[int]int, 8)
	var cerr error
	i := sort.Search(len(starts), func(k int) bool {
		if cerr != nil {
			return true
		}
		n, err := count(starts[k])
		if err != nil {
			cerr = err
			return true
		}
		counts[k] = n
		return n+reserve <= c.Budget
	})
	if cerr != nil {
		return 0, 0, cerr
	}
	if i == len(starts) {
		i = len(starts) - 1
	}
	n, ok := counts[i]
	if !ok {
		var err error
		if n, err = count(starts[i]); err != nil {
			return 0, 0, err
		}
	}
	return starts[i], n, nil
}

func (c *Conversation) counter() TokenCounter {
	if c.Counter != nil {
		return c.Counter
	}
	return Estimate
}

// assemble is head, the summary as a system message, then turns.
func assemble(head []event.ChatMessage, summary string, turns []event.ChatMessage) []event.ChatMessage {
	out := make([]event.ChatMessage, 0, len(head)+1+len(turns))
	out = append(out, head...)
	if summary != "" {
		out = append(out, event.Text(event.RoleSystem, summaryPrefix+summary))
	}
	return append(out, turns...)
}

const summaryPrefix = "Summary of the earlier conversation: "

const summaryPrompt = `You keep the memory of a conversation between a user and an assistant. Summarise the conversation below in a few sentences: the facts the user gave, what was asked, what was answered and decided, and anything the assistant promised. Keep names, numbers and dates exactly. Write only the summary, in the language of the conversation.`

// summarise returns the model's summary of dropped, extending the thread's
// cached summary when it covers a beginning of dropped.
func (c *Conversation) summarise(ctx context.Context, dropped []event.ChatMessage, room int) (string, error) {
	sc, durable := ctx.(step.Context)
	var cached cachedSummary
	if durable {
		if _, err := sc.ThreadState().Get(ctx, summaryKey, &cached); err != nil {
			return "", fmt.Errorf("conversation: read the summary: %w", err)
		}
	}
	prior, from := "", 0
	if cached.Text != "" && cached.Covered <= len(dropped) && digest(dropped[:cached.Covered]) == cached.Digest {
		if cached.Covered == len(dropped) {
			return cached.Text, nil
		}
		prior, from = cached.Text, cached.Covered
	}
	var b strings.Builder
	if prior != "" {
		b.WriteString("Summary so far: ")
		b.WriteString(prior)
		b.WriteString("\n\nThe conversation went on:\n")
	}
	b.WriteString(transcript(dropped[from:]))
	zero := 0.0
	resp, err := c.generate(ctx, "conversation.summarise", &llm.Request{System: summaryPrompt,
		Messages: []llm.Message{llm.UserText(b.String())}, MaxTokens: room, Temperature: &zero})
	if err != nil {
		return "", fmt.Errorf("conversation: summarise the earlier turns: %w", err)
	}
	text := strings.TrimSpace(resp.Message.Text())
	if text != "" && durable {
		next := cachedSummary{Covered: len(dropped), Digest: digest(dropped), Text: text}
		if err := sc.ThreadState().Set(ctx, summaryKey, next); err != nil {
			return "", fmt.Errorf("conversation: keep the summary: %w", err)
		}
	}
	return text, nil
}

// digest identifies a run of messages by their roles and texts.
func digest(msgs []event.ChatMessage) string {
	h := sha256.New()
	for _, m := range msgs {
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
		h.Write([]byte(m.Content()))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
