package event

import (
	"bytes"
	"encoding/json"
)

// Forms are the forms of a HumanWorkRequestEvent: HumanWorkEvent subclass
// values. On the wire the reference carries them in form mode, a FormKit
// element in each of a form's own members (see SetRaw); decoding takes
// each element's value into the Go field and keeps the element, so a
// request read back encodes as it was sent.
type Forms []Event

// MarshalJSON writes each form with Marshal.
func (fs Forms) MarshalJSON() ([]byte, error) {
	if fs == nil {
		return []byte("[]"), nil
	}
	buf := []byte{'['}
	for i, f := range fs {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		if f == nil {
			buf = append(buf, "null"...)
			continue
		}
		data, err := Marshal(f)
		if err != nil {
			return nil, err
		}
		buf = append(buf, data...)
	}
	return append(buf, ']'), nil
}

// UnmarshalJSON reads forms in data mode or in form mode.
func (fs *Forms) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*fs = nil
		return nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return err
	}
	out := make(Forms, 0, len(raws))
	for _, raw := range raws {
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			out = append(out, nil)
			continue
		}
		values, elems := formValues(raw)
		e, err := Unmarshal(values)
		if err != nil {
			return err
		}
		for k, el := range elems {
			if err := SetRaw(e, k, el); err != nil {
				return err
			}
		}
		out = append(out, e)
	}
	*fs = out
	return nil
}

// formValues replaces each member of a form that holds a FormKit element
// by the element's value, and returns the elements by member.
func formValues(raw json.RawMessage) (json.RawMessage, map[string]json.RawMessage) {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return raw, nil
	}
	var elems map[string]json.RawMessage
	for k, v := range members {
		var el struct {
			Is    bool            `json:"is_formkit_element"`
			Value json.RawMessage `json:"value"`
		}
		if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &el) != nil || !el.Is {
			continue
		}
		if elems == nil {
			elems = map[string]json.RawMessage{}
		}
		elems[k] = v
		members[k] = el.Value
		if len(el.Value) == 0 {
			members[k] = json.RawMessage("null")
		}
	}
	if elems == nil {
		return raw, nil
	}
	out, err := json.Marshal(members)
	if err != nil {
		return raw, nil
	}
	return out, elems
}
