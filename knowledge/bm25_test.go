package knowledge_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/saap-go/agent/knowledge"
)

func ids(rs []knowledge.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func search(t *testing.T, r knowledge.Retriever, q string, k int) []knowledge.Result {
	t.Helper()
	res, err := r.Retrieve(context.Background(), knowledge.Query{Text: q, K: k})
	if err != nil {
		t.Fatalf("Retrieve(%q): %v", q, err)
	}
	return res
}

func TestBM25Ranking(t *testing.T) {
	ix := knowledge.NewBM25()
	if err := ix.Add(
		knowledge.Chunk{ID: "a", Text: "nats nats nats stream"},
		knowledge.Chunk{ID: "b", Text: "stream of events about the agent gateway and many other words that make it long"},
		knowledge.Chunk{ID: "c", Text: "the gateway"},
		knowledge.Chunk{ID: "d", Text: "agent agent agent agent"},
	); err != nil {
		t.Fatal(err)
	}
	// A rare term outweighs a common one.
	if hits := search(t, ix, "nats gateway", 4); len(hits) != 3 || hits[0].ID != "a" {
		t.Fatalf("hits = %v", ids(hits))
	}
	// Length normalisation: the short passage beats the long one.
	if hits := search(t, ix, "gateway", 4); len(hits) != 2 || hits[0].ID != "c" || hits[1].ID != "b" {
		t.Fatalf("gateway hits = %v", ids(hits))
	}
	// Saturation: four occurrences score less than four times one.
	one := search(t, ix, "stream", 4)
	four := search(t, ix, "agent", 4)
	if four[0].ID != "d" || four[0].Score >= 4*one[len(one)-1].Score {
		t.Errorf("no saturation: %+v vs %+v", four, one)
	}
	if got := search(t, ix, "zebra", 3); len(got) != 0 {
		t.Errorf("unknown term matched %v", ids(got))
	}
	if got := search(t, ix, "the of and", 3); len(got) != 0 {
		t.Errorf("stop words matched %v", ids(got))
	}
	for _, h := range search(t, ix, "stream gateway agent", 4) {
		if math.IsNaN(h.Score) || h.Score <= 0 {
			t.Errorf("score %v", h.Score)
		}
	}
}

func TestBM25ReplaceDeleteFilter(t *testing.T) {
	ix := knowledge.NewBM25()
	must(t, ix.Add(
		knowledge.Chunk{ID: "a", Text: "invoice rules", Metadata: map[string]string{"lang": "en"}},
		knowledge.Chunk{ID: "b", Text: "invoice regeln", Metadata: map[string]string{"lang": "de"}},
	))
	res, err := ix.Retrieve(context.Background(), knowledge.Query{Text: "invoice", Filter: map[string]string{"lang": "de"}})
	if err != nil || len(res) != 1 || res[0].ID != "b" {
		t.Fatalf("filtered = %v, %v", ids(res), err)
	}
	// Replacing a chunk drops its old terms.
	must(t, ix.Add(knowledge.Chunk{ID: "a", Text: "travel expenses"}))
	if got := ids(search(t, ix, "invoice", 5)); len(got) != 1 || got[0] != "b" {
		t.Errorf("after replace: %v", got)
	}
	ix.Delete("b", "unknown")
	if ix.Len() != 1 || len(search(t, ix, "invoice", 5)) != 0 {
		t.Errorf("after delete: len %d", ix.Len())
	}
	if err := ix.Add(knowledge.Chunk{Text: "no id"}); !errors.Is(err, knowledge.ErrInvalid) {
		t.Errorf("chunk without id: %v", err)
	}
	for _, k := range []int{-1, knowledge.MaxK + 1} {
		if _, err := ix.Retrieve(context.Background(), knowledge.Query{Text: "x", K: k}); !errors.Is(err, knowledge.ErrInvalid) {
			t.Errorf("K %d: %v", k, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ix.Retrieve(ctx, knowledge.Query{Text: "travel"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
