package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Turn is one message of the conversation given to a model.
type Turn struct {
	Role string
	Text string
}

// Model produces an answer to a conversation piece by piece.
type Model interface {
	Name() string
	// Stream calls emit with each piece of the answer, in order.
	Stream(ctx context.Context, history []Turn, emit func(piece string) error) error
}

// ModelFromEnv returns an OpenAI-compatible model when OPENAI_BASE_URL is
// set, else the scripted model.
func ModelFromEnv() (Model, error) {
	base := os.Getenv("OPENAI_BASE_URL")
	if base == "" {
		return Scripted{}, nil
	}
	name := os.Getenv("OPENAI_MODEL")
	if name == "" {
		return nil, fmt.Errorf("OPENAI_BASE_URL is set but OPENAI_MODEL is not: name the model to use")
	}
	return &OpenAI{
		model:  name,
		client: openai.NewClient(option.WithBaseURL(base), option.WithAPIKey(os.Getenv("OPENAI_API_KEY"))),
	}, nil
}

// Scripted is a deterministic model: it answers from a few rules and
// streams its answer word by word, so runs and tests are repeatable
// without any service.
type Scripted struct{}

// Name implements Model.
func (Scripted) Name() string { return "scripted" }

// Stream implements Model.
func (Scripted) Stream(ctx context.Context, history []Turn, emit func(string) error) error {
	question := ""
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == "user" {
			question = strings.TrimSpace(history[i].Text)
			break
		}
	}
	var answer string
	lower := strings.ToLower(question)
	switch {
	case question == "":
		answer = "I did not get a question. Send me a message and I will answer it."
	case strings.Contains(lower, "what can you do"), strings.Contains(lower, "help"):
		answer = "I am ChatAgent, a Go agent of the Swiss AI Agent Protocol. I stream my answers as ChunkEvents and end each run with an LLMStopEvent. Set OPENAI_BASE_URL to let a real model answer."
	case strings.HasPrefix(lower, "hello"), strings.HasPrefix(lower, "hi"):
		answer = "Hello! Ask me anything; this scripted model answers the same way every time."
	default:
		answer = fmt.Sprintf("You asked: %q. I am a scripted model, so this is all I can say; set OPENAI_BASE_URL to use a real one.", question)
	}
	// Two words per chunk, as a model streams tokens.
	words := strings.SplitAfter(answer, " ")
	for i := 0; i < len(words); i += 2 {
		w := strings.Join(words[i:min(i+2, len(words))], "")
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(w); err != nil {
			return err
		}
	}
	return nil
}

// OpenAI streams answers from an OpenAI-compatible chat completions
// endpoint.
type OpenAI struct {
	model  string
	client openai.Client
}

// Name implements Model.
func (m *OpenAI) Name() string { return m.model }

// Stream implements Model.
func (m *OpenAI) Stream(ctx context.Context, history []Turn, emit func(string) error) error {
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(history))
	for _, t := range history {
		switch t.Role {
		case "system", "developer":
			msgs = append(msgs, openai.SystemMessage(t.Text))
		case "assistant":
			msgs = append(msgs, openai.AssistantMessage(t.Text))
		default:
			msgs = append(msgs, openai.UserMessage(t.Text))
		}
	}
	stream := m.client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: m.model, Messages: msgs})
	defer stream.Close()
	for stream.Next() {
		for _, c := range stream.Current().Choices {
			if c.Delta.Content == "" {
				continue
			}
			if err := emit(c.Delta.Content); err != nil {
				return err
			}
		}
	}
	return stream.Err()
}
