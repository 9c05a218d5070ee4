package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/internal/replaytest"
)

// server starts a replay of the named fixture and a provider pointed at it.
func server(t testing.TB, status int, header http.Header, name string) (*Provider, *replaytest.Server) {
	t.Helper()
	r, srv := replaytest.Start(t, status, header, name, replaytest.StreamField)
	p, err := New(WithBaseURL(srv.URL), WithAPIKey("sk-ant-test"), WithHTTPClient(srv.Client()),
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
		{Stream: "thinking.sse", Answer: "thinking.json"},
		{Stream: "refusal.sse", Answer: "refusal.json"},
		{Stream: "unknown.sse", Answer: "text.json"},
	})
}

func TestStreamText(t *testing.T) {
	p, rep := server(t, 200, nil, "text.sse")
	_, model := replaytest.StreamText(t, p)
	if model != "claude-sonnet-4-5-20250929" {
		t.Errorf("model = %q", model)
	}
	body := rep.Request(t)
	if body["stream"] != true || body["model"] != DefaultModel || body["max_tokens"] != float64(DefaultMaxTokens) {
		t.Errorf("request = %v, want stream, the default model and max_tokens", body)
	}
}

func TestStreamParallelTools(t *testing.T) {
	r, err := replaytest.Collect(t, open, "tools.sse")
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{
		Model: "claude-sonnet-4-5-20250929",
		Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.Text("I'll check both cities."),
			llm.ToolUse("toolu_01zurich", "get_weather", json.RawMessage(`{"city": "Zürich"}`)),
			llm.ToolUse("toolu_02geneva", "get_weather", json.RawMessage(`{"city": "Genève"}`)),
		}},
		StopReason: llm.StopToolUse,
		Usage:      llm.Usage{InputTokens: 410, OutputTokens: 96, CacheReadTokens: 128},
	}
	if d := cmp.Diff(want, r); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestStreamThinkingAndRefusal(t *testing.T) {
	r, err := replaytest.Collect(t, open, "thinking.sse")
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Block{
		{Kind: llm.BlockThinking, Text: "The user wants 27 * 453. 27 * 453 = 12231.", Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
		llm.Text("27 × 453 = 12,231."),
	}
	if d := cmp.Diff(want, r.Message.Content); d != "" {
		t.Errorf("thinking content (-want +got):\n%s", d)
	}
	r, err = replaytest.Collect(t, open, "refusal.sse")
	if err != nil {
		t.Fatal(err)
	}
	if r.StopReason != llm.StopRefusal {
		t.Errorf("refusal: stop %q, want %q", r.StopReason, llm.StopRefusal)
	}
}

func TestStreamErrorMidStream(t *testing.T) {
	r, err := replaytest.Collect(t, open, "error_midstream.sse")
	var le *llm.Error
	if !errors.As(err, &le) {
		t.Fatalf("Collect error = %v, want *llm.Error", err)
	}
	if le.Kind != llm.ErrOverloaded || le.Provider != Name || le.StatusCode != 0 || le.Message != "Overloaded" {
		t.Errorf("error = %+v, want overloaded from anthropic without status", le)
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
		{"rate limited", 429, http.Header{"Retry-After": {"20"}}, "error_429.json", llm.ErrRateLimited, 20 * time.Second},
		{"overloaded", 529, nil, "error_529.json", llm.ErrOverloaded, 0},
		{"context too long", 400, nil, "error_context.json", llm.ErrContextTooLong, 0},
		{"auth", 401, nil, "error_401.json", llm.ErrAuth, 0},
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
	replaytest.Cancel(t, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"hi\"}}\n\n", openURL)
}

func TestRegistered(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	p, model, err := llm.Open("anthropic")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != Name || model != DefaultModel {
		t.Errorf("Open(anthropic) = %s, %s", p.Name(), model)
	}
}

func TestUnreachable(t *testing.T) { replaytest.Unreachable(t, openURL) }

// openURL is a provider pointed at url that does not retry.
func openURL(url string) (llm.Provider, error) {
	return New(WithBaseURL(url), WithAPIKey("k"), WithRequestOptions(option.WithMaxRetries(0)))
}

// TestObjects: structured answers recorded from the Messages API, valid
// and not (a property missing, an answer cut at max_tokens, a refusal),
// through GenerateObject and a collected stream.
func TestObjects(t *testing.T) {
	replaytest.Objects(t, open, "object.json", "object.sse", "object_invalid.json", "object_length.json", "refusal.json")
}

// TestObjectRequest: the schema goes in output_config.format as a
// json_schema, and no tool is added for it.
func TestObjectRequest(t *testing.T) {
	p, rep := server(t, 200, nil, "object.json")
	if _, err := llm.GenerateObject[replaytest.City](context.Background(), p, replaytest.ObjectQuestion()); err != nil {
		t.Fatal(err)
	}
	body := rep.Request(t)
	oc, _ := body["output_config"].(map[string]any)
	f, _ := oc["format"].(map[string]any)
	schema, _ := f["schema"].(map[string]any)
	if f["type"] != "json_schema" || schema["type"] != "object" || schema["additionalProperties"] != false {
		t.Fatalf("output_config = %v", body["output_config"])
	}
	if props, _ := schema["properties"].(map[string]any); props["languages"] == nil {
		t.Errorf("schema = %v", schema)
	}
	if body["tools"] != nil || body["tool_choice"] != nil {
		t.Errorf("tools %v, tool_choice %v: want none", body["tools"], body["tool_choice"])
	}
}
