package gateway_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openaiClient is the official OpenAI Go client pointed at the gateway.
func openaiClient(e *env, token string) openai.Client {
	return openai.NewClient(optionsFor(e.srv, token)...)
}

// optionsFor points an OpenAI client at srv as the user of token.
func optionsFor(srv *httptest.Server, token string) []option.RequestOption {
	return []option.RequestOption{
		option.WithBaseURL(srv.URL + "/v1/"),
		option.WithAPIKey(token),
		option.WithHTTPClient(srv.Client()),
		option.WithMaxRetries(0),
	}
}

func testOpenAIStreaming(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	client := openaiClient(e, tokenAlice)
	stream := client.Chat.Completions.NewStreaming(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model:         "EchoAgent/dev_agent",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("late")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	acc := openai.ChatCompletionAccumulator{}
	var deltas []string
	var finish []string
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		for _, c := range chunk.Choices {
			deltas = append(deltas, c.Delta.Content)
			if c.FinishReason != "" {
				finish = append(finish, c.FinishReason)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	// Two chunks, then the part of the stop's answer the chunks missed.
	if want := []string{"Hel", "lo", ", world"}; !slices.Equal(deltas, want) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}
	if !slices.Equal(finish, []string{"stop"}) {
		t.Errorf("finish reasons = %q", finish)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Hello, world" {
		t.Fatalf("accumulated = %+v", acc.Choices)
	}
}

func testOpenAIStreamEndsWithDone(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	resp := post(t, e.srv, tokenAlice, "/v1/chat/completions",
		`{"model":"EchoAgent/dev_agent","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	datas := dataFrames(readSSE(t, resp.Body))
	if len(datas) < 2 || datas[len(datas)-1] != "[DONE]" {
		t.Fatalf("frames %q: want chunks then [DONE]", datas)
	}
	for _, d := range datas[:len(datas)-1] {
		if !strings.Contains(d, `"object":"chat.completion.chunk"`) {
			t.Errorf("not a chunk: %s", d)
		}
	}
}

func testOpenAINonStreaming(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	client := openaiClient(e, tokenAlice)
	res, err := client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model:    "EchoAgent/dev_agent",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hi")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Choices) != 1 || res.Choices[0].Message.Content != "Hello" || res.Choices[0].FinishReason != "stop" {
		t.Fatalf("completion = %+v", res.Choices)
	}
	if res.Object != "chat.completion" || res.ID == "" {
		t.Errorf("object %q id %q", res.Object, res.ID)
	}
	got := e.agent.wait(t, ctxTimeout(t))
	if got.subject.Name != "UserMessageEvent" || !strings.Contains(string(got.raw), `"be brief"`) {
		t.Errorf("agent got %s: %s", got.subject.Name, got.raw)
	}
}

func testOpenAIHITLChatFlow(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	client := openaiClient(e, tokenAlice)
	thread := "0123456789abcdef01234567"
	meta := shared.Metadata{"thread_id": thread, "display_id": "76543210fedcba9876543210"}
	res, err := client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: "EchoAgent/dev_agent", Metadata: meta,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("ask")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Choices[0].Message.Content; c != "Which colour?" {
		t.Fatalf("content %q, want the HITL question", c)
	}
	// The next message in the thread answers the open question.
	res, err = client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: "EchoAgent/dev_agent", Metadata: meta,
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("ask"), openai.AssistantMessage("Which colour?"), openai.UserMessage("green"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Choices[0].Message.Content; c != "You chose green" {
		t.Fatalf("content %q", c)
	}
	// Bob cannot continue Alice's thread.
	bobClient := openaiClient(e, tokenBob)
	_, err = bobClient.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: "EchoAgent/dev_agent", Metadata: meta,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden {
		t.Errorf("bob: err %v, want 403", err)
	}
}

func testOpenAIErrors(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	cases := []struct {
		model, text string
		status      int
		msg         string
	}{
		{"NoAgent/x", "hi", 404, "unknown agent class"},
		{"EchoAgent", "hi", 400, "model"},
		{"EchoAgent/dev_agent", "fail", 418, "the teapot refuses"},
	}
	for _, c := range cases {
		client := openaiClient(e, tokenAlice)
		_, err := client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
			Model:    c.model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(c.text)},
		})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("%s: err %v, want an API error", c.model, err)
		}
		if apiErr.StatusCode != c.status || !strings.Contains(apiErr.Message, c.msg) {
			t.Errorf("%s/%s: status %d message %q, want %d containing %q", c.model, c.text, apiErr.StatusCode, apiErr.Message, c.status, c.msg)
		}
	}
	nobody := openaiClient(e, "nope")
	if _, err := nobody.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model: "EchoAgent/dev_agent", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}); err == nil {
		t.Error("unknown token accepted")
	}
}
