package main

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/saap-go/agent/knowledge"
	"github.com/saap-go/agent/llm/llmtest"
	"github.com/saap-go/agent/vector"
)

//go:embed corpus/*.md
var corpusFS embed.FS

// chunker cuts the corpus into its paragraphs: each is shorter than the
// size, and no two of a document fit together.
var chunker = knowledge.Chunker{Size: 300}

// LoadCorpus reads the bundled documents, one per file, titled by its
// first heading, with each paragraph's lines joined.
func LoadCorpus() ([]knowledge.Document, error) {
	var docs []knowledge.Document
	err := fs.WalkDir(corpusFS, "corpus", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := corpusFS.ReadFile(p)
		if err != nil {
			return err
		}
		id := strings.TrimSuffix(path.Base(p), ".md")
		doc := knowledge.Document{ID: id, Title: id, Metadata: map[string]string{"file": path.Base(p)}}
		var paras []string
		for _, para := range strings.Split(string(data), "\n\n") {
			para = strings.TrimSpace(para)
			if t, ok := strings.CutPrefix(para, "# "); ok {
				doc.Title = t
				continue
			}
			if para != "" {
				paras = append(paras, strings.Join(strings.Fields(para), " "))
			}
		}
		doc.Text = strings.Join(paras, "\n\n")
		docs = append(docs, doc)
		return nil
	})
	return docs, err
}

// Chunks cuts docs into the chunks the retrievers index ("nats#1" is the
// first paragraph of nats.md).
func Chunks(docs []knowledge.Document) ([]knowledge.Chunk, error) {
	var out []knowledge.Chunk
	for _, d := range docs {
		cs, err := chunker.Split(d)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

// NewBM25 indexes the corpus for lexical search.
func NewBM25(chunks []knowledge.Chunk) (*knowledge.BM25, error) {
	ix := knowledge.NewBM25()
	return ix, ix.Add(chunks...)
}

// embedder stands in for an embedding model so the example runs offline:
// a hashed bag of words, which knows no synonyms. With a provider's
// embeddings (an llm.Embedder of package llm/openai, say) the vector
// search finds paraphrases too.
var embedder knowledge.Embedder = llmtest.HashEmbedder{}

// Retrieval is how Retrieve ranks the corpus.
type Retrieval string

// The retrievals of -retrieval.
const (
	ByVector Retrieval = "vector" // nearest embeddings on the vector index
	ByHybrid Retrieval = "hybrid" // the vector index and BM25, fused by rank
	ByBM25   Retrieval = "bm25"   // BM25 alone, the former demo
)

// Retriever indexes the corpus and returns the retriever for how. The
// vector index lives in dir (files that survive a restart: a second start
// embeds nothing), or in memory when dir is empty; the index is returned
// for closing. note reports what was done.
func Retriever(ctx context.Context, how Retrieval, dir string, note func(string)) (knowledge.Retriever, vector.Index, error) {
	docs, err := LoadCorpus()
	if err != nil {
		return nil, nil, err
	}
	chunks, err := Chunks(docs)
	if err != nil {
		return nil, nil, err
	}
	bm25, err := NewBM25(chunks)
	if err != nil {
		return nil, nil, err
	}
	if how == ByBM25 {
		return bm25, nil, nil
	}
	if how != ByVector && how != ByHybrid {
		return nil, nil, fmt.Errorf("unknown retrieval %q: vector, hybrid or bm25", how)
	}
	var ix *vector.Local
	if dir == "" {
		ix = vector.NewMemory()
	} else if ix, err = vector.Open(dir); err != nil {
		return nil, nil, err
	}
	// The corpus is bundled: an index holding as many chunks holds it.
	if ix.Len() == len(chunks) {
		note(fmt.Sprintf("the vector index in %s holds the corpus's %d chunks: nothing to embed", dir, ix.Len()))
	} else {
		n, err := (&knowledge.Indexer{Chunker: chunker, Embedder: embedder, Index: ix}).Add(ctx, docs...)
		if err != nil {
			ix.Close()
			return nil, nil, err
		}
		note(fmt.Sprintf("embedded and indexed %d chunks", n))
	}
	vec := &knowledge.Vector{Index: ix, Embedder: embedder}
	if how == ByVector {
		return vec, ix, nil
	}
	return &knowledge.Hybrid{Retrievers: []knowledge.Retriever{vec, bm25}}, ix, nil
}
