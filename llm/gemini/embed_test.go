package gemini

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/llm"
)

func TestEmbed(t *testing.T) {
	p, rep := server(t, 200, nil, "embeddings.json")
	got, err := p.WithEmbedding("text-embedding-004", 3).Embed(context.Background(), []string{"first", "second"})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float32{{0.25, -0.125, 0.5}, {0, 1, -0.5}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("vectors (-want +got):\n%s", d)
	}
	reqs, _ := rep.Request(t)["requests"].([]any)
	if len(reqs) != 2 {
		t.Fatalf("requests %v", rep.Request(t))
	}
	first := reqs[0].(map[string]any)
	if !strings.HasSuffix(first["model"].(string), "text-embedding-004") || first["outputDimensionality"] != 3.0 {
		t.Fatalf("request %v", first)
	}
	if d := cmp.Diff(map[string]any{"parts": []any{map[string]any{"text": "first"}}, "role": "user"}, first["content"]); d != "" {
		t.Fatalf("content (-want +got):\n%s", d)
	}
}

func TestEmbedCountMismatch(t *testing.T) {
	p, _ := server(t, 200, nil, "embeddings.json")
	if _, err := p.Embed(context.Background(), []string{"only one"}); err == nil {
		t.Fatal("two vectors for one text accepted")
	}
	if v, err := p.Embed(context.Background(), nil); v != nil || err != nil {
		t.Fatalf("no texts: %v %v", v, err)
	}
}

func TestEmbedHTTPError(t *testing.T) {
	p, _ := server(t, 429, nil, "error_429.json")
	_, err := p.Embed(context.Background(), []string{"x"})
	if !errors.Is(err, &llm.Error{Kind: llm.ErrRateLimited}) {
		t.Fatalf("err = %v, want a rate-limit *llm.Error", err)
	}
}
