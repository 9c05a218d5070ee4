package openai

import (
	"context"
	"fmt"

	oai "github.com/openai/openai-go/v3"

	"github.com/saap-go/agent/llm"
)

// DefaultEmbeddingModel is the embedding model used unless
// WithEmbeddingModel names another.
const DefaultEmbeddingModel = "text-embedding-3-small"

var _ llm.Embedder = (*Provider)(nil)

// WithEmbeddingModel sets the model Embed uses.
func WithEmbeddingModel(model string) Option { return func(c *config) { c.embedModel = model } }

// WithEmbeddingDimensions asks the model for vectors of n dimensions
// (text-embedding-3 models shorten their vectors on request); 0 keeps the
// model's own length.
func WithEmbeddingDimensions(n int) Option { return func(c *config) { c.embedDims = n } }

// Embed calls the embeddings endpoint with all texts in one request and
// returns the vectors in the order of texts.
func (p *Provider) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	model := p.cfg.embedModel
	if model == "" {
		model = DefaultEmbeddingModel
	}
	params := oai.EmbeddingNewParams{
		Input:          oai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		Model:          oai.EmbeddingModel(model),
		EncodingFormat: oai.EmbeddingNewParamsEncodingFormatFloat,
	}
	if p.cfg.embedDims > 0 {
		params.Dimensions = oai.Int(int64(p.cfg.embedDims))
	}
	res, err := p.client.Embeddings.New(ctx, params)
	if err != nil {
		return nil, mapError(p.cfg.name, err)
	}
	out := make([][]float32, len(texts))
	for _, d := range res.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) || out[d.Index] != nil {
			return nil, fmt.Errorf("%s: embeddings answer has a bad or repeated index %d for %d texts", p.cfg.name, d.Index, len(texts))
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	for i, v := range out {
		if len(v) == 0 {
			return nil, fmt.Errorf("%s: embeddings answer has no vector for text %d of %d", p.cfg.name, i, len(texts))
		}
	}
	return out, nil
}
