package main

import (
	"embed"
	"io/fs"
	"path"
	"strings"

	"github.com/saap-go/agent/knowledge"
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
