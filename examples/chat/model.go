package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
)

// ModelFromEnv returns the provider and model configured in the
// environment (llm.FromEnv: LLM_MODEL, or an API key of a linked provider
// package), else an OpenAI-compatible endpoint when OPENAI_BASE_URL is set
// (with OPENAI_API_KEY and OPENAI_MODEL), else the scripted model.
func ModelFromEnv() (llm.Provider, string, error) {
	p, model, err := llm.FromEnv()
	if err == nil {
		return p, model, nil
	}
	if !errors.Is(err, llm.ErrNoProvider) {
		return nil, "", err
	}
	if base := os.Getenv("OPENAI_BASE_URL"); base != "" {
		name := os.Getenv("OPENAI_MODEL")
		if name == "" {
			return nil, "", fmt.Errorf("OPENAI_BASE_URL is set but OPENAI_MODEL is not: name the model to use")
		}
		return &compatible{client: openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(os.Getenv("OPENAI_API_KEY")))}, name, nil
	}
	return Scripted(), "scripted", nil
}

// Scripted is a deterministic model: it answers from a few rules and
// streams its answer two words at a time, so runs and tests are
// repeatable without any service.
func Scripted() llm.Provider {
	return llmtest.Func(func(req *llm.Request) *llmtest.Turn {
		if t := conversationTask(req); t != nil {
			return t
		}
		question := ""
		for i := len(req.Messages) - 1; i >= 0; i-- {
			if req.Messages[i].Role == llm.RoleUser {
				question = strings.TrimSpace(req.Messages[i].Text())
				break
			}
		}
		var answer string
		lower := strings.ToLower(question)
		remembered := rememberedOf(req)
		switch {
		case question == "":
			answer = "I did not get a question. Send me a message and I will answer it."
		case strings.Contains(lower, "what can you do"), strings.Contains(lower, "help"):
			answer = "I am ChatAgent, a Go agent of the Swiss AI Agent Protocol. I stream my answers as ChunkEvents and end each run with an LLMStopEvent. Configure a model in the environment (examples/chat/README.md says how) to let a real one answer."
		case strings.HasPrefix(lower, "hello"), strings.HasPrefix(lower, "hi"):
			answer = "Hello! Ask me anything; this scripted model answers the same way every time."
		case remembered != "" && strings.HasSuffix(question, "?"):
			answer = fmt.Sprintf("From what you told me before: %s", remembered)
		default:
			answer = fmt.Sprintf("You asked: %q. I am a scripted model, so this is all I can say; configure a real one in the environment.", question)
		}
		words := strings.SplitAfter(answer, " ")
		var pieces []string
		for i := 0; i < len(words); i += 2 {
			pieces = append(pieces, strings.Join(words[i:min(i+2, len(words))], ""))
		}
		return llmtest.NewTurn().Text(pieces...).Usage(len(question)/4+1, len(words))
	})
}

// conversationTask answers the conversation capability's own calls (the
// thread's title, follow-up questions, a summary of earlier turns), which
// ask for JSON objects or a summary in their instructions, and is nil for
// any other request.
func conversationTask(req *llm.Request) *llmtest.Turn {
	prompt := ""
	if n := len(req.Messages); n > 0 {
		prompt = req.Messages[n-1].Text()
	}
	// The first user line of the transcript the capability sends.
	first := ""
	for _, line := range strings.Split(prompt, "\n") {
		if rest, ok := strings.CutPrefix(line, "user: "); ok {
			first = rest
			break
		}
	}
	switch {
	case strings.Contains(req.System, `{"title"`):
		words := strings.Fields(first)
		title, _ := json.Marshal(strings.Join(words[:min(len(words), 5)], " "))
		return llmtest.Reply(`{"title": ` + string(title) + `}`)
	case strings.Contains(req.System, `{"questions"`):
		return llmtest.Reply(`{"questions": ["What else can you do?", "How do I configure a real model?"]}`)
	case strings.Contains(req.System, "Summarise the conversation"):
		return llmtest.Reply("Earlier, the user asked: " + first)
	}
	return nil
}

// compatible streams text answers from an OpenAI-compatible chat
// completions endpoint. It stands in until a provider package is linked
// in: llm.FromEnv then finds the full provider first.
type compatible struct{ client openai.Client }

// Name implements llm.Provider.
func (*compatible) Name() string { return "openai-compatible" }

// Stream implements llm.Provider, for text only.
func (c *compatible) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	var msgs []openai.ChatCompletionMessageParamUnion
	if req.System != "" {
		msgs = append(msgs, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		if m.Role == llm.RoleAssistant {
			msgs = append(msgs, openai.AssistantMessage(m.Text()))
		} else {
			msgs = append(msgs, openai.UserMessage(m.Text()))
		}
	}
	s := c.client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: req.Model, Messages: msgs})
	return &compatibleStream{s: s}, nil
}

type compatibleStream struct {
	s interface {
		Next() bool
		Current() openai.ChatCompletionChunk
		Err() error
		Close() error
	}
	ev   llm.StreamEvent
	done bool
}

func (c *compatibleStream) Next() bool {
	for !c.done && c.s.Next() {
		for _, ch := range c.s.Current().Choices {
			if ch.Delta.Content != "" {
				c.ev = llm.StreamEvent{Kind: llm.EventText, Text: ch.Delta.Content}
				return true
			}
		}
	}
	if c.done || c.s.Err() != nil {
		return false
	}
	// The server ended its stream ([DONE]): the message is complete.
	c.done, c.ev = true, llm.StreamEvent{Kind: llm.EventStop, StopReason: llm.StopEndTurn}
	return true
}

func (c *compatibleStream) Event() llm.StreamEvent { return c.ev }
func (c *compatibleStream) Err() error             { return c.s.Err() }
func (c *compatibleStream) Close() error           { return c.s.Close() }

// rememberedOf is the first memory the request's system prompt carries,
// if it carries any.
func rememberedOf(req *llm.Request) string {
	_, after, ok := strings.Cut(req.System, memoryTitle+"\n- ")
	if !ok {
		return ""
	}
	first, _, _ := strings.Cut(after, "\n")
	return first
}
