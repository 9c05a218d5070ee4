package engine

import (
	"encoding/json"
	"errors"
)

var errNotObject = errors.New("dispatch: not a JSON object")

// eachMember calls fn with every member of the JSON object data, in order:
// the key and the raw value. It walks the bytes without building values,
// which makes seeding the run context from a start event cheap. Malformed
// input yields errNotObject.
func eachMember(data []byte, fn func(key string, raw []byte) error) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return errNotObject
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return errNotObject
		}
		end, escaped := scanString(data, i)
		if end < 0 {
			return errNotObject
		}
		var key string
		if escaped {
			var k string // its own variable: &k escapes, key need not
			if err := json.Unmarshal(data[i:end], &k); err != nil {
				return errNotObject
			}
			key = k
		} else {
			key = internKey(data[i+1 : end-1])
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return errNotObject
		}
		i = skipSpace(data, i+1)
		vend := scanValue(data, i)
		if vend < 0 {
			return errNotObject
		}
		if err := fn(key, data[i:vend]); err != nil {
			return err
		}
		i = skipSpace(data, vend)
		if i >= len(data) {
			return errNotObject
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return nil
		default:
			return errNotObject
		}
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index after the closing quote of the string at i,
// and whether it contains escapes; -1 if unterminated.
func scanString(data []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return -1, false
}

// scanValue returns the index after the value at i; -1 if malformed.
func scanValue(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		end, _ := scanString(data, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, _ := scanString(data, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(data) && data[j] != ',' && data[j] != '}' && data[j] != ']' &&
			data[j] != ' ' && data[j] != '\t' && data[j] != '\n' && data[j] != '\r' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// internKey returns b as a string, without allocating for the members
// every event has.
func internKey(b []byte) string {
	switch string(b) { // no allocation: the compiler compares in place
	case "event_id":
		return "event_id"
	case "created_at":
		return "created_at"
	case "_event_name":
		return "_event_name"
	case "_parent_event_names":
		return "_parent_event_names"
	case "display_name":
		return "display_name"
	case "display_description":
		return "display_description"
	}
	return string(b)
}
