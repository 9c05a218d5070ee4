package bus

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ValidateSubject reports whether s can be published to. Tokens must be
// non-empty and free of whitespace and control characters. Wildcard
// characters are accepted as literal tokens, as a non-pedantic nats-server
// accepts them (the protocol publishes literal "*" tokens).
// The error wraps ErrInvalidSubject.
func ValidateSubject(s string) error {
	return validate(s, false)
}

// ValidatePattern reports whether p can be subscribed to: the rules of
// ValidateSubject, and ">" only as the last token.
func ValidatePattern(p string) error {
	return validate(p, true)
}

func validate(s string, pattern bool) error {
	if s == "" {
		return fmt.Errorf("%w: empty subject", ErrInvalidSubject)
	}
	tokens, start := 0, 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			c := s[i]
			switch {
			case c == '.':
			case c <= ' ' || c == 0x7f:
				return fmt.Errorf("%w: %q contains whitespace or a control character", ErrInvalidSubject, s)
			case c >= utf8.RuneSelf:
				r, _ := utf8.DecodeRuneInString(s[i:])
				if unicode.IsSpace(r) || unicode.IsControl(r) {
					return fmt.Errorf("%w: %q contains whitespace or a control character", ErrInvalidSubject, s)
				}
				continue
			default:
				continue
			}
		}
		tok := s[start:i]
		if tok == "" {
			return fmt.Errorf("%w: %q has an empty token at position %d", ErrInvalidSubject, s, tokens)
		}
		if pattern && tok == ">" && i != len(s) {
			return fmt.Errorf("%w: %q has \">\" before its last token", ErrInvalidSubject, s)
		}
		tokens++
		start = i + 1
	}
	return nil
}

// Match reports whether subject is matched by pattern under NATS rules: "*"
// in the pattern matches any one token, ">" one or more trailing tokens, and
// any other pattern token only an equal token. A literal "*" token in the
// subject is therefore matched only by "*" or ">" at that position.
func Match(pattern, subject string) bool {
	for {
		pi := strings.IndexByte(pattern, '.')
		si := strings.IndexByte(subject, '.')
		var pt, st string
		if pi < 0 {
			pt = pattern
		} else {
			pt = pattern[:pi]
		}
		if si < 0 {
			st = subject
		} else {
			st = subject[:si]
		}
		switch {
		case pt == ">":
			return st != ""
		case pt == "*":
		case pt != st:
			return false
		}
		if pi < 0 || si < 0 {
			return pi < 0 && si < 0
		}
		pattern = pattern[pi+1:]
		subject = subject[si+1:]
	}
}
