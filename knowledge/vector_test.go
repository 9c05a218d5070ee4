package knowledge_test

import (
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/knowledge"
	"github.com/saap-go/agent/vector"
)

// bagEmbedder is a deterministic stand-in for an embedding model: each
// term of a text adds to a hashed dimension, so texts sharing terms point
// the same way. It counts its calls.
type bagEmbedder struct {
	calls atomic.Int64
	texts atomic.Int64
}

const bagDim = 64

func (e *bagEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.calls.Add(1)
	e.texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, bagDim)
		v[0] = 0.01 // never the zero vector
		for _, tok := range knowledge.Tokens(t) {
			h := fnv.New32a()
			h.Write([]byte(tok))
			v[1+int(h.Sum32()%(bagDim-1))]++
		}
		out[i] = v
	}
	return out, nil
}

var handbook = []knowledge.Document{
	{ID: "leave", Title: "Leave policy", Metadata: map[string]string{"lang": "en"},
		Text: "Every employee has 25 vacation days a year.\n\nUnused vacation days expire at the end of March."},
	{ID: "travel", Title: "Travel policy", Metadata: map[string]string{"lang": "en"},
		Text: "Trains are booked second class.\n\nFlights need the approval of a manager."},
	{ID: "ferien", Title: "Ferienreglement", Metadata: map[string]string{"lang": "de"},
		Text: "Alle Mitarbeitenden haben 25 Ferientage im Jahr."},
}

func openIndex(t *testing.T, dir string) *vector.Local {
	t.Helper()
	ix, err := vector.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// Knowledge on the embedded index with files on disk: indexed once, it
// answers the same after a restart without embedding anything again.
func TestVectorIndexSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	emb := &bagEmbedder{}
	ix := openIndex(t, dir)
	bm := knowledge.NewBM25()
	in := &knowledge.Indexer{Chunker: knowledge.Chunker{Size: 60}, Embedder: emb, Index: ix, BM25: bm, Batch: 2}
	n, err := in.Add(context.Background(), handbook...)
	if err != nil || n != 5 || ix.Len() != 5 || bm.Len() != 5 {
		t.Fatalf("indexed %d (%v), index %d, bm25 %d", n, err, ix.Len(), bm.Len())
	}
	if got := emb.calls.Load(); got != 3 {
		t.Errorf("%d embed calls for 5 chunks in batches of 2", got)
	}
	vec := &knowledge.Vector{Index: ix, Embedder: emb}
	before := search(t, vec, "When do unused vacation days expire?", 2)
	if len(before) != 2 || before[0].ID != "leave#2" || before[0].DocumentID != "leave" || before[0].Title != "Leave policy" ||
		before[0].Metadata["lang"] != "en" || before[0].Score <= 0 || before[0].Score > 1.0001 {
		t.Fatalf("before restart %+v", before)
	}
	if _, ok := before[0].Metadata[knowledge.MetaDocument]; ok {
		t.Errorf("the index's own keys leak into Metadata: %v", before[0].Metadata)
	}
	de, err := vec.Retrieve(context.Background(), knowledge.Query{Text: "25 vacation days", K: 5, Filter: map[string]string{"lang": "de"}})
	if err != nil || len(de) != 1 || de[0].ID != "ferien#1" {
		t.Errorf("filtered %v %v", ids(de), err)
	}
	must(t, ix.Close())

	calls := emb.texts.Load()
	ix = openIndex(t, dir)
	defer ix.Close()
	if ix.Len() != 5 {
		t.Fatalf("after restart the index holds %d records", ix.Len())
	}
	vec = &knowledge.Vector{Index: ix, Embedder: emb}
	after := search(t, vec, "When do unused vacation days expire?", 2)
	if !slices.Equal(ids(after), ids(before)) || after[0].Text != before[0].Text {
		t.Errorf("after restart %v, before %v", ids(after), ids(before))
	}
	if got := emb.texts.Load() - calls; got != 1 {
		t.Errorf("the restart embedded %d texts, want only the query", got)
	}

	// A document that shrank leaves its tail, which Remove deletes.
	in = &knowledge.Indexer{Chunker: knowledge.Chunker{Size: 60}, Embedder: emb, Index: ix}
	if _, err := in.Add(context.Background(), knowledge.Document{ID: "leave", Title: "Leave policy", Text: "Vacation: 26 days."}); err != nil {
		t.Fatal(err)
	}
	must(t, in.Remove(context.Background(), "leave", 2, 2))
	if ix.Len() != 4 {
		t.Errorf("after shrinking: %d records", ix.Len())
	}
}

type brokenEmbedder struct{ n int }

func (b brokenEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if b.n < 0 {
		return nil, errors.New("model down")
	}
	return make([][]float32, b.n), nil
}

func TestIndexerRejectsBadInput(t *testing.T) {
	ix := vector.NewMemory()
	defer ix.Close()
	in := &knowledge.Indexer{Embedder: &bagEmbedder{}, Index: ix}
	// One bad document fails the call before anything is written.
	if _, err := in.Add(context.Background(), handbook[0], knowledge.Document{ID: "empty"}); !errors.Is(err, knowledge.ErrInvalid) || ix.Len() != 0 {
		t.Errorf("bad document: %v, %d written", err, ix.Len())
	}
	for _, e := range []knowledge.Embedder{brokenEmbedder{-1}, brokenEmbedder{7}} {
		in.Embedder = e
		if _, err := in.Add(context.Background(), handbook[0]); err == nil || ix.Len() != 0 {
			t.Errorf("embedder %v: %v, %d written", e, err, ix.Len())
		}
	}
	if _, err := (&knowledge.Indexer{}).Add(context.Background(), handbook[0]); err == nil {
		t.Error("an Indexer without an index worked")
	}
	if err := in.Remove(context.Background(), "leave", 3, 2); !errors.Is(err, knowledge.ErrInvalid) {
		t.Errorf("Remove 3..2: %v", err)
	}
	vec := &knowledge.Vector{Index: ix, Embedder: brokenEmbedder{-1}}
	if _, err := vec.Retrieve(context.Background(), knowledge.Query{Text: "x"}); err == nil || !strings.Contains(err.Error(), "model down") {
		t.Errorf("failing embedder: %v", err)
	}
	if res, err := vec.Retrieve(context.Background(), knowledge.Query{Text: "  "}); err != nil || res != nil {
		t.Errorf("blank query: %v %v", res, err)
	}
}

// The capability over collections on disk: each collection its own index
// directory, searched hybrid, another user's never opened for a query.
func TestCapabilityOnDisk(t *testing.T) {
	emb := &bagEmbedder{}
	retr := map[event.KnowledgeReference]knowledge.Retriever{}
	spies := map[event.KnowledgeReference]*countingRetriever{}
	for ref, docs := range map[event.KnowledgeReference][]knowledge.Document{
		hrPolicies: handbook,
		bobsNotes:  {{ID: "salary", Title: "Bob's salary", Text: "Bob has 30 vacation days."}},
	} {
		ix := openIndex(t, t.TempDir())
		t.Cleanup(func() { ix.Close() })
		bm := knowledge.NewBM25()
		if _, err := (&knowledge.Indexer{Embedder: emb, Index: ix, BM25: bm}).Add(context.Background(), docs...); err != nil {
			t.Fatal(err)
		}
		spies[ref] = &countingRetriever{r: &knowledge.Hybrid{Retrievers: []knowledge.Retriever{&knowledge.Vector{Index: ix, Embedder: emb}, bm}}}
		retr[ref] = spies[ref]
	}
	c := &knowledge.Capability{Collections: retr, Access: knowledge.ACL{hrPolicies: {AnyUser: true}, bobsNotes: {Users: []string{"bob"}}}}
	res, err := c.Search(context.Background(), anna, &event.SearchKnowledgeEvent{References: []event.KnowledgeReference{hrPolicies, bobsNotes}, Query: "vacation days", CiteSources: true})
	if err != nil {
		t.Fatal(err)
	}
	if spies[bobsNotes].n.Load() != 0 || len(res.Refused) != 1 || strings.Contains(blockText(res), "30 vacation") {
		t.Errorf("Bob's collection: searched %d, refused %v", spies[bobsNotes].n.Load(), res.Refused)
	}
	if len(res.GroundingNodes) == 0 || res.GroundingNodes[0].DocumentID != "leave" {
		t.Errorf("nodes %+v", res.GroundingNodes)
	}
}

type countingRetriever struct {
	r knowledge.Retriever
	n atomic.Int64
}

func (c *countingRetriever) Retrieve(ctx context.Context, q knowledge.Query) ([]knowledge.Result, error) {
	c.n.Add(1)
	return c.r.Retrieve(ctx, q)
}
