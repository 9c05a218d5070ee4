package openaicompat

import (
	"context"
	"encoding/json"
	"errors"
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

// TestObjects: a local server's structured answers. The schema goes in
// response_format as chat completions has it; an answer in a Markdown
// fence still decodes, one that ignored the schema is an *ObjectError.
func TestObjects(t *testing.T) {
	for _, tc := range []struct {
		file  string
		valid bool
	}{{"ollama_object.json", true}, {"ollama_object_invalid.json", false}} {
		t.Run(tc.file, func(t *testing.T) {
			body, err := os.ReadFile("testdata/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				_ = json.Unmarshal(b, &got)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			t.Setenv(BaseURLEnv, srv.URL+"/v1")
			p, err := New()
			if err != nil {
				t.Fatal(err)
			}
			type city struct {
				City       string   `json:"city"`
				Population int      `json:"population"`
				Languages  []string `json:"languages"`
			}
			v, err := llm.GenerateObject[city](context.Background(), p, &llm.Request{Model: "qwen3:8b", Messages: []llm.Message{llm.UserText("Describe Bern.")}})
			if tc.valid {
				if err != nil || v.Population != 134794 {
					t.Errorf("GenerateObject = %+v, %v", v, err)
				}
			} else if !errors.Is(err, llm.ErrInvalidObject) {
				t.Errorf("err = %v, want ErrInvalidObject", err)
			}
			rf, _ := got["response_format"].(map[string]any)
			if js, _ := rf["json_schema"].(map[string]any); rf["type"] != "json_schema" || js["name"] != "city" || js["schema"] == nil {
				t.Errorf("response_format = %v", got["response_format"])
			}
		})
	}
}
