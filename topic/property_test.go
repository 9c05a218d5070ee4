package topic

import (
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"testing/quick"
	"unicode"
	"unicode/utf8"
)

// quickConfig is seeded so that a failure reproduces.
func quickConfig(seed int64) *quick.Config {
	return &quick.Config{MaxCount: 2000, Rand: rand.New(rand.NewSource(seed))}
}

// values is a quick.Generator of valid field values for one grammar.
type values struct {
	g grammar
	v []string
}

func valuesFor(g grammar) func([]reflect.Value, *rand.Rand) {
	return func(args []reflect.Value, r *rand.Rand) {
		args[0] = reflect.ValueOf(values{g, genValues(g, r)})
	}
}

func TestValidRunesAreValid(t *testing.T) {
	for _, r := range validRunes {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			t.Errorf("generator alphabet holds invalid rune %U", r)
		}
	}
}

// TestRoundTrip: Parse(Build(x)) == x for every grammar, and String agrees
// with Subject for valid values.
func TestRoundTrip(t *testing.T) {
	for i, g := range grammars {
		t.Run(g.name, func(t *testing.T) {
			prop := func(x values) bool {
				s, err := g.build(x.v)
				if err != nil {
					t.Logf("build %q: %v", x.v, err)
					return false
				}
				if r := g.render(x.v); r != s {
					t.Logf("String %q != Subject %q", r, s)
					return false
				}
				got, err := g.parse(s)
				if err != nil || !equalValues(got, x.v) {
					t.Logf("parse %q = %q, %v; want %q", s, got, err, x.v)
					return false
				}
				return true
			}
			cfg := quickConfig(int64(i + 1))
			cfg.Values = valuesFor(g)
			if err := quick.Check(prop, cfg); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRejectsInvalid: a token with one invalid character fails to build
// with a *TokenError naming the token, the character and its position; the
// rendered subject fails to parse with the same detail (or ErrGrammar when
// the character is a '.', which changes the token count).
func TestRejectsInvalid(t *testing.T) {
	for i, g := range grammars {
		t.Run(g.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(100 + i)))
			for range 3000 {
				v := genValues(g, r)
				c := genCorruption(g, v, r)
				bad := c.apply(v)
				_, err := g.build(bad)
				te := tokenErr(err)
				if te == nil || te.Token != g.tokens[c.field] || te.Char != c.char || te.Pos != c.pos || te.Value != bad[c.field] {
					t.Fatalf("build %q: err = %#v, want token %s char %U at %d", bad, err, g.tokens[c.field], c.char, c.pos)
				}
				if !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), g.tokens[c.field]) {
					t.Fatalf("build %q: %v does not match ErrInvalidToken or does not name %s", bad, err, g.tokens[c.field])
				}

				s := g.render(bad)
				_, err = g.parse(s)
				var se *SubjectError
				if !errors.As(err, &se) || se.Subject != s {
					t.Fatalf("parse %q: err = %v, want *SubjectError", s, err)
				}
				if c.char == '.' {
					if !errors.Is(err, ErrGrammar) {
						t.Fatalf("parse %q: err = %v, want ErrGrammar", s, err)
					}
					continue
				}
				te = tokenErr(err)
				if te == nil || te.Token != g.tokens[c.field] || te.Char != c.char || te.Pos != c.pos {
					t.Fatalf("parse %q: err = %#v, want token %s char %U at %d", s, err, g.tokens[c.field], c.char, c.pos)
				}
				if r, _ := utf8.DecodeRuneInString(s[se.Pos:]); r != c.char {
					t.Fatalf("parse %q: SubjectError.Pos %d points at %q, want %q", s, se.Pos, r, c.char)
				}
			}
		})
	}
}

// TestRejectsEmpty: every required token, left empty, is named.
func TestRejectsEmpty(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, g := range grammars {
		for f, name := range g.tokens {
			v := genValues(g, r)
			v[f] = ""
			_, err := g.build(v)
			te := tokenErr(err)
			if te == nil || te.Token != name || te.Pos != -1 || te.Reason != "empty" {
				t.Errorf("%s: build with empty %s: err = %v", g.name, name, err)
			}
			s := g.render(v)
			if _, err := g.parse(s); tokenErr(err) == nil || tokenErr(err).Token != name {
				t.Errorf("%s: parse %q: err = %v, want an error naming %s", g.name, s, err, name)
			}
		}
	}
}

// TestRejectsOutsideClosedSet: event types, kinds and directions are
// closed sets when building and parsing.
func TestRejectsOutsideClosedSet(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	for _, g := range grammars {
		for f := range g.closed {
			v := genValues(g, r)
			v[f] = "bogus"
			_, err := g.build(v)
			if te := tokenErr(err); te == nil || te.Token != g.tokens[f] || te.Pos != -1 || !strings.HasPrefix(te.Reason, "want ") {
				t.Errorf("%s: build with %s=bogus: err = %v", g.name, g.tokens[f], err)
			}
			if _, err := g.parse(g.render(v)); tokenErr(err) == nil || tokenErr(err).Token != g.tokens[f] {
				t.Errorf("%s: parse with %s=bogus: err = %v", g.name, g.tokens[f], err)
			}
		}
	}
}
