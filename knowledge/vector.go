package knowledge

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/saap-go/agent/vector"
)

// Embedder turns texts into vectors, one per text, in order; an
// llm.Embedder is one. The vectors of one model compare with each other
// only.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// The metadata keys an Indexer writes on each record besides the
// document's own: a Vector retriever reads the chunk's document and title
// from them, and a Query filters on them like on any other key.
const (
	MetaDocument = "document_id"
	MetaTitle    = "title"
	MetaChunk    = "chunk"
)

// Vector retrieves chunks by meaning: it embeds the query with Embedder and
// asks Index for the nearest records (cosine similarity, higher is
// closer). The query must be embedded by the model the chunks were
// embedded with; vectors of different models do not compare.
type Vector struct {
	Index    vector.Index
	Embedder Embedder
}

// Retrieve implements Retriever. A blank query finds nothing.
func (v *Vector) Retrieve(ctx context.Context, q Query) ([]Result, error) {
	k, err := q.check()
	if err != nil {
		return nil, err
	}
	if v.Index == nil || v.Embedder == nil {
		return nil, errors.New("knowledge: Vector needs an Index and an Embedder")
	}
	if strings.TrimSpace(q.Text) == "" {
		return nil, nil
	}
	vecs, err := v.Embedder.Embed(ctx, []string{q.Text})
	if err != nil {
		return nil, fmt.Errorf("knowledge: embed the query: %w", err)
	}
	if len(vecs) != 1 {
		return nil, fmt.Errorf("knowledge: the embedder returned %d vectors for one query", len(vecs))
	}
	ms, err := v.Index.Query(ctx, vecs[0], k, vector.Filter(q.Filter))
	if err != nil {
		return nil, fmt.Errorf("knowledge: query the index: %w", err)
	}
	out := make([]Result, len(ms))
	for i, m := range ms {
		out[i] = fromRecord(m.Record, float64(m.Score))
	}
	return out, nil
}

func fromRecord(r vector.Record, score float64) Result {
	res := Result{ID: r.ID, DocumentID: r.Metadata[MetaDocument], Title: r.Metadata[MetaTitle], Text: r.Text, Score: score}
	if len(r.Metadata) > 0 {
		res.Metadata = maps.Clone(r.Metadata)
		delete(res.Metadata, MetaDocument)
		delete(res.Metadata, MetaTitle)
		delete(res.Metadata, MetaChunk)
	}
	return res
}

// DefaultBatch is how many chunks an Indexer embeds per Embed call when
// its Batch is 0.
const DefaultBatch = 64

// Indexer chunks documents, embeds the chunks and upserts them into Index,
// and into BM25 when set, so that a Hybrid of a Vector and that BM25
// searches the same chunks. A chunk's record is its id, its vector (of its
// title and text), its text, and the document's metadata with
// MetaDocument, MetaTitle and MetaChunk.
//
// Indexing a document again replaces its chunks by id; a new version
// with fewer chunks leaves the old tail, which Remove deletes.
type Indexer struct {
	Chunker  Chunker
	Embedder Embedder
	Index    vector.Index
	// BM25, when set, indexes the same chunks for lexical search.
	BM25 *BM25
	// Batch is how many chunks go to the embedder at once; DefaultBatch
	// when 0.
	Batch int
}

// Add indexes docs and returns how many chunks it wrote. It chunks every
// document before it embeds anything, so a bad document fails the call
// before any write; an embedder or index failure part way leaves the
// batches before it written.
func (ix *Indexer) Add(ctx context.Context, docs ...Document) (int, error) {
	if ix.Index == nil || ix.Embedder == nil {
		return 0, errors.New("knowledge: Indexer needs an Index and an Embedder")
	}
	var chunks []Chunk
	for _, d := range docs {
		cs, err := ix.Chunker.Split(d)
		if err != nil {
			return 0, err
		}
		chunks = append(chunks, cs...)
	}
	batch := ix.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	written := 0
	for start := 0; start < len(chunks); start += batch {
		part := chunks[start:min(start+batch, len(chunks))]
		texts := make([]string, len(part))
		for i, c := range part {
			texts[i] = embedText(c)
		}
		vecs, err := ix.Embedder.Embed(ctx, texts)
		if err != nil {
			return written, fmt.Errorf("knowledge: embed chunks %d–%d: %w", start+1, start+len(part), err)
		}
		if len(vecs) != len(part) {
			return written, fmt.Errorf("knowledge: the embedder returned %d vectors for %d chunks", len(vecs), len(part))
		}
		recs := make([]vector.Record, len(part))
		for i, c := range part {
			md := make(map[string]string, len(c.Metadata)+3)
			maps.Copy(md, c.Metadata)
			md[MetaDocument], md[MetaTitle], md[MetaChunk] = c.DocumentID, c.Title, strconv.Itoa(c.Index)
			recs[i] = vector.Record{ID: c.ID, Vector: vecs[i], Text: c.Text, Metadata: md}
		}
		if err := ix.Index.Upsert(ctx, recs...); err != nil {
			return written, fmt.Errorf("knowledge: write chunks %d–%d: %w", start+1, start+len(part), err)
		}
		if ix.BM25 != nil {
			if err := ix.BM25.Add(part...); err != nil {
				return written, err
			}
		}
		written += len(part)
	}
	return written, nil
}

// Remove deletes the chunks of a document from chunk from (counting from
// 1) up to to, inclusive: the tail an older, longer version left.
func (ix *Indexer) Remove(ctx context.Context, documentID string, from, to int) error {
	if documentID == "" || from < 1 || to < from {
		return fmt.Errorf("%w: remove chunks %d to %d of %q", ErrInvalid, from, to, documentID)
	}
	ids := make([]string, 0, to-from+1)
	for n := from; n <= to; n++ {
		ids = append(ids, documentID+"#"+strconv.Itoa(n))
	}
	if ix.BM25 != nil {
		ix.BM25.Delete(ids...)
	}
	if ix.Index == nil {
		return nil
	}
	return ix.Index.Delete(ctx, ids...)
}

// embedText is what a chunk is embedded as: its title gives a short chunk
// the subject its text may only imply.
func embedText(c Chunk) string {
	if c.Title == "" {
		return c.Text
	}
	return c.Title + "\n\n" + c.Text
}
