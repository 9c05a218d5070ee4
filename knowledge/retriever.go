package knowledge

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// DefaultK is the number of results of a Query whose K is 0.
const DefaultK = 5

// MaxK bounds a Query's K, so a model's or a client's number cannot make a
// retriever sort and return an index's whole content.
const MaxK = 1000

// ErrInvalid is wrapped by the errors of bad input: a query without text,
// a negative or oversize K, a chunk setting that cannot work.
var ErrInvalid = errors.New("knowledge: invalid input")

// Query is what a retriever is asked for.
type Query struct {
	// Text is the question or search words.
	Text string
	// K is how many results to return at most; DefaultK when 0.
	K int
	// Filter keeps only chunks whose metadata has each of its keys with
	// exactly its value (a collection, a language, a document).
	Filter map[string]string
}

// k returns the number of results the query asks for, or an error naming
// what is wrong with it.
func (q Query) k() (int, error) {
	switch {
	case q.K < 0:
		return 0, fmt.Errorf("%w: top-k %d is negative", ErrInvalid, q.K)
	case q.K > MaxK:
		return 0, fmt.Errorf("%w: top-k %d is more than %d", ErrInvalid, q.K, MaxK)
	case q.K == 0:
		return DefaultK, nil
	}
	return q.K, nil
}

func (q Query) check() (int, error) {
	k, err := q.k()
	if err != nil {
		return 0, err
	}
	if len(q.Text) > MaxQueryLen {
		return 0, fmt.Errorf("%w: query of %d bytes, more than %d", ErrInvalid, len(q.Text), MaxQueryLen)
	}
	return k, nil
}

// MaxQueryLen bounds a query's text, in bytes.
const MaxQueryLen = 16 << 10

// Result is a retrieved chunk with its score. Scores are comparable within
// one retriever's answer only: BM25 scores are unbounded, vector scores
// are cosine similarities, fused scores are reciprocal ranks.
type Result struct {
	// ID is the chunk's id, unique in its index ("<document>#<n>").
	ID string
	// DocumentID is the document the chunk is part of.
	DocumentID string
	// Title is the document's title, the source a citation names.
	Title string
	// Text is the chunk's text.
	Text     string
	Metadata map[string]string
	Score    float64
}

// Retriever finds the chunks that answer a query best, best first. A
// retriever is safe for concurrent use; it stops when ctx is done,
// returning ctx's error.
type Retriever interface {
	Retrieve(ctx context.Context, q Query) ([]Result, error)
}

// RetrieverFunc makes a function a Retriever.
type RetrieverFunc func(ctx context.Context, q Query) ([]Result, error)

// Retrieve implements Retriever.
func (f RetrieverFunc) Retrieve(ctx context.Context, q Query) ([]Result, error) { return f(ctx, q) }

// Reranker orders candidates for a query again, usually with a model that
// reads query and text together (a cross-encoder), and keeps the best.
// It returns at most k results, best first, with scores of its own.
type Reranker interface {
	Rerank(ctx context.Context, query string, candidates []Result, k int) ([]Result, error)
}

// Reranked is a Retriever that fetches Candidates results from Retriever
// and lets Reranker choose the query's K among them. When the reranker
// fails, the retriever's own order is kept and the error is reported to
// OnError: a failing ranking model should not leave a turn without its
// documents (the reference falls back the same way).
type Reranked struct {
	Retriever Retriever
	Reranker  Reranker
	// Candidates is how many results the reranker chooses from; four times
	// the query's K when 0.
	Candidates int
	// OnError, when set, hears of a reranker's failure.
	OnError func(error)
}

// Retrieve implements Retriever.
func (r *Reranked) Retrieve(ctx context.Context, q Query) ([]Result, error) {
	k, err := q.check()
	if err != nil {
		return nil, err
	}
	if r.Retriever == nil {
		return nil, errors.New("knowledge: Reranked without a Retriever")
	}
	n := r.Candidates
	if n <= 0 {
		n = 4 * k
	}
	wide := q
	wide.K = min(max(n, k), MaxK)
	candidates, err := r.Retriever.Retrieve(ctx, wide)
	if err != nil || r.Reranker == nil || len(candidates) == 0 {
		return trim(candidates, k), err
	}
	out, err := r.Reranker.Rerank(ctx, q.Text, candidates, k)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if r.OnError != nil {
			r.OnError(err)
		}
		return trim(candidates, k), nil
	}
	return trim(out, k), nil
}

func trim(rs []Result, k int) []Result {
	if len(rs) > k {
		return rs[:k]
	}
	return rs
}

// sortResults orders results best first; equal scores keep the order of
// their ids, so an answer never depends on map iteration.
func sortResults(rs []Result) {
	sort.SliceStable(rs, func(a, b int) bool {
		if rs[a].Score != rs[b].Score {
			return rs[a].Score > rs[b].Score
		}
		return rs[a].ID < rs[b].ID
	})
}

// matches reports whether metadata has every key of filter with its value.
func matches(filter, metadata map[string]string) bool {
	for k, v := range filter {
		if got, ok := metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}
