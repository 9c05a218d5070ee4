package knowledge

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// DefaultRRFConstant is the k of reciprocal rank fusion: 60, as in Cormack,
// Clarke and Büttcher's paper, where it worked across collections.
const DefaultRRFConstant = 60

// Hybrid fuses the answers of several retrievers (typically a Vector and a
// BM25 over the same chunks) by reciprocal rank fusion: a chunk scores
// the sum over the retrievers of weight / (C + rank), rank counting from 1.
// Only ranks count, so retrievers whose scores are not comparable (cosine
// similarities and BM25 sums) combine without tuning, and a chunk both
// find rises above one that only one finds.
type Hybrid struct {
	Retrievers []Retriever
	// Weights, when set, weigh each retriever's ranks (1 each by default);
	// it has one weight per retriever.
	Weights []float64
	// C is the fusion constant; DefaultRRFConstant when 0. Lower favours
	// the top ranks of each list more.
	C float64
	// Depth is how many results each retriever contributes; twice the
	// query's K when 0 (at least 20).
	Depth int
}

// Retrieve implements Retriever. The retrievers are asked in parallel;
// one's error fails the query.
func (h *Hybrid) Retrieve(ctx context.Context, q Query) ([]Result, error) {
	k, err := q.check()
	if err != nil {
		return nil, err
	}
	if len(h.Retrievers) == 0 {
		return nil, errors.New("knowledge: Hybrid without retrievers")
	}
	if h.Weights != nil && len(h.Weights) != len(h.Retrievers) {
		return nil, fmt.Errorf("%w: Hybrid has %d weights for %d retrievers", ErrInvalid, len(h.Weights), len(h.Retrievers))
	}
	depth := h.Depth
	if depth <= 0 {
		depth = max(2*k, 20)
	}
	sub := q
	sub.K = min(depth, MaxK)
	lists := make([][]Result, len(h.Retrievers))
	errs := make([]error, len(h.Retrievers))
	var wg sync.WaitGroup
	for i, r := range h.Retrievers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lists[i], errs[i] = r.Retrieve(ctx, sub)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return trim(h.fuse(lists), k), nil
}

// fuse merges ranked lists by reciprocal rank; the first list that has a
// chunk gives its text and metadata.
func (h *Hybrid) fuse(lists [][]Result) []Result {
	c := h.C
	if c <= 0 {
		c = DefaultRRFConstant
	}
	at := map[string]int{}
	var out []Result
	for i, list := range lists {
		w := 1.0
		if h.Weights != nil {
			w = h.Weights[i]
		}
		for rank, r := range list {
			s := w / (c + float64(rank+1))
			if j, ok := at[r.ID]; ok {
				out[j].Score += s
				continue
			}
			at[r.ID] = len(out)
			r.Score = s
			out = append(out, r)
		}
	}
	sortResults(out)
	return out
}
