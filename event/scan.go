package event

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 512

// decoder is a tolerant JSON reader over one input buffer. It accepts what
// Python's json module writes (spaced separators, \uXXXX escapes, the bare
// NaN/Infinity tokens) and keeps a field path for error messages.
type decoder struct {
	data    []byte
	pos     int
	depth   int
	path    []string
	missing []string
	event   string // wire name of the event being decoded, for errors
	base    int    // path entries above the current event (nested events)

	// Type tags supplied from outside the payload (persisted documents).
	defName    string
	defParents []string
	hasDefs    bool

	// Reused storage: unescaped strings (read before the next string is
	// read) and a short field path, so that neither allocates per value.
	scratch    []byte
	scratchBuf [128]byte
	pathBuf    [8]string
}

// decoders recycles the top-level decoders of Unmarshal and its siblings:
// a decoder (with its inline buffers) would otherwise be one allocation per
// event. Nothing decoded refers to a decoder: strings are copied, kept raw
// values cloned.
var decoders = sync.Pool{New: func() any { return new(decoder) }}

func getDecoder(data []byte) *decoder {
	d := decoders.Get().(*decoder)
	d.data = data
	return d
}

func putDecoder(d *decoder) {
	*d = decoder{} // drop the input and the caller's slices
	decoders.Put(d)
}

func (d *decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end of input.
func (d *decoder) peek() byte {
	d.ws()
	if d.pos >= len(d.data) {
		return 0
	}
	return d.data[d.pos]
}

// peekAt returns the byte at i (a value's first byte), 0 past the end.
func (d *decoder) peekAt(i int) byte {
	if i >= len(d.data) {
		return 0
	}
	return d.data[i]
}

func (d *decoder) syntax(msg string) error {
	return d.errf(ErrSyntax, "%s at offset %d", msg, d.pos)
}

// errf builds a *DecodeError naming the event and the current field path.
func (d *decoder) errf(kind error, format string, args ...any) error {
	return &DecodeError{Event: d.event, Field: joinPath(d.path), Err: fmt.Errorf("%w: "+format, append([]any{kind}, args...)...)}
}

func joinPath(p []string) string {
	switch len(p) {
	case 0:
		return ""
	case 1:
		return p[0]
	}
	n := len(p) - 1
	for _, s := range p {
		n += len(s)
	}
	b := make([]byte, 0, n)
	for i, s := range p {
		if i > 0 {
			b = append(b, '.')
		}
		b = append(b, s...)
	}
	return string(b)
}

// indexError names element n of the list at d.path[:path] in err's field:
// messages.role becomes messages[0].role. Lists name their elements only
// on failure, so decoding a list pays nothing for it; an inner list fixes
// its index first, so nested lists read a[1][2].
func (d *decoder) indexError(err error, path, n int) error {
	var de *DecodeError
	if errors.As(err, &de) {
		de.Field = withIndex(de.Field, joinPath(d.path[:path]), n)
	}
	return err
}

// indexMissing does for the missing fields recorded since from what
// indexError does for an error.
func (d *decoder) indexMissing(path, from, n int) {
	prefix := joinPath(d.path[d.base:path])
	for i := from; i < len(d.missing); i++ {
		d.missing[i] = withIndex(d.missing[i], prefix, n)
	}
}

// withIndex inserts [n] after prefix in field, if field lies under prefix.
func withIndex(field, prefix string, n int) string {
	if !strings.HasPrefix(field, prefix) {
		return field
	}
	rest := field[len(prefix):]
	switch {
	case prefix == "":
		if rest != "" && rest[0] != '[' {
			rest = "." + rest
		}
	case rest != "" && rest[0] != '.' && rest[0] != '[':
		return field // a sibling that merely shares the prefix
	}
	return prefix + "[" + strconv.Itoa(n) + "]" + rest
}

// kindName describes the JSON value starting at the current position.
func (d *decoder) kindName() string {
	switch d.peek() {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case 0:
		return "end of input"
	default:
		return "number"
	}
}

// literal consumes lit if it is next.
func (d *decoder) literal(lit string) bool {
	if len(d.data)-d.pos >= len(lit) && string(d.data[d.pos:d.pos+len(lit)]) == lit {
		d.pos += len(lit)
		return true
	}
	return false
}

// null consumes a null token if one is next.
func (d *decoder) null() bool {
	return d.peek() == 'n' && d.literal("null")
}

// stringBytes reads a JSON string. The result aliases the input when the
// string has no escapes; otherwise it is the decoder's scratch buffer,
// valid only until the next string is read: copy it or compare it at once.
func (d *decoder) stringBytes() ([]byte, error) {
	if d.peek() != '"' {
		return nil, d.errf(ErrType, "expected string, got %s", d.kindName())
	}
	d.pos++
	start := d.pos
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if c == '"' {
			s := d.data[start:d.pos]
			d.pos++
			return s, nil
		}
		if c == '\\' {
			return d.unescape(start)
		}
		if c < 0x20 {
			return nil, d.syntax("control character in string")
		}
		d.pos++
	}
	return nil, d.syntax("unterminated string")
}

func (d *decoder) unescape(start int) ([]byte, error) {
	if d.scratch == nil {
		d.scratch = d.scratchBuf[:0]
	}
	b := append(d.scratch[:0], d.data[start:d.pos]...)
	defer func() { d.scratch = b[:0] }() // keep a grown buffer
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return b, nil
		case c < 0x20:
			return nil, d.syntax("control character in string")
		case c != '\\':
			b = append(b, c)
			d.pos++
			continue
		}
		d.pos++
		if d.pos >= len(d.data) {
			break
		}
		e := d.data[d.pos]
		d.pos++
		switch e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return nil, d.syntax(`invalid \u escape`)
			}
			if utf16.IsSurrogate(r) {
				// A high surrogate followed by \uDC00-\uDFFF forms one rune;
				// a lone surrogate becomes U+FFFD, as Go's encoding/json does.
				save := d.pos
				if d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
					d.pos += 2
					r2, ok2 := d.hex4()
					if ok2 {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							continue
						}
					}
					d.pos = save
				}
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, r)
		default:
			return nil, d.syntax("invalid escape")
		}
	}
	return nil, d.syntax("unterminated string")
}

func (d *decoder) hex4() (rune, bool) {
	if len(d.data)-d.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	d.pos += 4
	return r, true
}

// str reads a JSON string into a Go string, copying the bytes once.
func (d *decoder) str() (string, error) {
	b, err := d.stringBytes()
	if err != nil || len(b) == 0 {
		return "", err
	}
	return string(b), nil
}

// strAs reads a JSON string like str, but returns like itself instead of
// a copy when the text is the same: shared defaults cost no allocation.
func (d *decoder) strAs(like string) (string, error) {
	b, err := d.stringBytes()
	if err != nil || len(b) == 0 {
		return "", err
	}
	if string(b) == like {
		return like, nil
	}
	return string(b), nil
}

// keyBytes reads an object key that the caller keeps while it reads the
// value: an unescaped key is copied out of the scratch buffer.
func (d *decoder) keyBytes() ([]byte, error) {
	b, err := d.stringBytes()
	if err != nil || aliases(d.data, b) {
		return b, err
	}
	return slices.Clone(b), nil
}

// aliases reports whether b points into data.
func aliases(data, b []byte) bool {
	if len(b) == 0 || len(data) == 0 {
		return false
	}
	p, lo, hi := uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&data[0])), uintptr(unsafe.Pointer(&data[len(data)-1]))
	return p >= lo && p <= hi
}

// number reads a number token, including Python's NaN, Infinity and
// -Infinity. float reports whether Python would read it as a float.
func (d *decoder) number() (raw []byte, float bool, err error) {
	d.ws()
	start := d.pos
	if d.literal("NaN") || d.literal("Infinity") || d.literal("-Infinity") {
		return d.data[start:d.pos], true, nil
	}
	p := d.pos
	if p < len(d.data) && d.data[p] == '-' {
		p++
	}
	digits := func() int {
		n := 0
		for p < len(d.data) && d.data[p] >= '0' && d.data[p] <= '9' {
			p++
			n++
		}
		return n
	}
	if p < len(d.data) && d.data[p] == '0' {
		p++
	} else if digits() == 0 {
		return nil, false, d.errf(ErrType, "expected number, got %s", d.kindName())
	}
	if p < len(d.data) && d.data[p] == '.' {
		p++
		float = true
		if digits() == 0 {
			d.pos = p
			return nil, false, d.syntax("invalid number")
		}
	}
	if p < len(d.data) && (d.data[p] == 'e' || d.data[p] == 'E') {
		p++
		float = true
		if p < len(d.data) && (d.data[p] == '+' || d.data[p] == '-') {
			p++
		}
		if digits() == 0 {
			d.pos = p
			return nil, false, d.syntax("invalid number")
		}
	}
	d.pos = p
	return d.data[start:p], float, nil
}

// parseFloat converts a number token, NaN and the infinities included.
func parseFloat(raw []byte) (float64, error) {
	return strconv.ParseFloat(string(raw), 64) // accepts NaN, Infinity, -Infinity
}

// objBegin consumes the '{' of an object. Members are then read with
// objNext, which needs no closure (closures make buffers escape).
func (d *decoder) objBegin() error {
	if d.peek() != '{' {
		return d.errf(ErrType, "expected object, got %s", d.kindName())
	}
	if d.depth++; d.depth > maxDepth {
		return d.syntax("nesting too deep")
	}
	d.pos++
	return nil
}

// objNext reads the next key and its ':' (n is the number of members read
// so far); ok is false after the closing '}'. The caller consumes the value.
func (d *decoder) objNext(n int) (key []byte, ok bool, err error) {
	c := d.peek()
	if n > 0 {
		switch c {
		case ',':
			d.pos++
			c = d.peek()
		case '}':
			d.pos++
			d.depth--
			return nil, false, nil
		default:
			return nil, false, d.syntax("expected ',' or '}'")
		}
	} else if c == '}' {
		d.pos++
		d.depth--
		return nil, false, nil
	}
	if c != '"' {
		return nil, false, d.syntax("expected object key")
	}
	key, err = d.keyBytes()
	if err != nil {
		return nil, false, err
	}
	if d.peek() != ':' {
		return nil, false, d.syntax("expected ':'")
	}
	d.pos++
	return key, true, nil
}

// arrBegin consumes the '[' of an array; items are then read with arrNext.
func (d *decoder) arrBegin() error {
	if d.peek() != '[' {
		return d.errf(ErrType, "expected array, got %s", d.kindName())
	}
	if d.depth++; d.depth > maxDepth {
		return d.syntax("nesting too deep")
	}
	d.pos++
	return nil
}

// countItems counts the items of the array whose '[' was just consumed,
// without decoding them or moving; 0 if it does not parse (the decode that
// follows reports why).
func (d *decoder) countItems() int {
	pos, depth := d.pos, d.depth
	defer func() { d.pos, d.depth = pos, depth }()
	for n := 0; ; n++ {
		more, err := d.arrNext(n)
		if err != nil {
			return 0
		}
		if !more {
			return n
		}
		if _, err := d.skip(); err != nil {
			return 0
		}
	}
}

// arrNext reports whether another item follows (n items read so far); the
// caller consumes it.
func (d *decoder) arrNext(n int) (bool, error) {
	c := d.peek()
	if n > 0 {
		switch c {
		case ',':
			d.pos++
			return true, nil
		case ']':
			d.pos++
			d.depth--
			return false, nil
		}
		return false, d.syntax("expected ',' or ']'")
	}
	if c == ']' {
		d.pos++
		d.depth--
		return false, nil
	}
	return true, nil
}

// object iterates the members of an object. fn must consume the value.
func (d *decoder) object(fn func(key []byte) error) error {
	if d.peek() != '{' {
		return d.errf(ErrType, "expected object, got %s", d.kindName())
	}
	if d.depth++; d.depth > maxDepth {
		return d.syntax("nesting too deep")
	}
	d.pos++
	if d.peek() == '}' {
		d.pos++
		d.depth--
		return nil
	}
	for {
		if d.peek() != '"' {
			return d.syntax("expected object key")
		}
		key, err := d.keyBytes()
		if err != nil {
			return err
		}
		if d.peek() != ':' {
			return d.syntax("expected ':'")
		}
		d.pos++
		if err := fn(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			d.depth--
			return nil
		default:
			return d.syntax("expected ',' or '}'")
		}
	}
}

// array iterates the items of an array. fn must consume the item.
func (d *decoder) array(fn func() error) error {
	if d.peek() != '[' {
		return d.errf(ErrType, "expected array, got %s", d.kindName())
	}
	if d.depth++; d.depth > maxDepth {
		return d.syntax("nesting too deep")
	}
	d.pos++
	if d.peek() == ']' {
		d.pos++
		d.depth--
		return nil
	}
	for {
		if err := fn(); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			d.depth--
			return nil
		default:
			return d.syntax("expected ',' or ']'")
		}
	}
}

// skip consumes and validates one value and returns its bytes.
func (d *decoder) skip() ([]byte, error) {
	switch c := d.peek(); c {
	case '{':
		start := d.pos
		err := d.object(func([]byte) error { _, err := d.skip(); return err })
		return d.data[start:d.pos], err
	case '[':
		start := d.pos
		err := d.array(func() error { _, err := d.skip(); return err })
		return d.data[start:d.pos], err
	case '"':
		start := d.pos
		d.pos++
		for d.pos < len(d.data) {
			switch c := d.data[d.pos]; {
			case c == '"':
				d.pos++
				return d.data[start:d.pos], nil
			case c == '\\':
				d.pos++
				if d.pos >= len(d.data) {
					return nil, d.syntax("unterminated string")
				}
				switch d.data[d.pos] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				case 'u':
					d.pos++
					if _, ok := d.hex4(); !ok {
						return nil, d.syntax(`invalid \u escape`)
					}
					continue
				default:
					return nil, d.syntax("invalid escape")
				}
			case c < 0x20:
				return nil, d.syntax("control character in string")
			}
			d.pos++
		}
		return nil, d.syntax("unterminated string")
	case 't':
		if d.literal("true") {
			return d.data[d.pos-4 : d.pos], nil
		}
	case 'f':
		if d.literal("false") {
			return d.data[d.pos-5 : d.pos], nil
		}
	case 'n':
		if d.literal("null") {
			return d.data[d.pos-4 : d.pos], nil
		}
	case 0:
		return nil, d.syntax("unexpected end of input")
	default:
		raw, _, err := d.number()
		if err != nil {
			return nil, d.syntax("invalid value")
		}
		return raw, nil
	}
	return nil, d.syntax("invalid literal")
}

// end checks that only whitespace follows.
func (d *decoder) end() error {
	if d.peek() != 0 {
		return d.syntax("trailing data after value")
	}
	return nil
}

func (d *decoder) push(name string) {
	if d.path == nil {
		d.path = d.pathBuf[:0]
	}
	d.path = append(d.path, name)
}
func (d *decoder) pop() { d.path = d.path[:len(d.path)-1] }
