package conversation_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/saap-go/agent/conversation"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm/anthropic"
	"github.com/saap-go/agent/llm/gemini"
)

// countServer answers a provider's token counting endpoint with the
// number of text bytes in the request's JSON (its "text" fields), and
// counts the calls.
func countServer(t *testing.T, path, field string) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, path) {
			http.Error(w, `{"error": "unexpected path `+r.URL.Path+`"}`, http.StatusNotFound)
			return
		}
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		var v any
		_ = json.Unmarshal(body, &v)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int{field: textBytes(v)})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func textBytes(v any) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "text" {
				n += len(s)
			} else {
				n += textBytes(e)
			}
		}
	case []any:
		for _, e := range x {
			n += textBytes(e)
		}
	}
	return n
}

func history() []event.ChatMessage {
	var msgs []event.ChatMessage
	for range 8 {
		msgs = append(msgs, u(strings.Repeat("q", 50)), a(strings.Repeat("r", 50)))
	}
	return append(msgs, u("last"))
}

// The budget is counted by the provider's own endpoint: Anthropic's
// count_tokens and Gemini's countTokens, through their official SDKs.
func TestFitCountsWithTheProvider(t *testing.T) {
	asrv, acalls := countServer(t, "/v1/messages/count_tokens", "input_tokens")
	ap, err := anthropic.New(anthropic.WithBaseURL(asrv.URL), anthropic.WithAPIKey("k"), anthropic.WithRequestOptions(option.WithMaxRetries(0)))
	if err != nil {
		t.Fatal(err)
	}
	gsrv, gcalls := countServer(t, ":countTokens", "totalTokens")
	gp, err := gemini.New(gemini.WithBaseURL(gsrv.URL), gemini.WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]struct {
		counter conversation.TokenCounter
		calls   *atomic.Int64
		model   string
	}{"anthropic": {ap, acalls, "claude-sonnet-4-5"}, "gemini": {gp, gcalls, "gemini-2.5-flash"}} {
		t.Run(name, func(t *testing.T) {
			// The system prompt (9 bytes), the last message (4) and three
			// turns of 100 fit 320; a fourth does not.
			c := &conversation.Conversation{Budget: 320, Counter: p.counter, AnswerModel: p.model, System: "Be brief."}
			got, err := c.Fit(context.Background(), history())
			if err != nil {
				t.Fatal(err)
			}
			if len(got.History) != 7 || got.Tokens != 9+300+4 {
				t.Errorf("kept %d messages, %d tokens: want three turns and the last message, 313 tokens", len(got.History), got.Tokens)
			}
			if n := p.calls.Load(); n < 3 || n > 7 {
				t.Errorf("%d counting calls for 8 turns: want the whole, the floor and a binary search", n)
			}
			c.Budget = 10
			if _, err := c.Fit(context.Background(), history()); !errorsIs(err, conversation.ErrInputTooLarge) {
				t.Errorf("a budget of 10: %v, want ErrInputTooLarge", err)
			}
		})
	}
}
