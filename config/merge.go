package config

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Validator is implemented by configuration types that check themselves
// after decoding. Return a *ValidationError (see Invalid) to name the failing
// fields; any other error is reported without its text, since it may quote a
// value.
type Validator interface {
	Validate() error
}

// ValidationError reports a configuration that does not fit the agent's
// configuration type. It names the failing fields and never their values:
// configurations hold secrets (API keys, tokens), and this error ends up in
// an ExceptionEvent that users can read.
type ValidationError struct {
	// Fields lists the failing fields as JSON paths ("llm.model",
	// "tools[2].name"); "(root)" stands for the configuration as a whole.
	Fields []string
	// Reasons[i] says what is wrong with Fields[i], without the value.
	Reasons []string
	// Err is the error returned by Validate, if that is what failed. Its text
	// is not part of Error(), because it may quote values.
	Err error
}

// Invalid returns a *ValidationError for one field; Validate methods use it
// (and Add) to say which fields are wrong.
func Invalid(field, reason string) *ValidationError {
	return (&ValidationError{}).Add(field, reason)
}

// Add records another failing field and returns e, so calls chain.
func (e *ValidationError) Add(field, reason string) *ValidationError {
	e.Fields = append(e.Fields, field)
	e.Reasons = append(e.Reasons, reason)
	return e
}

func (e *ValidationError) Error() string {
	if len(e.Fields) == 0 {
		return "config: invalid configuration: Validate failed"
	}
	var b strings.Builder
	b.WriteString("config: invalid configuration: ")
	for i, f := range e.Fields {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f)
		if i < len(e.Reasons) && e.Reasons[i] != "" {
			b.WriteString(": ")
			b.WriteString(e.Reasons[i])
		}
	}
	return b.String()
}

// Unwrap returns the error of Validate, if any.
func (e *ValidationError) Unwrap() error { return e.Err }

// Merge deep-merges overlay (a JSON object, typically the "config" of a
// config RPC reply) over defaults and decodes the result into a new T.
//
// Objects merge key by key, recursively; any other overlay value (scalar,
// array, null) replaces the default. Before merging, the arrays of a FormKit
// form submission, stored as objects keyed "0", "1", ... whose values are all
// objects, are turned back into JSON arrays, as the reference does, and
// the items of the repeaters a generated form submits are turned into what
// T declares: {"value": x} items of a list of non-structs become x, a list
// of {"key", "value"} items for a map becomes the map. Keys that T does not
// declare are ignored. A nil, empty or "null" overlay yields the defaults. The result is
// then checked: type mismatches (a string where T has a number, null for a
// field that cannot be null) and the error of a Validate method on T or *T
// are returned as a *ValidationError naming every failing field.
//
// defaults must encode to a JSON object (a struct or a map); it is not
// modified. The returned T shares no memory with defaults.
func Merge[T any](defaults T, overlay json.RawMessage) (T, error) {
	var zero T
	out, err := merge(defaults, reflect.TypeOf((*T)(nil)).Elem(), overlay)
	if err != nil {
		return zero, err
	}
	return *out.Interface().(*T), nil
}

// MergeValue is Merge for a configuration type known only at run time: it
// merges overlay over defaults and returns a value of the dynamic type of
// defaults (a struct value, or a map). A nil defaults stands for an empty
// map[string]any, so the result is the overlay as a generic object.
func MergeValue(defaults any, overlay json.RawMessage) (any, error) {
	if defaults == nil {
		defaults = map[string]any{}
	}
	out, err := merge(defaults, reflect.TypeOf(defaults), overlay)
	if err != nil {
		return nil, err
	}
	return out.Elem().Interface(), nil
}

// merge does the work of Merge and MergeValue: it returns a pointer to a new
// value of type t.
func merge(defaults any, t reflect.Type, overlay json.RawMessage) (reflect.Value, error) {
	base, err := json.Marshal(defaults)
	if err != nil {
		return reflect.Value{}, fmt.Errorf("config: encoding the defaults: %w", err)
	}
	baseObj, ok, err := decodeObject(base)
	if err != nil || !ok {
		return reflect.Value{}, fmt.Errorf("config: the defaults (%T) must encode to a JSON object", defaults)
	}
	overlay = bytes.TrimSpace(overlay)
	if len(overlay) > 0 && !bytes.Equal(overlay, []byte("null")) {
		over, ok, err := decodeObject(overlay)
		if err != nil {
			return reflect.Value{}, Invalid("(root)", "not valid JSON")
		}
		if !ok {
			return reflect.Value{}, Invalid("(root)", "must be a JSON object")
		}
		for k, v := range over {
			over[k] = formkitArrays(v) // the root itself stays an object
		}
		repeaterItems(over, t, 0)
		deepMerge(baseObj, over)
	}

	var ve ValidationError
	checkValue(&ve, "", baseObj, t)
	if len(ve.Fields) > 0 {
		return reflect.Value{}, &ve
	}
	merged, err := json.Marshal(baseObj)
	if err != nil {
		return reflect.Value{}, fmt.Errorf("config: encoding the merged configuration: %w", err)
	}
	out := reflect.New(t)
	if err := json.Unmarshal(merged, out.Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// The message of te quotes the value: only its field is kept.
			return reflect.Value{}, Invalid(te.Field, "invalid value")
		}
		return reflect.Value{}, Invalid("(root)", "invalid value")
	}
	if err := validate(out.Interface()); err != nil {
		return reflect.Value{}, err
	}
	return out, nil
}

func validate(p any) error {
	v, ok := p.(Validator)
	if !ok {
		v, ok = reflect.ValueOf(p).Elem().Interface().(Validator)
	}
	if !ok {
		return nil
	}
	err := v.Validate()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if errors.As(err, &ve) {
		return &ValidationError{Fields: ve.Fields, Reasons: ve.Reasons, Err: err}
	}
	return &ValidationError{Err: err}
}

// decodeObject decodes data keeping numbers exact; ok is false when data is
// valid JSON but not an object.
func decodeObject(data []byte) (obj map[string]any, ok bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false, err
	}
	if dec.More() {
		return nil, false, errors.New("trailing data")
	}
	obj, ok = v.(map[string]any)
	return obj, ok, nil
}

// deepMerge merges src into dst: objects key by key, anything else replaces.
func deepMerge(dst, src map[string]any) {
	for k, sv := range src {
		if so, ok := sv.(map[string]any); ok {
			if do, ok := dst[k].(map[string]any); ok {
				deepMerge(do, so)
				continue
			}
		}
		dst[k] = sv
	}
}

var (
	jsonUnmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

// checkValue records every place where the JSON value v cannot become a t,
// by the rules of encoding/json, plus null where t cannot hold null (which
// encoding/json would silently skip). Types with their own decoding are left
// to json.Unmarshal.
func checkValue(ve *ValidationError, path string, v any, t reflect.Type) {
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return
	}
	field := path
	if field == "" {
		field = "(root)"
	}
	if v == nil {
		switch t.Kind() {
		case reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map:
		default:
			ve.Add(field, "must not be null")
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		checkValue(ve, path, v, t.Elem())
	case reflect.Interface:
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			ve.Add(field, "expected a boolean, got "+kindOf(v))
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			ve.Add(field, "expected a string, got "+kindOf(v))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			ve.Add(field, "expected an integer, got "+kindOf(v))
		} else if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			ve.Add(field, "expected an integer that fits in "+t.Kind().String())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, ok := v.(json.Number)
		if !ok {
			ve.Add(field, "expected an integer, got "+kindOf(v))
		} else if _, err := strconv.ParseUint(string(n), 10, t.Bits()); err != nil {
			ve.Add(field, "expected a non-negative integer that fits in "+t.Kind().String())
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			ve.Add(field, "expected a number, got "+kindOf(v))
		} else if _, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
			ve.Add(field, "expected a number that fits in "+t.Kind().String())
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			if _, ok := v.(string); !ok {
				ve.Add(field, "expected a base64 string, got "+kindOf(v))
			}
			return
		}
		arr, ok := v.([]any)
		if !ok {
			ve.Add(field, "expected an array, got "+kindOf(v))
			return
		}
		for i, item := range arr {
			checkValue(ve, path+"["+strconv.Itoa(i)+"]", item, t.Elem())
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			ve.Add(field, "expected an object, got "+kindOf(v))
			return
		}
		for _, k := range sortedKeys(obj) {
			checkValue(ve, join(path, k), obj[k], t.Elem())
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			ve.Add(field, "expected an object, got "+kindOf(v))
			return
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(obj) {
			ft, ok := fields[k]
			if !ok {
				// Unknown keys are ignored. Dropping them also keeps
				// encoding/json from matching them case-insensitively:
				// keys match exactly, as in the reference.
				delete(obj, k)
				continue
			}
			checkValue(ve, join(path, k), obj[k], ft)
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "an unknown JSON value"
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonFields maps the JSON names of t's fields (including those promoted
// from embedded structs) to their types, as encoding/json sees them.
// Fields tagged ",string" are left out: their encoding is not their type's.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	collectFields(t, out, 0)
	return out
}

func collectFields(t reflect.Type, out map[string]reflect.Type, depth int) {
	if depth > 8 {
		return
	}
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				embedded = append(embedded, et)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if strings.Contains(","+opts+",", ",string,") {
			continue
		}
		out[name] = f.Type
	}
	// Promoted fields lose to the outer struct's own fields.
	for _, et := range embedded {
		inner := map[string]reflect.Type{}
		collectFields(et, inner, depth+1)
		for k, v := range inner {
			if _, taken := out[k]; !taken {
				out[k] = v
			}
		}
	}
}
