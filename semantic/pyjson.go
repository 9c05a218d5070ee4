package semantic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The reference writes its JSON-string attributes with Python's json.dumps
// defaults: ", " and ": " as separators and every non-ASCII character
// escaped. Tracing tools show these strings as they are, so they are
// written the same way here; object keys keep their order where the value
// has one (raw JSON) and are sorted where it has none (Go maps).

// pyDumps writes v in json.dumps form. v is a value of the event model:
// nil, strings, numbers, bools, json.RawMessage, maps with string keys and
// slices of those.
func pyDumps(v any) (string, error) {
	var b bytes.Buffer
	if err := pyValue(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

func pyValue(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		pyString(b, v)
	case *string:
		if v == nil {
			b.WriteString("null")
		} else {
			pyString(b, *v)
		}
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case *int64:
		if v == nil {
			b.WriteString("null")
		} else {
			b.WriteString(strconv.FormatInt(*v, 10))
		}
	case json.RawMessage:
		if len(bytes.TrimSpace(v)) == 0 {
			b.WriteString("null")
			return nil
		}
		return pyRaw(b, v)
	case map[string]json.RawMessage:
		return pyMap(b, v, func(x json.RawMessage) error { return pyValue(b, x) })
	case map[string]string:
		return pyMap(b, v, func(x string) error { pyString(b, x); return nil })
	case []map[string]json.RawMessage:
		if v == nil {
			b.WriteString("null")
			return nil
		}
		b.WriteByte('[')
		for i, m := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := pyValue(b, m); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case []pyField:
		b.WriteByte('{')
		for i, f := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			pyString(b, f.key)
			b.WriteString(": ")
			if err := pyValue(b, f.val); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("semantic: no JSON form for %T", v)
	}
	return nil
}

// pyField is one member of an object written in a fixed order.
type pyField struct {
	key string
	val any
}

// pyRaw rewrites raw JSON in json.dumps form, keeping key order and the
// literal form of numbers.
func pyRaw(b *bytes.Buffer, raw []byte) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := pyTokens(b, d); err != nil {
		return fmt.Errorf("semantic: invalid JSON value: %w", err)
	}
	if _, err := d.Token(); err == nil {
		return fmt.Errorf("semantic: invalid JSON value: more than one value")
	}
	return nil
}

func pyTokens(b *bytes.Buffer, d *json.Decoder) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			b.WriteByte('{')
			for i := 0; d.More(); i++ {
				if i > 0 {
					b.WriteString(", ")
				}
				k, err := d.Token()
				if err != nil {
					return err
				}
				pyString(b, k.(string))
				b.WriteString(": ")
				if err := pyTokens(b, d); err != nil {
					return err
				}
			}
			b.WriteByte('}')
		case '[':
			b.WriteByte('[')
			for i := 0; d.More(); i++ {
				if i > 0 {
					b.WriteString(", ")
				}
				if err := pyTokens(b, d); err != nil {
					return err
				}
			}
			b.WriteByte(']')
		}
		_, err := d.Token() // the closing delimiter
		return err
	case string:
		pyString(b, t)
	case json.Number:
		b.WriteString(t.String())
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case nil:
		b.WriteString("null")
	}
	return nil
}

// pyString writes s as json.dumps does with ensure_ascii.
func pyString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	u4 := func(r rune) {
		b.WriteString(`\u`)
		b.WriteByte(hex[r>>12&0xf])
		b.WriteByte(hex[r>>8&0xf])
		b.WriteByte(hex[r>>4&0xf])
		b.WriteByte(hex[r&0xf])
	}
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r == 0x7f: // outside " " to "~"
			u4(r)
		case r < utf8.RuneSelf:
			b.WriteByte(byte(r))
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			u4(r1)
			u4(r2)
		default:
			u4(r)
		}
	}
	b.WriteByte('"')
}

// pyMap writes m as Python's json.dumps does: keys sorted, ", " and ": "
// separators, null for a nil map; val writes one value.
func pyMap[V any](b *bytes.Buffer, m map[string]V, val func(V) error) error {
	if m == nil {
		b.WriteString("null")
		return nil
	}
	b.WriteByte('{')
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteString(", ")
		}
		pyString(b, k)
		b.WriteString(": ")
		if err := val(m[k]); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
