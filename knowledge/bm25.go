package knowledge

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"unicode"
)

// BM25 ranks chunks by Okapi BM25, in memory: each query term weighs by
// how rare it is across the chunks (idf), by how often it occurs in a chunk
// with diminishing returns (k1), normalised by the chunk's length against
// the average (b). It needs no model, finds exact names and codes that
// embeddings blur, and is the lexical half of a Hybrid retriever.
//
// The zero value is not usable; NewBM25 makes one. A BM25 is safe for
// concurrent use.
type BM25 struct {
	k1, b    float64
	tokenize func(string) []string

	mu     sync.RWMutex
	chunks []bm25Chunk
	byID   map[string]int
	df     map[string]int // chunks containing each term
	total  int            // sum of the chunks' lengths
}

type bm25Chunk struct {
	Chunk
	tf  map[string]int
	len int
}

// BM25Option configures a BM25.
type BM25Option func(*BM25)

// WithK1 sets the term-frequency saturation (1.2 by default): higher lets
// repeated terms count longer.
func WithK1(k1 float64) BM25Option { return func(x *BM25) { x.k1 = k1 } }

// WithB sets the length normalisation (0.75 by default): 0 ignores a
// chunk's length, 1 normalises fully.
func WithB(b float64) BM25Option { return func(x *BM25) { x.b = b } }

// WithTokenizer sets how texts are split into terms; Tokens by default.
func WithTokenizer(fn func(string) []string) BM25Option {
	return func(x *BM25) { x.tokenize = fn }
}

// NewBM25 returns an empty BM25 index with k1 = 1.2 and b = 0.75 unless
// options say otherwise.
func NewBM25(opts ...BM25Option) *BM25 {
	x := &BM25{k1: 1.2, b: 0.75, tokenize: Tokens, byID: map[string]int{}, df: map[string]int{}}
	for _, o := range opts {
		o(x)
	}
	return x
}

// Add indexes chunks, replacing any with the same ID. A chunk's title is
// indexed with its text. It fails, adding nothing, on a chunk without an
// ID.
func (x *BM25) Add(chunks ...Chunk) error {
	for i, c := range chunks {
		if c.ID == "" {
			return fmt.Errorf("%w: chunk %d has no ID", ErrInvalid, i)
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, c := range chunks {
		x.remove(c.ID)
		toks := x.tokenize(c.Title + " " + c.Text)
		tf := make(map[string]int, len(toks))
		for _, t := range toks {
			tf[t]++
		}
		for t := range tf {
			x.df[t]++
		}
		x.byID[c.ID] = len(x.chunks)
		x.chunks = append(x.chunks, bm25Chunk{Chunk: c, tf: tf, len: len(toks)})
		x.total += len(toks)
	}
	return nil
}

// Delete removes chunks by ID; unknown IDs are ignored.
func (x *BM25) Delete(ids ...string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, id := range ids {
		x.remove(id)
	}
}

// remove deletes one chunk; x.mu is held.
func (x *BM25) remove(id string) {
	i, ok := x.byID[id]
	if !ok {
		return
	}
	c := x.chunks[i]
	for t := range c.tf {
		if x.df[t]--; x.df[t] <= 0 {
			delete(x.df, t)
		}
	}
	x.total -= c.len
	last := len(x.chunks) - 1
	if i != last {
		x.chunks[i] = x.chunks[last]
		x.byID[x.chunks[i].ID] = i
	}
	x.chunks[last] = bm25Chunk{}
	x.chunks = x.chunks[:last]
	delete(x.byID, id)
}

// Len is the number of chunks indexed.
func (x *BM25) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.chunks)
}

// Retrieve implements Retriever: the K best chunks that share a term with
// the query and pass its filter. A query of stop words only finds nothing.
func (x *BM25) Retrieve(ctx context.Context, q Query) ([]Result, error) {
	k, err := q.check()
	if err != nil {
		return nil, err
	}
	terms := uniq(x.tokenize(q.Text))
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(terms) == 0 || len(x.chunks) == 0 {
		return nil, nil
	}
	n := float64(len(x.chunks))
	avg := float64(x.total) / n
	idf := make([]float64, len(terms))
	for i, t := range terms {
		df := float64(x.df[t])
		idf[i] = math.Log(1 + (n-df+0.5)/(df+0.5))
	}
	var hits []Result
	for i, c := range x.chunks {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		score := 0.0
		for j, t := range terms {
			f := float64(c.tf[t])
			if f == 0 {
				continue
			}
			norm := 1 - x.b + x.b*float64(c.len)/avg
			score += idf[j] * f * (x.k1 + 1) / (f + x.k1*norm)
		}
		if score > 0 && matches(q.Filter, c.Metadata) {
			hits = append(hits, c.result(score))
		}
	}
	sortResults(hits)
	return trim(hits, k), nil
}

func (c *Chunk) result(score float64) Result {
	return Result{ID: c.ID, DocumentID: c.DocumentID, Title: c.Title, Text: c.Text, Metadata: c.Metadata, Score: score}
}

func uniq(ts []string) []string {
	seen := make(map[string]bool, len(ts))
	out := ts[:0:0]
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// stopwords carry no meaning for ranking (English).
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be by can do does for from how i in is it its of on or
		so that the their then there these this to was what when where which who why will with you your`) {
		stopwords[w] = true
	}
}

// Tokens is BM25's default tokenizer: it lower-cases text, splits it into
// words of letters, digits and underscores, drops English stop words and
// single letters, and strips common suffixes, so "stores", "stored" and
// "store" are one term. Write your own (WithTokenizer) for other
// languages.
func Tokens(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	})
	out := words[:0]
	for _, w := range words {
		if stopwords[w] || len(w) < 2 {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

// stem is a crude suffix stripper, enough to join an English word's common
// forms.
func stem(w string) string {
	for _, suf := range []string{"ing", "ed", "es", "s"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-len(suf)]
			break
		}
	}
	if len(w) > 3 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	return w
}
