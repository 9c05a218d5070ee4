package natskv

import (
	"errors"
	"strings"
)

// Key layout. Every name is escaped into one key token (see escape), so
// dots, wildcards and Unicode in class names, run ids or keys can neither
// break the layout nor reach another namespace.
//
//	state bucket (TTL):
//	  r.<class>.<run>.c.<step>.<claim>   claim: pending, or done + outcome
//	  r.<class>.<run>.n.<step>           execution counter of step
//	  r.<class>.<run>.x.<key>            run context
//	  r.<class>.<run>.y                  run context's seed (first batch)
//	  m.<class>.<run>.<name>             marker (outside r.: survives DeleteRun)
//	thread bucket (no TTL by default):
//	  t.<class>.<thread>.<key>           thread context
//
// DeleteRun purges the subject r.<class>.<run>.> in one call, so it never
// scans the bucket.

func runPrefix(class, run string) string {
	return "r." + escape(class) + "." + escape(run) + "."
}

func claimKey(class, run, step, key string) string {
	return runPrefix(class, run) + "c." + escape(step) + "." + escape(key)
}

func counterKey(class, run, step string) string {
	return runPrefix(class, run) + "n." + escape(step)
}

func markerKey(class, run, name string) string {
	return "m." + escape(class) + "." + escape(run) + "." + escape(name)
}

func runContextPrefix(class, run string) string { return runPrefix(class, run) + "x." }

func threadPrefix(class, thread string) string {
	return "t." + escape(class) + "." + escape(thread) + "."
}

const hexDigits = "0123456789ABCDEF"

// escape turns s into one valid KV key token: ASCII letters, digits, '-'
// and '_' stay as they are; every other byte becomes "=XX" (upper-case hex).
// '=' is allowed in KV keys but not produced by the literal set, so the
// encoding is unambiguous and reversible.
func escape(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !plain(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('=')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func plain(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

var errBadEscape = errors.New("kvstore: malformed escaped key")

// unescape reverses escape.
func unescape(s string) (string, error) {
	if !strings.Contains(s, "=") {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '=' {
			b = append(b, c)
			continue
		}
		if i+2 >= len(s) {
			return "", errBadEscape
		}
		hi, lo := unhex(s[i+1]), unhex(s[i+2])
		if hi < 0 || lo < 0 {
			return "", errBadEscape
		}
		b = append(b, byte(hi<<4|lo))
		i += 2
	}
	return string(b), nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
