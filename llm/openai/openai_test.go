package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3/option"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/internal/replaytest"
)

// server starts a replay of the named fixture and a provider pointed at it.
func server(t testing.TB, status int, header http.Header, name string) (*Provider, *replaytest.Server) {
	t.Helper()
	r, srv := replaytest.Start(t, status, header, name, replaytest.StreamField)
	p, err := New(WithBaseURL(srv.URL), WithAPIKey("sk-test"), WithHTTPClient(srv.Client()),
		WithRequestOptions(option.WithMaxRetries(0)))
	if err != nil {
		t.Fatal(err)
	}
	return p, r
}

// open is server for a successful answer.
func open(t testing.TB, name string) llm.Provider {
	p, _ := server(t, 200, nil, name)
	return p
}

// TestCollectEqualsGenerate is the accumulator property: a stream
// collected equals the non-streaming answer of the same response.
func TestCollectEqualsGenerate(t *testing.T) {
	replaytest.CollectEqualsGenerate(t, open, []replaytest.Pair{
		{Stream: "text.sse", Answer: "text.json"},
		{Stream: "tools.sse", Answer: "tools.json"},
		{Stream: "reasoning.sse", Answer: "reasoning.json"},
		{Stream: "refusal.sse", Answer: "refusal.json"},
		{Stream: "unknown.sse", Answer: "text.json"},
	})
}

func TestStreamText(t *testing.T) {
	p, rep := server(t, 200, nil, "text.sse")
	kinds, model := replaytest.StreamText(t, p)
	if kinds[len(kinds)-2] != llm.EventUsage {
		t.Errorf("events end with %v, want usage then stop", kinds)
	}
	if model != "gpt-4.1-mini-2025-04-14" {
		t.Errorf("model = %q", model)
	}
	body := rep.Request(t)
	if body["stream"] != true {
		t.Errorf("request stream = %v, want true", body["stream"])
	}
	if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("request stream_options = %v, want include_usage", body["stream_options"])
	}
	if body["model"] != DefaultModel {
		t.Errorf("request model = %v, want the default %s", body["model"], DefaultModel)
	}
}

func TestStreamParallelTools(t *testing.T) {
	r, err := replaytest.Collect(t, open, "tools.sse")
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{
		Model: "gpt-4.1-mini-2025-04-14",
		Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.ToolUse("call_zurich", "get_weather", json.RawMessage(`{"city": "Zürich"}`)),
			llm.ToolUse("call_geneva", "get_weather", json.RawMessage(`{"city": "Genève"}`)),
		}},
		StopReason: llm.StopToolUse,
		Usage:      llm.Usage{InputTokens: 81, OutputTokens: 46, CacheReadTokens: 64},
	}
	if d := cmp.Diff(want, r); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestStreamReasoningAndRefusal(t *testing.T) {
	r, err := replaytest.Collect(t, open, "reasoning.sse")
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Block{{Kind: llm.BlockThinking, Text: "The user asks 2+2. That is 4."}, llm.Text("2 + 2 = 4.")}
	if d := cmp.Diff(want, r.Message.Content); d != "" {
		t.Errorf("reasoning content (-want +got):\n%s", d)
	}
	if r.Usage.ReasoningTokens != 22 {
		t.Errorf("reasoning tokens = %d, want 22", r.Usage.ReasoningTokens)
	}
	r, err = replaytest.Collect(t, open, "refusal.sse")
	if err != nil {
		t.Fatal(err)
	}
	if r.StopReason != llm.StopRefusal || r.Message.Text() != "I'm sorry, I can't help with that." {
		t.Errorf("refusal: stop %q, text %q", r.StopReason, r.Message.Text())
	}
}

func TestStreamErrorMidStream(t *testing.T) {
	r, err := replaytest.Collect(t, open, "error_midstream.sse")
	var le *llm.Error
	if !errors.As(err, &le) {
		t.Fatalf("Collect error = %v, want *llm.Error", err)
	}
	if le.Kind != llm.ErrUnavailable || le.Provider != Name || le.StatusCode != 0 {
		t.Errorf("error = %+v, want unavailable from openai without status", le)
	}
	if r.Message.Text() != "Once upon" {
		t.Errorf("partial text = %q, want what arrived before the error", r.Message.Text())
	}
}

func TestStreamTruncated(t *testing.T) {
	r, err := replaytest.Collect(t, open, "truncated.sse")
	if !errors.Is(err, llm.ErrTruncated) {
		t.Fatalf("Collect error = %v, want ErrTruncated", err)
	}
	if r.Message.Text() != "Once upon a time" {
		t.Errorf("partial text = %q", r.Message.Text())
	}
}

func TestHTTPErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
		file   string
		kind   llm.ErrorKind
		retry  time.Duration
	}{
		{"rate limited", 429, http.Header{"Retry-After": {"12"}}, "error_429.json", llm.ErrRateLimited, 12 * time.Second},
		{"rate limited ms", 429, http.Header{"Retry-After-Ms": {"250"}}, "error_429.json", llm.ErrRateLimited, 250 * time.Millisecond},
		{"context too long", 400, nil, "error_context.json", llm.ErrContextTooLong, 0},
		{"auth", 401, nil, "error_401.json", llm.ErrAuth, 0},
		{"overloaded", 503, nil, "error_503.json", llm.ErrOverloaded, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := server(t, tc.status, tc.header, tc.file)
			_, serr := p.Stream(context.Background(), replaytest.Question())
			_, gerr := p.Generate(context.Background(), replaytest.Question())
			for call, err := range map[string]error{"Stream": serr, "Generate": gerr} {
				var le *llm.Error
				if !errors.As(err, &le) {
					t.Fatalf("%s error = %v, want *llm.Error", call, err)
				}
				if le.Kind != tc.kind || le.StatusCode != tc.status || le.RetryAfter != tc.retry {
					t.Errorf("%s: kind %s status %d retry %v, want %s %d %v", call, le.Kind, le.StatusCode, le.RetryAfter, tc.kind, tc.status, tc.retry)
				}
				if !errors.Is(err, &llm.Error{Kind: tc.kind}) {
					t.Errorf("%s: errors.Is by kind fails", call)
				}
			}
		})
	}
}

func TestStreamCancel(t *testing.T) {
	replaytest.Cancel(t, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`+"\n\n", openURL)
}

func TestRegistered(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test")
	p, model, err := llm.Open("openai")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != Name || model != DefaultModel {
		t.Errorf("Open(openai) = %s, %s", p.Name(), model)
	}
}

func TestUnreachable(t *testing.T) { replaytest.Unreachable(t, openURL) }

// openURL is a provider pointed at url that does not retry.
func openURL(url string) (llm.Provider, error) {
	return New(WithBaseURL(url), WithAPIKey("k"), WithRequestOptions(option.WithMaxRetries(0)))
}

// TestObjects: structured answers recorded from chat completions, valid
// and not (a server that ignored the schema, an answer cut at the token
// limit, a refusal), through GenerateObject and a collected stream.
func TestObjects(t *testing.T) {
	replaytest.Objects(t, open, "object.json", "object.sse", "object_invalid.json", "object_length.json", "refusal.json")
}

// TestObjectRequest: the schema goes in response_format as a strict
// json_schema named after the Go type.
func TestObjectRequest(t *testing.T) {
	p, rep := server(t, 200, nil, "object.json")
	if _, err := llm.GenerateObject[replaytest.City](context.Background(), p, replaytest.ObjectQuestion()); err != nil {
		t.Fatal(err)
	}
	rf, _ := rep.Request(t)["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	schema, _ := js["schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["name"] != "City" || js["strict"] != true || schema["type"] != "object" {
		t.Fatalf("response_format = %v", rf)
	}
	if props, _ := schema["properties"].(map[string]any); props["population"] == nil || schema["additionalProperties"] != false {
		t.Errorf("schema = %v", schema)
	}
}
