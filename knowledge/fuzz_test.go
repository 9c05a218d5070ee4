package knowledge_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/saap-go/agent/knowledge"
	"github.com/saap-go/agent/llm"
)

// An llm.Embedder is a knowledge.Embedder.
var _ knowledge.Embedder = llm.Embedder(nil)

// Whatever the text, Split never panics, never returns an empty chunk,
// and keeps every chunk within the size unless one word alone exceeds it.
func FuzzChunker(f *testing.F) {
	f.Add("First paragraph.\n\nSecond one. With two sentences!\n\n\n", 20, 5)
	f.Add(strings.Repeat("word ", 100), 12, 11)
	f.Add("ünïcödé\r\n\r\n  \t\n x", 3, 1)
	f.Fuzz(func(t *testing.T, text string, size, overlap int) {
		c := knowledge.Chunker{Size: size % 500, Overlap: overlap % 500}
		chunks, err := c.Split(knowledge.Document{ID: "d", Text: text})
		if err != nil {
			return
		}
		limit := c.Size
		if limit == 0 {
			limit = knowledge.DefaultChunkSize
		}
		for i, ch := range chunks {
			if strings.TrimSpace(ch.Text) == "" {
				t.Fatalf("chunk %d is empty", i)
			}
			if n := utf8.RuneCountInString(ch.Text); n > limit && len(strings.Fields(ch.Text)) > 1 {
				t.Fatalf("chunk %d of %d characters, limit %d: %q", i, n, limit, ch.Text)
			}
		}
	})
}
