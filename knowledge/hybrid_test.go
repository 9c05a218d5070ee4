package knowledge_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/saap-go/agent/knowledge"
)

// fixed is a retriever answering the same ranking to every query.
func fixed(idList ...string) knowledge.Retriever {
	return knowledge.RetrieverFunc(func(_ context.Context, q knowledge.Query) ([]knowledge.Result, error) {
		out := make([]knowledge.Result, len(idList))
		for i, id := range idList {
			out[i] = knowledge.Result{ID: id, Text: "text of " + id, Score: float64(100 - i)}
		}
		if len(out) > q.K {
			out = out[:q.K]
		}
		return out, nil
	})
}

func TestHybridFusesRanks(t *testing.T) {
	h := &knowledge.Hybrid{Retrievers: []knowledge.Retriever{fixed("a", "b", "c"), fixed("c", "d", "a")}}
	res := search(t, h, "q", 4)
	// a: 1/61+1/63, c: 1/63+1/61, tie broken by id; then b (1/62), d (1/62).
	if got := ids(res); !slices.Equal(got, []string{"a", "c", "b", "d"}) {
		t.Errorf("fused %v", got)
	}
	if res[0].Score != 1.0/61+1.0/63 {
		t.Errorf("score %v", res[0].Score)
	}
	// Weights favour one list.
	h.Weights = []float64{0.1, 1}
	if got := ids(search(t, h, "q", 2)); !slices.Equal(got, []string{"c", "a"}) {
		t.Errorf("weighted %v", got)
	}
	h.Weights = []float64{1}
	if _, err := h.Retrieve(context.Background(), knowledge.Query{Text: "q"}); !errors.Is(err, knowledge.ErrInvalid) {
		t.Errorf("weights of the wrong length: %v", err)
	}
	failing := knowledge.RetrieverFunc(func(context.Context, knowledge.Query) ([]knowledge.Result, error) {
		return nil, errors.New("index down")
	})
	if _, err := (&knowledge.Hybrid{Retrievers: []knowledge.Retriever{fixed("a"), failing}}).Retrieve(context.Background(), knowledge.Query{Text: "q"}); err == nil {
		t.Error("a failing retriever's error was lost")
	}
}

type reverse struct{ fail bool }

func (r reverse) Rerank(_ context.Context, _ string, c []knowledge.Result, k int) ([]knowledge.Result, error) {
	if r.fail {
		return nil, errors.New("reranker down")
	}
	out := slices.Clone(c)
	slices.Reverse(out)
	return out[:min(k, len(out))], nil
}

func TestRerankedFallsBack(t *testing.T) {
	r := &knowledge.Reranked{Retriever: fixed("a", "b", "c", "d"), Reranker: reverse{}}
	if got := ids(search(t, r, "q", 2)); !slices.Equal(got, []string{"d", "c"}) {
		t.Errorf("reranked %v", got)
	}
	var heard error
	r = &knowledge.Reranked{Retriever: fixed("a", "b", "c"), Reranker: reverse{fail: true}, OnError: func(err error) { heard = err }}
	if got := ids(search(t, r, "q", 2)); !slices.Equal(got, []string{"a", "b"}) || heard == nil {
		t.Errorf("fallback %v, heard %v", got, heard)
	}
}
