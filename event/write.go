package event

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// encoder appends JSON to buf. It never escapes HTML characters and writes
// UTF-8 as is; invalid UTF-8 becomes U+FFFD.
type encoder struct {
	buf []byte
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		return appendStringSlow(b, s)
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c != 0xE2 {
			continue
		}
		if c == 0xE2 {
			// U+2028 and U+2029 (E2 80 A8/A9) are valid JSON but break
			// JavaScript readers.
			if i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9) {
				b = append(b, s[start:i]...)
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[s[i+2]&0xf])
				i += 2
				start = i + 1
			}
			continue
		}
		b = append(b, s[start:i]...)
		b = appendEscape(b, c)
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendEscape(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}

// appendStringSlow handles strings with invalid UTF-8, which becomes U+FFFD.
func appendStringSlow(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = appendEscape(b, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendFloat writes f the way Python's repr does, so the value is always
// read back as a float: "0.0", "1e-05", "1e+16", and NaN, Infinity,
// -Infinity as bare tokens.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		return strconv.AppendFloat(b, f, 'e', -1, 64)
	}
	n := len(b)
	b = strconv.AppendFloat(b, f, 'f', -1, 64)
	for _, c := range b[n:] {
		if c == '.' {
			return b
		}
	}
	return append(b, '.', '0')
}
