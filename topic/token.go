package topic

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Wildcard is the single-token NATS wildcard. Only the pattern builders
// (and the few grammar positions where the protocol publishes a literal
// "*", see AnyClass and AnyProcessID) put it into a subject.
const Wildcard = "*"

// ErrGrammar reports a subject that does not have the shape of the grammar
// it was parsed with: wrong token count or wrong root. Parse errors that
// carry it are *SubjectError.
var ErrGrammar = errors.New("subject does not match the grammar")

// ErrInvalidToken is matched (errors.Is) by every *TokenError, for callers
// that only need to know that a token was rejected.
var ErrInvalidToken = errors.New("invalid subject token")

// TokenError reports an invalid subject token: empty, or holding
// '.', '*', '>', whitespace, a control character or invalid UTF-8, or a
// value outside a closed set (event types, discovery kinds).
type TokenError struct {
	Token  string // the token's grammar name, e.g. "thread_id"
	Value  string // the rejected value
	Char   rune   // the offending character; utf8.RuneError for invalid UTF-8; 0 when Pos is -1
	Pos    int    // byte offset of Char in Value, or -1 when the value as a whole is wrong
	Reason string // what is wrong, e.g. "whitespace"
}

// Error names the token, the value, and the offending character with its
// byte position.
func (e *TokenError) Error() string { return "topic: " + e.detail() }

// Is makes every *TokenError match ErrInvalidToken.
func (e *TokenError) Is(target error) bool { return target == ErrInvalidToken }

func (e *TokenError) detail() string {
	var b strings.Builder
	b.WriteString("invalid ")
	b.WriteString(e.Token)
	b.WriteByte(' ')
	b.WriteString(strconv.Quote(clip(e.Value)))
	b.WriteString(": ")
	if e.Pos >= 0 {
		if e.Char != utf8.RuneError {
			fmt.Fprintf(&b, "%q (%U) ", e.Char, e.Char)
		}
		fmt.Fprintf(&b, "at byte %d: ", e.Pos)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// SubjectError reports a subject that could not be parsed. Err is either
// ErrGrammar (wrapped with the detail) or a *TokenError; both are reachable
// with errors.Is / errors.As.
type SubjectError struct {
	Grammar string // "agent", "process", "rpc", "discovery", or "" for Parse
	Subject string
	Pos     int // byte offset in Subject of the offending character, or -1
	Err     error
}

// Error names the grammar and the subject, then what is wrong with it.
func (e *SubjectError) Error() string {
	var b strings.Builder
	b.WriteString("topic: ")
	if e.Grammar != "" {
		b.WriteString(e.Grammar)
		b.WriteByte(' ')
	}
	b.WriteString("subject ")
	b.WriteString(strconv.Quote(clip(e.Subject)))
	var te *TokenError
	if errors.As(e.Err, &te) {
		if e.Pos >= 0 {
			fmt.Fprintf(&b, " at byte %d", e.Pos)
		}
		b.WriteString(": ")
		b.WriteString(te.detail())
	} else {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns Err, for errors.Is(err, ErrGrammar) and errors.As with
// *TokenError.
func (e *SubjectError) Unwrap() error { return e.Err }

// clip keeps error messages bounded for hostile input.
func clip(s string) string {
	const max = 128
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ValidateToken reports whether value may be used as the subject token
// called name (its grammar name, used in the error): non-empty, no '.',
// '*', '>', whitespace, control characters or invalid UTF-8. The
// error is a *TokenError.
func ValidateToken(name, value string) error {
	if e := checkToken(name, value); e != nil {
		return e
	}
	return nil
}

// special marks the bytes that need a closer look: the ASCII bytes a token
// may not contain, and every byte of a multi-byte UTF-8 sequence.
var special = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c == '.' || c == '*' || c == '>' || c <= ' ' || c >= 0x7f
	}
	return t
}()

func checkToken(name, v string) *TokenError {
	if v == "" {
		return &TokenError{Token: name, Value: v, Pos: -1, Reason: "empty"}
	}
	// Tokens are nearly always ASCII ids: one table load per byte.
	for i := 0; i < len(v); i++ {
		if special[v[i]] {
			return checkFrom(name, v, i)
		}
	}
	return nil
}

// checkFrom validates v from byte i on, rune by rune.
func checkFrom(name, v string, i int) *TokenError {
	for i < len(v) {
		r, size := rune(v[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(v[i:])
			if r == utf8.RuneError && size == 1 {
				return &TokenError{Token: name, Value: v, Char: r, Pos: i, Reason: "invalid UTF-8"}
			}
		}
		if r == '.' || r == '*' || r == '>' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return &TokenError{Token: name, Value: v, Char: r, Pos: i, Reason: reason(r)}
		}
		i += size
	}
	return nil
}

func reason(r rune) string {
	switch {
	case r == '.':
		return "a dot separates tokens"
	case r == '*' || r == '>':
		return "wildcard (only pattern builders may use it)"
	case unicode.IsSpace(r):
		return "whitespace"
	default:
		return "control character"
	}
}

// checkPatternToken accepts "" and "*" as the wildcard, else a valid token.
func checkPatternToken(name, v string) (string, *TokenError) {
	if v == "" || v == Wildcard {
		return Wildcard, nil
	}
	return v, checkToken(name, v)
}

// checkOneOf validates a token with a closed set of values.
func checkOneOf(name, v string, allowed ...string) *TokenError {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	if e := checkToken(name, v); e != nil {
		return e
	}
	return &TokenError{Token: name, Value: v, Pos: -1, Reason: "want " + quoteList(allowed)}
}

func quoteList(xs []string) string {
	var b strings.Builder
	for i, x := range xs {
		switch {
		case i == 0:
		case i == len(xs)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(x))
	}
	return b.String()
}

// join builds root.tok1.tok2... with exactly one allocation.
func join(root string, toks ...string) string {
	n := len(root) + len(toks)
	for _, t := range toks {
		n += len(t)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(root)
	for _, t := range toks {
		b.WriteByte('.')
		b.WriteString(t)
	}
	return b.String()
}

// split cuts s into exactly len(out) dot-separated tokens, without
// allocating. It returns the number of tokens s has.
func split(s string, out []string) (int, bool) {
	n := strings.Count(s, ".") + 1
	if n != len(out) {
		return n, false
	}
	for i := range len(out) - 1 {
		j := strings.IndexByte(s, '.')
		out[i], s = s[:j], s[j+1:]
	}
	out[len(out)-1] = s
	return n, true
}

// tokenOffset is the byte offset of token i in a subject split into toks.
func tokenOffset(toks []string, i int) int {
	off := 0
	for _, t := range toks[:i] {
		off += len(t) + 1
	}
	return off
}

// parseError wraps a token error found at index i of toks.
func parseError(grammar, subject string, toks []string, i int, te *TokenError) error {
	pos := -1
	if te.Pos >= 0 {
		pos = tokenOffset(toks, i) + te.Pos
	}
	return &SubjectError{Grammar: grammar, Subject: subject, Pos: pos, Err: te}
}

func countError(grammar, subject string, got, want int) error {
	return &SubjectError{Grammar: grammar, Subject: subject, Pos: -1,
		Err: fmt.Errorf("%w: %d tokens, want %d", ErrGrammar, got, want)}
}

func rootError(grammar, subject, got, want string) error {
	return &SubjectError{Grammar: grammar, Subject: subject, Pos: 0,
		Err: fmt.Errorf("%w: root %s, want %q", ErrGrammar, strconv.Quote(clip(got)), want)}
}

// parseToken accepts a literal "*" (a pattern, or the protocol's published
// literal) or a valid token.
func parseToken(name, v string) *TokenError {
	if v == Wildcard {
		return nil
	}
	return checkToken(name, v)
}
