package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/internal/replaytest"
)

// geminiStreaming tells a streaming call by its method in the path.
func geminiStreaming(req *http.Request, _ []byte) bool {
	return strings.Contains(req.URL.Path, ":streamGenerateContent")
}

// server starts a replay of the named fixture and a provider pointed at it.
func server(t testing.TB, status int, header http.Header, name string) (*Provider, *replaytest.Server) {
	t.Helper()
	r, srv := replaytest.Start(t, status, header, name, geminiStreaming)
	p, err := New(WithBaseURL(srv.URL), WithAPIKey("gm-test"), WithHTTPClient(srv.Client()), noRetries)
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

// noRetries makes the SDK answer at the first failure.
var noRetries = WithClientConfig(func(c *genai.ClientConfig) {
	one := int32(1)
	c.HTTPOptions.RetryOptions = &genai.HTTPRetryOptions{Attempts: &one}
})

// TestCollectEqualsGenerate is the accumulator property: a stream
// collected equals the non-streaming answer of the same response.
func TestCollectEqualsGenerate(t *testing.T) {
	replaytest.CollectEqualsGenerate(t, open, []replaytest.Pair{
		{Stream: "image.sse", Answer: "image.json"},
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
	if model != "gemini-2.5-flash" {
		t.Errorf("model = %q", model)
	}
	body := rep.Request(t)
	if _, ok := body["contents"]; !ok {
		t.Errorf("request = %v, want contents", body)
	}
}

func TestStreamParallelTools(t *testing.T) {
	r, err := replaytest.Collect(t, open, "tools.sse")
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Response{
		Model: "gemini-2.5-flash",
		Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{
			llm.Text("Checking both."),
			llm.ToolUse("gemini-call-0", "get_weather", json.RawMessage(`{"city":"Zürich"}`)),
			llm.ToolUse("gemini-call-1", "get_weather", json.RawMessage(`{"city":"Genève","units":"metric"}`)),
		}},
		StopReason: llm.StopToolUse,
		Usage:      llm.Usage{InputTokens: 60, OutputTokens: 24, CacheReadTokens: 32},
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
		{Kind: llm.BlockThinking, Text: "**Multiplying** 27 by 453. That gives 12231."},
		{Kind: llm.BlockThinking, Signature: "CiQB0e2Kb7dIvhE4tvs5+Kq3h4W0WlJ7"},
		llm.Text("27 × 453 = 12,231."),
	}
	if d := cmp.Diff(want, r.Message.Content); d != "" {
		t.Errorf("thinking content (-want +got):\n%s", d)
	}
	if r.Usage.ReasoningTokens != 48 || r.Usage.OutputTokens != 58 {
		t.Errorf("usage = %+v, want 48 reasoning of 58 output tokens", r.Usage)
	}
	r, err = replaytest.Collect(t, open, "refusal.sse")
	if err != nil {
		t.Fatal(err)
	}
	if r.StopReason != llm.StopRefusal || len(r.Message.Content) != 0 {
		t.Errorf("refusal: stop %q, content %v", r.StopReason, r.Message.Content)
	}
}

func TestStreamErrorMidStream(t *testing.T) {
	r, err := replaytest.Collect(t, open, "error_midstream.sse")
	var le *llm.Error
	if !errors.As(err, &le) {
		t.Fatalf("Collect error = %v, want *llm.Error", err)
	}
	if le.Kind != llm.ErrOverloaded || le.Provider != Name || le.StatusCode != 0 {
		t.Errorf("error = %+v, want overloaded from gemini without status", le)
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
		file   string
		kind   llm.ErrorKind
		retry  time.Duration
	}{
		{"rate limited", 429, "error_429.json", llm.ErrRateLimited, 17 * time.Second},
		{"overloaded", 503, "error_503.json", llm.ErrOverloaded, 0},
		{"context too long", 400, "error_context.json", llm.ErrContextTooLong, 0},
		{"bad key", 400, "error_key.json", llm.ErrAuth, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := server(t, tc.status, nil, tc.file)
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
			}
		})
	}
}

func TestStreamCancel(t *testing.T) {
	replaytest.Cancel(t, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hi\"}],\"role\":\"model\"}}]}\r\n\r\n", openURL)
}

func TestRegistered(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "gm-test")
	p, model, err := llm.Open("gemini")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != Name || model != DefaultModel {
		t.Errorf("Open(gemini) = %s, %s", p.Name(), model)
	}
}

func TestUnreachable(t *testing.T) { replaytest.Unreachable(t, openURL) }

// openURL is a provider pointed at url that does not retry.
func openURL(url string) (llm.Provider, error) {
	return New(WithBaseURL(url), WithAPIKey("k"), noRetries)
}

// TestObjects: structured answers recorded from generateContent, valid
// and not (a property the schema does not have, an answer cut at the
// token limit, a blocked answer), through GenerateObject and a collected
// stream.
func TestObjects(t *testing.T) {
	replaytest.Objects(t, open, "object.json", "object.sse", "object_invalid.json", "object_length.json", "refusal.json")
}

// TestObjectRequest: the schema goes in generationConfig as
// responseJsonSchema, with responseMimeType application/json.
func TestObjectRequest(t *testing.T) {
	p, rep := server(t, 200, nil, "object.json")
	if _, err := llm.GenerateObject[replaytest.City](context.Background(), p, replaytest.ObjectQuestion()); err != nil {
		t.Fatal(err)
	}
	gc, _ := rep.Request(t)["generationConfig"].(map[string]any)
	schema, _ := gc["responseJsonSchema"].(map[string]any)
	if gc["responseMimeType"] != "application/json" || schema["type"] != "object" {
		t.Fatalf("generationConfig = %v", gc)
	}
	if props, _ := schema["properties"].(map[string]any); props["population"] == nil {
		t.Errorf("schema = %v", schema)
	}
}

// TestImageAnswer: an image the model made is kept as an image block
// after the text, not skipped.
func TestImageAnswer(t *testing.T) {
	r, err := replaytest.Collect(t, open, "image.sse")
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Block{
		llm.Text("Here is a map of Bern."),
		{Kind: llm.BlockImage, MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")},
	}
	if d := cmp.Diff(want, r.Message.Content); d != "" {
		t.Errorf("content (-want +got):\n%s", d)
	}
}
