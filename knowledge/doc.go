// Package knowledge finds what an agent's documents say about a question,
// and answers the platform's knowledge searches with it.
//
// # Retrieval
//
// A Retriever answers a Query (text, top-k, metadata filter) with Results,
// best first, each with a score. The retrievers here:
//
//   - Vector: embeds the query (an llm.Embedder) and asks a vector.Index
//     for the nearest chunks; it finds passages that say the same thing in
//     other words.
//   - BM25: Okapi BM25 over the chunks' words, in memory; it finds exact
//     names, codes and rare terms that embeddings blur, with no model.
//   - Hybrid: reciprocal rank fusion of several retrievers (a Vector and a
//     BM25 over the same chunks), by rank only, so scores of different
//     kinds combine without tuning.
//   - Reranked: lets a Reranker (a cross-encoder, a model) choose the best
//     among a wider set of candidates; on its failure the retrieval order
//     stays.
//
// # Indexing
//
// A Chunker cuts a Document into Chunks of at most Size characters (or
// tokens, with Count), keeping paragraphs whole where they fit and
// repeating the end of each chunk at the start of the next (Overlap). An
// Indexer chunks documents, embeds the chunks in batches and upserts them
// into a vector.Index (and a BM25 for hybrid search); vector.Open keeps the
// index in files, so it survives a restart.
//
// # The knowledge capability
//
// Capability answers the reference platform's SearchKnowledgeEvent with a
// KnowledgeSearchedEvent: one context block for the model (the sections
// found, grouped by document, each with the citation id the sources list
// shows), the sections themselves (GroundingNodes) and the referenced
// collections that were refused. Each collection is an
// event.KnowledgeReference (database and namespace) with its own
// Retriever; Access (an ACL of users and organisations, or your own)
// decides for each referenced collection whether the asking user may read
// it, and a collection it denies is never queried: the block names it so
// the model says it could not be used, as the reference does.
//
//	cap := &knowledge.Capability{
//		Collections: map[event.KnowledgeReference]knowledge.Retriever{hr: hrIndex},
//		Access:      knowledge.ACL{hr: {Orgs: []string{"acme"}}},
//	}
//	wf, err := step.NewWorkflow("HRAgent", ask, cap.Step("search_knowledge"), answer)
//
// Step is the capability as a step of the agent's workflow, the way guard
// steps are added: it takes the SearchKnowledgeEvent, the user from the
// run's start event, and returns the KnowledgeSearchedEvent. Tool offers
// the same search to the model in an llm.Loop (search_knowledge, with the
// query and the collections to search), checking access for the user of
// the message the loop answers.
package knowledge
