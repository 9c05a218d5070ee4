package main

import (
	"embed"
	"io/fs"
	"math"
	"path"
	"sort"
	"strings"
	"unicode"
)

//go:embed corpus/*.md
var corpusFS embed.FS

// Passage is one paragraph of a corpus document.
type Passage struct {
	ID      string // "<file>#<n>"
	Source  string // the document's title
	Content string
}

// Index ranks passages with Okapi BM25.
type Index struct {
	passages []Passage
	terms    []map[string]int // term frequencies per passage
	lengths  []int
	avgLen   float64
	df       map[string]int // passages containing each term
	k1, b    float64
}

// LoadCorpus splits the bundled documents into paragraphs and indexes them.
func LoadCorpus() (*Index, error) {
	var passages []Passage
	err := fs.WalkDir(corpusFS, "corpus", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := corpusFS.ReadFile(p)
		if err != nil {
			return err
		}
		title := strings.TrimSuffix(path.Base(p), ".md")
		n := 0
		for _, para := range strings.Split(string(data), "\n\n") {
			para = strings.TrimSpace(para)
			if t, ok := strings.CutPrefix(para, "# "); ok {
				title = t
				continue
			}
			if para == "" {
				continue
			}
			n++
			passages = append(passages, Passage{
				ID:      strings.TrimSuffix(path.Base(p), ".md") + "#" + itoa(n),
				Source:  title,
				Content: strings.Join(strings.Fields(para), " "),
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return NewIndex(passages), nil
}

// NewIndex indexes passages with the usual BM25 parameters k1 = 1.2 and
// b = 0.75.
func NewIndex(passages []Passage) *Index {
	ix := &Index{passages: passages, df: map[string]int{}, k1: 1.2, b: 0.75}
	total := 0
	for _, p := range passages {
		tf := map[string]int{}
		toks := Tokens(p.Source + " " + p.Content)
		for _, t := range toks {
			tf[t]++
		}
		for t := range tf {
			ix.df[t]++
		}
		ix.terms = append(ix.terms, tf)
		ix.lengths = append(ix.lengths, len(toks))
		total += len(toks)
	}
	if len(passages) > 0 {
		ix.avgLen = float64(total) / float64(len(passages))
	}
	return ix
}

// Hit is a ranked passage.
type Hit struct {
	Passage
	Score float64
}

// Search returns the k best passages for query, best first; passages that
// share no term with the query are left out.
func (ix *Index) Search(query string, k int) []Hit {
	q := Tokens(query)
	n := float64(len(ix.passages))
	var hits []Hit
	for i, tf := range ix.terms {
		score := 0.0
		for _, t := range uniq(q) {
			f := float64(tf[t])
			if f == 0 {
				continue
			}
			df := float64(ix.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			norm := 1 - ix.b + ix.b*float64(ix.lengths[i])/ix.avgLen
			score += idf * f * (ix.k1 + 1) / (f + ix.k1*norm)
		}
		if score > 0 {
			hits = append(hits, Hit{ix.passages[i], score})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].Score > hits[b].Score })
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits
}

// stopwords carry no meaning for ranking.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be by can do does for from how i in is it its of on or
		so that the their then there these this to was what when where which who why will with you your`) {
		stopwords[w] = true
	}
}

// Tokens lower-cases text, splits it into words, drops stop words and
// single letters, and strips common suffixes, so "stores", "stored" and
// "store" are one term.
func Tokens(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	})
	out := words[:0]
	for _, w := range words {
		if stopwords[w] || len(w) < 2 {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

func uniq(ts []string) []string {
	seen := map[string]bool{}
	out := ts[:0:0]
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// stem is a crude suffix stripper, enough for a small English corpus.
func stem(w string) string {
	for _, suf := range []string{"ing", "ed", "es", "s"} {
		if len(w) > len(suf)+2 && strings.HasSuffix(w, suf) && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-len(suf)]
			break
		}
	}
	if len(w) > 3 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	return w
}
