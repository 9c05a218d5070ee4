package knowledge_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/saap-go/agent/knowledge"
)

func TestChunkerKeepsParagraphs(t *testing.T) {
	doc := knowledge.Document{ID: "d", Title: "T", Metadata: map[string]string{"lang": "en"},
		Text: "First paragraph is short.\n\nSecond one, also short.\n\n\n  Third paragraph here.  "}
	chunks, err := knowledge.Chunker{Size: 60}.Split(doc)
	if err != nil {
		t.Fatal(err)
	}
	// The first two fit together (25 + 2 + 23 = 50); the third does not.
	if len(chunks) != 2 || chunks[0].Text != "First paragraph is short.\n\nSecond one, also short." || chunks[1].Text != "Third paragraph here." {
		t.Fatalf("chunks %q", texts(chunks))
	}
	c := chunks[1]
	if c.ID != "d#2" || c.DocumentID != "d" || c.Title != "T" || c.Index != 1 || c.Metadata["lang"] != "en" {
		t.Errorf("chunk %+v", c)
	}
	chunks[0].Metadata["lang"] = "changed"
	if chunks[1].Metadata["lang"] != "en" || doc.Metadata["lang"] != "en" {
		t.Error("chunks share their metadata map")
	}
}

func TestChunkerSplitsLongParagraphsWithOverlap(t *testing.T) {
	var sentences []string
	for i := 0; i < 40; i++ {
		sentences = append(sentences, "Sentence number "+strings.Repeat("x", i%7)+" ends here.")
	}
	text := strings.Join(sentences, " ") + "\n\n" + strings.Repeat("word ", 200)
	ch := knowledge.Chunker{Size: 120, Overlap: 30}
	chunks, err := ch.Split(knowledge.Document{ID: "long", Text: text})
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 10 {
		t.Fatalf("%d chunks", len(chunks))
	}
	for i, c := range chunks {
		if n := utf8.RuneCountInString(c.Text); n > 120 {
			t.Errorf("chunk %d has %d characters, more than 120", i, n)
		}
		if i == 0 {
			continue
		}
		// Each chunk begins with words the one before ended with.
		prev := strings.Fields(chunks[i-1].Text)
		first := strings.Fields(c.Text)[0]
		tail := strings.Join(prev[max(0, len(prev)-6):], " ")
		if !strings.Contains(tail, first) {
			t.Errorf("chunk %d starts %q, not in the end of the one before %q", i, first, tail)
		}
	}
	// Every word of the text is in some chunk, in order.
	var all []string
	for _, c := range chunks {
		all = append(all, c.Text)
	}
	joined := strings.Join(all, " ")
	for _, s := range sentences {
		if !strings.Contains(joined, s) {
			t.Errorf("sentence %q lost", s)
		}
	}
	// Counted in estimated tokens, a chunk holds about four times more.
	tok, err := knowledge.Chunker{Size: 120, Count: knowledge.EstimateTokens}.Split(knowledge.Document{ID: "long", Text: text})
	if err != nil || len(tok) >= len(chunks) {
		t.Errorf("token chunks %d, character chunks %d, %v", len(tok), len(chunks), err)
	}
}

func TestChunkerRejectsBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		c knowledge.Chunker
		d knowledge.Document
	}{
		"no id":            {knowledge.Chunker{}, knowledge.Document{Text: "x"}},
		"blank":            {knowledge.Chunker{}, knowledge.Document{ID: "d", Text: " \n\n "}},
		"overlap >= size":  {knowledge.Chunker{Size: 10, Overlap: 10}, knowledge.Document{ID: "d", Text: "x"}},
		"negative overlap": {knowledge.Chunker{Overlap: -1}, knowledge.Document{ID: "d", Text: "x"}},
		"negative size":    {knowledge.Chunker{Size: -5}, knowledge.Document{ID: "d", Text: "x"}},
	} {
		if _, err := tc.c.Split(tc.d); !errors.Is(err, knowledge.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func texts(cs []knowledge.Chunk) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Text
	}
	return out
}
