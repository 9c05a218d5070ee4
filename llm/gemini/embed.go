package gemini

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/saap-go/agent/llm"
)

// DefaultEmbeddingModel is the embedding model used unless
// WithEmbedding names another.
const DefaultEmbeddingModel = "gemini-embedding-001"

var _ llm.Embedder = (*Provider)(nil)

// WithEmbedding returns a copy of p whose Embed uses model (empty keeps
// DefaultEmbeddingModel) and asks for vectors of dims dimensions (0 keeps
// the model's own length). The copy shares p's client.
func (p *Provider) WithEmbedding(model string, dims int) *Provider {
	c := *p
	c.embedModel, c.embedDims = model, dims
	return &c
}

// Embed calls batchEmbedContents with all texts in one request and
// returns the vectors in the order of texts.
func (p *Provider) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	model := p.embedModel
	if model == "" {
		model = DefaultEmbeddingModel
	}
	contents := make([]*genai.Content, len(texts))
	for i, t := range texts {
		contents[i] = genai.NewContentFromText(t, genai.RoleUser)
	}
	var cfg *genai.EmbedContentConfig
	if p.embedDims > 0 {
		d := int32(p.embedDims)
		cfg = &genai.EmbedContentConfig{OutputDimensionality: &d}
	}
	res, err := p.client.Models.EmbedContent(ctx, model, contents, cfg)
	if err != nil {
		return nil, mapError(err, false)
	}
	if len(res.Embeddings) != len(texts) {
		return nil, fmt.Errorf("%s: embeddings answer has %d vectors for %d texts", Name, len(res.Embeddings), len(texts))
	}
	out := make([][]float32, len(texts))
	for i, e := range res.Embeddings {
		if e == nil || len(e.Values) == 0 {
			return nil, fmt.Errorf("%s: embeddings answer has no vector for text %d of %d", Name, i, len(texts))
		}
		out[i] = e.Values
	}
	return out, nil
}
