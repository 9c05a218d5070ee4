package knowledge_test

import (
	"context"
	"fmt"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/knowledge"
	"github.com/saap-go/agent/llm/llmtest"
	"github.com/saap-go/agent/vector"
)

// A Chunker keeps paragraphs whole while they fit.
func ExampleChunker() {
	chunks, _ := knowledge.Chunker{Size: 50}.Split(knowledge.Document{ID: "faq", Text: "Opening hours: 8 to 17.\n\nClosed on Sundays.\n\nParking is free for customers."})
	for _, c := range chunks {
		fmt.Printf("%s %q\n", c.ID, c.Text)
	}
	// Output:
	// faq#1 "Opening hours: 8 to 17.\n\nClosed on Sundays."
	// faq#2 "Parking is free for customers."
}

// Documents indexed for hybrid search: the vector index and BM25 hold the
// same chunks, and Hybrid fuses their rankings.
func ExampleHybrid() {
	ctx := context.Background()
	ix := vector.NewMemory() // vector.Open(dir) keeps it in files
	defer ix.Close()
	emb := llmtest.HashEmbedder{} // a provider's llm.Embedder in production
	bm := knowledge.NewBM25()
	in := &knowledge.Indexer{Embedder: emb, Index: ix, BM25: bm}
	if _, err := in.Add(ctx,
		knowledge.Document{ID: "leave", Title: "Leave policy", Text: "Every employee has 25 vacation days a year."},
		knowledge.Document{ID: "travel", Title: "Travel policy", Text: "Trains are booked second class."},
	); err != nil {
		fmt.Println(err)
		return
	}
	search := &knowledge.Hybrid{Retrievers: []knowledge.Retriever{&knowledge.Vector{Index: ix, Embedder: emb}, bm}}
	res, err := search.Retrieve(ctx, knowledge.Query{Text: "How many vacation days?", K: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res[0].ID, res[0].Title)
	// Output: leave#1 Leave policy
}

// The capability searches only the collections the user may read, and
// names the others.
func ExampleCapability() {
	hr := event.KnowledgeReference{Database: "hr", Namespace: "policies"}
	board := event.KnowledgeReference{Database: "board", Namespace: "minutes"}
	policies := knowledge.NewBM25()
	_ = policies.Add(knowledge.Chunk{ID: "leave#1", DocumentID: "leave", Title: "Leave policy", Text: "Every employee has 25 vacation days a year."})
	c := &knowledge.Capability{
		Collections: map[event.KnowledgeReference]knowledge.Retriever{hr: policies, board: knowledge.NewBM25()},
		Access:      knowledge.ACL{hr: {Orgs: []string{"acme"}}, board: {Users: []string{"ceo"}}},
	}
	user := &event.UserIdentity{ID: "anna", ActingWithinTenant: &event.TenantIdentity{ID: "acme"}}
	res, err := c.Search(context.Background(), user, &event.SearchKnowledgeEvent{
		References: []event.KnowledgeReference{hr, board}, Query: "vacation days", CiteSources: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("found:", res.GroundingNodes[0].Source)
	fmt.Println("refused:", res.Refused[0].Database+"/"+res.Refused[0].Namespace)
	// Output:
	// found: Leave policy
	// refused: board/minutes
}
