package openai

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/llm"
)

func TestEmbed(t *testing.T) {
	p, rep := server(t, 200, nil, "embeddings.json")
	p = p.withEmbedding("text-embedding-3-large", 3)
	got, err := p.Embed(context.Background(), []string{"first", "second"})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float32{{0.25, -0.125, 0.5}, {0, 1, -0.5}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("vectors (-want +got):\n%s", d)
	}
	req := rep.Request(t)
	if req["model"] != "text-embedding-3-large" || req["dimensions"] != 3.0 || req["encoding_format"] != "float" {
		t.Fatalf("request %v", req)
	}
	if d := cmp.Diff([]any{"first", "second"}, req["input"]); d != "" {
		t.Fatalf("input (-want +got):\n%s", d)
	}
}

func TestEmbedDefaultsAndEmpty(t *testing.T) {
	p, rep := server(t, 200, nil, "embeddings_short.json")
	if v, err := p.Embed(context.Background(), nil); v != nil || err != nil {
		t.Fatalf("no texts: %v %v", v, err)
	}
	if _, err := p.Embed(context.Background(), []string{"only"}); err != nil {
		t.Fatal(err)
	}
	if req := rep.Request(t); req["model"] != DefaultEmbeddingModel || req["dimensions"] != nil {
		t.Fatalf("request %v", req)
	}
	// One vector for two texts is a broken answer, not a short result.
	if _, err := p.Embed(context.Background(), []string{"a", "b"}); err == nil {
		t.Fatal("short answer accepted")
	}
}

func TestEmbedHTTPError(t *testing.T) {
	p, _ := server(t, 401, nil, "error_401.json")
	_, err := p.Embed(context.Background(), []string{"x"})
	if !errors.Is(err, &llm.Error{Kind: llm.ErrAuth}) {
		t.Fatalf("err = %v, want an auth *llm.Error", err)
	}
}

// withEmbedding applies the embedding options to a provider under test.
func (p *Provider) withEmbedding(model string, dims int) *Provider {
	c := *p
	WithEmbeddingModel(model)(&c.cfg)
	WithEmbeddingDimensions(dims)(&c.cfg)
	return &c
}
