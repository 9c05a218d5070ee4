package llmtest

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"unicode"

	"github.com/saap-go/agent/llm"
)

// HashEmbedder is a deterministic local llm.Embedder for tests and
// offline examples: a hashed bag of words (lower-cased letter and digit
// runs, each hashed to a signed slot), normalised to unit length. Texts
// that share words are close; texts that share none are near orthogonal.
// It knows no synonyms: it stands in for a model's embeddings, it does not
// imitate them. A text with no words embeds to a fixed unit vector so the
// result is always a valid direction.
type HashEmbedder struct {
	// Dim is the vector length; 0 means 256.
	Dim int
}

var _ llm.Embedder = HashEmbedder{}

// Embed returns one vector per text. It fails only when ctx is done.
func (h HashEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = h.Vector(t)
	}
	return out, nil
}

// Vector embeds one text.
func (h HashEmbedder) Vector(text string) []float32 {
	dim := h.Dim
	if dim <= 0 {
		dim = 256
	}
	v := make([]float32, dim)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		f := fnv.New64a()
		_, _ = f.Write([]byte(w))
		x := f.Sum64()
		slot := int(x % uint64(dim))
		if x>>63 == 1 {
			v[slot]--
		} else {
			v[slot]++
		}
	}
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		v[0] = 1
		return v
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range v {
		v[i] *= inv
	}
	return v
}
