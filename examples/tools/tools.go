package main

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/saap-go/agent/llm"
)

// CalcArgs are the calculator's arguments.
type CalcArgs struct {
	Expression string `json:"expression" jsonschema:"description=an arithmetic expression with + - * / and parentheses, e.g. (2+3)*4"`
}

// Calculator evaluates arithmetic exactly as written, so the model does
// not do sums in its head.
func Calculator() llm.Callable {
	return llm.Func("calculator", "Evaluates an arithmetic expression.", func(_ context.Context, a CalcArgs) (string, error) {
		v, err := Eval(a.Expression)
		if err != nil {
			return "", err
		}
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	})
}

// TimeArgs are the clock's arguments.
type TimeArgs struct {
	Timezone string `json:"timezone,omitempty" jsonschema:"description=an IANA time zone such as Europe/Zurich; UTC when empty"`
}

// Clock tells the current time in a time zone; now is the time source.
func Clock(now func() time.Time) llm.Callable {
	return llm.Func("current_time", "Tells the current date and time in a time zone.", func(_ context.Context, a TimeArgs) (string, error) {
		loc := time.UTC
		if a.Timezone != "" {
			l, err := time.LoadLocation(a.Timezone)
			if err != nil {
				return "", fmt.Errorf("unknown time zone %q", a.Timezone)
			}
			loc = l
		}
		return now().In(loc).Format("Monday 2 January 2006, 15:04 MST"), nil
	})
}

//go:embed corpus/*.md
var corpusFS embed.FS

// SearchArgs are the search tool's arguments.
type SearchArgs struct {
	Query string `json:"query" jsonschema:"description=what to look for"`
}

// passage is one paragraph of a corpus document.
type passage struct {
	source, text string
	terms        map[string]bool
}

// Search finds the paragraphs of the bundled documents (about the
// protocol, NATS, the gateway and questions to humans) that share the
// most words with the query.
func Search() (llm.Callable, error) {
	var ps []passage
	err := fs.WalkDir(corpusFS, "corpus", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := corpusFS.ReadFile(p)
		if err != nil {
			return err
		}
		title := strings.TrimSuffix(path.Base(p), ".md")
		for _, para := range strings.Split(string(data), "\n\n") {
			para = strings.Join(strings.Fields(para), " ")
			if t, ok := strings.CutPrefix(para, "# "); ok {
				title = t
				continue
			}
			if para != "" {
				ps = append(ps, passage{source: title, text: para, terms: terms(title + " " + para)})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load the corpus: %w", err)
	}
	return llm.Func("search", "Searches the bundled documentation and returns the best passages.", func(_ context.Context, a SearchArgs) (string, error) {
		q := terms(a.Query)
		type hit struct {
			p     passage
			score int
		}
		var hits []hit
		for _, p := range ps {
			n := 0
			for t := range q {
				if p.terms[t] {
					n++
				}
			}
			if n > 0 {
				hits = append(hits, hit{p, n})
			}
		}
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
		if len(hits) == 0 {
			return "nothing found", nil
		}
		var b strings.Builder
		for i, h := range hits[:min(2, len(hits))] {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "[%s] %s", h.p.source, h.p.text)
		}
		return b.String(), nil
	}), nil
}

// stop words carry no meaning for the search.
var stop = map[string]bool{"the": true, "and": true, "what": true, "does": true, "about": true, "say": true, "are": true, "how": true, "with": true, "for": true, "corpus": true, "docs": true}

func terms(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) >= 3 && !stop[w] {
			out[w] = true
		}
	}
	return out
}

// Eval evaluates + - * / with the usual precedence, unary minus and
// parentheses.
func Eval(expr string) (float64, error) {
	p := &parser{s: strings.ReplaceAll(expr, " ", "")}
	if p.s == "" {
		return 0, fmt.Errorf("empty expression")
	}
	v, err := p.sum()
	if err != nil {
		return 0, err
	}
	if p.i < len(p.s) {
		return 0, fmt.Errorf("unexpected %q at position %d of %q", p.s[p.i], p.i+1, expr)
	}
	return v, nil
}

type parser struct {
	s string
	i int
}

func (p *parser) sum() (float64, error) {
	v, err := p.product()
	for err == nil && p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
		op := p.s[p.i]
		p.i++
		var w float64
		if w, err = p.product(); op == '+' {
			v += w
		} else {
			v -= w
		}
	}
	return v, err
}

func (p *parser) product() (float64, error) {
	v, err := p.factor()
	for err == nil && p.i < len(p.s) && (p.s[p.i] == '*' || p.s[p.i] == '/') {
		op := p.s[p.i]
		p.i++
		var w float64
		if w, err = p.factor(); err != nil {
			break
		}
		if op == '*' {
			v *= w
		} else if w == 0 {
			err = fmt.Errorf("division by zero")
		} else {
			v /= w
		}
	}
	return v, err
}

func (p *parser) factor() (float64, error) {
	if p.i >= len(p.s) {
		return 0, fmt.Errorf("the expression ends too early")
	}
	switch c := p.s[p.i]; {
	case c == '-':
		p.i++
		v, err := p.factor()
		return -v, err
	case c == '(':
		p.i++
		v, err := p.sum()
		if err != nil {
			return 0, err
		}
		if p.i >= len(p.s) || p.s[p.i] != ')' {
			return 0, fmt.Errorf("a parenthesis is not closed")
		}
		p.i++
		return v, nil
	}
	j := p.i
	for j < len(p.s) && (p.s[j] >= '0' && p.s[j] <= '9' || p.s[j] == '.') {
		j++
	}
	if j == p.i {
		return 0, fmt.Errorf("unexpected %q at position %d", p.s[p.i], p.i+1)
	}
	v, err := strconv.ParseFloat(p.s[p.i:j], 64)
	p.i = j
	return v, err
}
