package knowledge

import (
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Document is a text to index: a file's content, a page, a record.
type Document struct {
	// ID names the document in its index; its chunks are "<ID>#<n>".
	ID string
	// Title is what a citation names (a file name, a heading).
	Title string
	Text  string
	// Metadata is copied to every chunk, for filters (collection,
	// language, owner).
	Metadata map[string]string
}

// Chunk is a piece of a document, the unit that is embedded, indexed and
// retrieved.
type Chunk struct {
	// ID is "<document ID>#<n>", n counting from 1.
	ID         string
	DocumentID string
	Title      string
	Text       string
	// Index is the chunk's place in its document, from 0.
	Index    int
	Metadata map[string]string
}

// Chunker splits documents into chunks of at most Size units, measured by
// Count, keeping paragraphs whole where they fit: paragraphs (separated by
// blank lines) are packed into a chunk while they fit, a paragraph larger
// than Size is split between sentences, and a sentence larger than Size
// between words. Each chunk but the first of a document starts with the
// last Overlap units of the chunk before it, so a passage cut at a boundary
// is whole in one of the two.
type Chunker struct {
	// Size is the most a chunk may measure; DefaultChunkSize when 0.
	Size int
	// Overlap is how much of a chunk's end the next chunk repeats, at
	// most half of Size; none when 0.
	Overlap int
	// Count measures a text; characters (runes) when nil. EstimateTokens
	// measures in tokens, or pass a model's tokenizer.
	Count func(string) int
}

// DefaultChunkSize is the Size of a Chunker without one: 1000 of its
// units, about a long paragraph in characters.
const DefaultChunkSize = 1000

// EstimateTokens estimates the tokens of a text as a quarter of its bytes,
// the usual rule for English with the common tokenizers; a Chunker's Count
// for token budgets without a tokenizer.
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

func (c Chunker) size() int {
	if c.Size <= 0 {
		return DefaultChunkSize
	}
	return c.Size
}

func (c Chunker) count(s string) int {
	if c.Count == nil {
		return utf8.RuneCountInString(s)
	}
	return c.Count(s)
}

func (c Chunker) check() error {
	if c.Size < 0 {
		return fmt.Errorf("%w: chunk size %d is negative", ErrInvalid, c.Size)
	}
	// An overlap near the size would make a chunk per word: a text of
	// n units would become n chunks of the size each.
	if c.Overlap < 0 || c.Overlap > c.size()/2 {
		return fmt.Errorf("%w: chunk overlap %d must be at least 0 and at most half the size %d", ErrInvalid, c.Overlap, c.size())
	}
	return nil
}

var (
	paragraphBreak = regexp.MustCompile(`\n[ \t]*\n\s*`)
	sentenceEnd    = regexp.MustCompile(`[.!?;:]["')\]]*\s+`)
)

// Split cuts a document into chunks. A document without an ID or with
// only white space is an error, as is a Chunker whose Overlap is more than
// half its Size.
func (c Chunker) Split(doc Document) ([]Chunk, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if doc.ID == "" {
		return nil, fmt.Errorf("%w: document without an ID", ErrInvalid)
	}
	if strings.TrimSpace(doc.Text) == "" {
		return nil, fmt.Errorf("%w: document %q has no text", ErrInvalid, doc.ID)
	}
	texts := c.pack(doc.Text)
	out := make([]Chunk, len(texts))
	for i, t := range texts {
		out[i] = Chunk{ID: doc.ID + "#" + strconv.Itoa(i+1), DocumentID: doc.ID, Title: doc.Title, Text: t, Index: i, Metadata: maps.Clone(doc.Metadata)}
	}
	return out, nil
}

// piece is a unit of packing: a paragraph or part of one, and whether it
// begins a paragraph (joined by a blank line) or continues one (a space).
type piece struct {
	text   string
	starts bool
}

// pieces splits text into paragraphs, and those larger than the size into
// sentences and then words.
func (c Chunker) pieces(text string) []piece {
	var out []piece
	for _, para := range paragraphBreak.Split(strings.TrimSpace(text), -1) {
		para = strings.TrimSpace(para)
		if para == "" {
			continue
		}
		if c.count(para) <= c.size() {
			out = append(out, piece{para, true})
			continue
		}
		first := true
		for _, s := range splitKeep(para, sentenceEnd) {
			if c.count(s) <= c.size() {
				out = append(out, piece{s, first})
				first = false
				continue
			}
			for _, w := range strings.Fields(s) {
				out = append(out, piece{w, first})
				first = false
			}
		}
	}
	return out
}

// splitKeep splits s after each match of re, keeping the text, trimmed.
func splitKeep(s string, re *regexp.Regexp) []string {
	var out []string
	last := 0
	for _, m := range re.FindAllStringIndex(s, -1) {
		if t := strings.TrimSpace(s[last:m[1]]); t != "" {
			out = append(out, t)
		}
		last = m[1]
	}
	if t := strings.TrimSpace(s[last:]); t != "" {
		out = append(out, t)
	}
	return out
}

// pack fills chunks with pieces, greedily, each chunk after the first
// starting with the overlap of the one before.
func (c Chunker) pack(text string) []string {
	size := c.size()
	var chunks []string
	var cur strings.Builder
	fresh := true // cur holds nothing but the overlap (or nothing)
	for _, p := range c.pieces(text) {
		sep := " "
		if p.starts {
			sep = "\n\n"
		}
		if cur.Len() > 0 {
			if c.count(cur.String()+sep+p.text) <= size {
				cur.WriteString(sep + p.text)
				fresh = false
				continue
			}
			if !fresh {
				chunks = append(chunks, cur.String())
			}
			tail := c.tail(cur.String())
			cur.Reset()
			if tail != "" && c.count(tail+sep+p.text) <= size {
				cur.WriteString(tail + sep)
			}
		}
		cur.WriteString(p.text)
		fresh = false
		// A word longer than the size is a chunk of its own: nothing else
		// can make it fit.
	}
	if cur.Len() > 0 && !fresh {
		chunks = append(chunks, cur.String())
	}
	return chunks
}

// tail is the longest run of whole words at the end of s that measures at
// most Overlap.
func (c Chunker) tail(s string) string {
	if c.Overlap <= 0 {
		return ""
	}
	words := strings.Fields(s)
	start := len(words)
	for start > 0 && c.count(strings.Join(words[start-1:], " ")) <= c.Overlap {
		start--
	}
	return strings.Join(words[start:], " ")
}
