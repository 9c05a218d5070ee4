package llm

import "context"

// Embedder turns texts into vectors for similarity search: one vector per
// text, in the order given, all of the same length for one model. The
// openai and gemini providers implement it through their SDKs; Anthropic
// has no embeddings API, so its provider does not. llmtest.HashEmbedder is
// a deterministic local one for tests and offline examples.
//
// Embed returns the provider's errors as *Error, like Stream does, and
// stops when ctx is done.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}
