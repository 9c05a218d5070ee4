package openaicompat

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/llm"
)

// TestFromEnvReachesTheServer opens the provider the way an agent does,
// from OPENAI_BASE_URL alone, and streams a recorded Ollama answer with
// reasoning through it.
func TestFromEnvReachesTheServer(t *testing.T) {
	body, err := os.ReadFile("testdata/ollama_reasoning.sse")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got)
		auth = r.Header.Get("Authorization")
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "wrong path "+r.URL.Path, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("LLM_MODEL", "")
	t.Setenv(BaseURLEnv, srv.URL+"/v1")

	p, model, err := llm.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != Name || model != DefaultModel {
		t.Fatalf("FromEnv = %s, %s; want %s, %s", p.Name(), model, Name, DefaultModel)
	}
	s, err := p.Stream(context.Background(), &llm.Request{Model: "deepseek-r1:8b", MaxTokens: 64, Messages: []llm.Message{llm.UserText("2+2?")}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := llm.Collect(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Block{{Kind: llm.BlockThinking, Text: "The user asks 2+2. That is 4."}, llm.Text("2 + 2 = 4.")}
	if d := cmp.Diff(want, r.Message.Content); d != "" {
		t.Errorf("content (-want +got):\n%s", d)
	}
	if got["max_tokens"] != float64(64) || got["max_completion_tokens"] != nil || got["model"] != "deepseek-r1:8b" {
		t.Errorf("request = %v, want max_tokens 64 and the model", got)
	}
	if !strings.HasPrefix(auth, "Bearer ") {
		t.Errorf("Authorization = %q, want a bearer placeholder", auth)
	}
}

func TestNeedsBaseURL(t *testing.T) {
	t.Setenv(BaseURLEnv, "")
	if _, err := New(); err == nil || !strings.Contains(err.Error(), BaseURLEnv) {
		t.Errorf("New without an address: %v, want an error naming %s", err, BaseURLEnv)
	}
}
