package profiles

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/saap-go/agent/config"
	"github.com/saap-go/agent/event"
)

// ErrInvalid marks a configuration that does not fit the class's
// discovered schema; the admin routes answer it with 400.
var ErrInvalid = errors.New("profiles: invalid profile")

// Check brings a submitted configuration into the shape the class's
// configuration schema declares and validates it against that schema (the
// agent_config_specs of the class's discovery answer), returning the
// configuration to store. The shapes a FormKit form submits are turned
// back first: a repeater's items stored as {"0": {...}, "1": {...}}
// become a list, a repeater of {"value": x} items where the schema has a
// list of scalars becomes the list of the values, and a repeater of
// {"key": k, "value": v} items where the schema has a map becomes the map.
// An error wraps ErrInvalid and says which part failed.
func Check(specs *event.ConfigSpecs, cfg json.RawMessage) (json.RawMessage, error) {
	if specs == nil || len(specs.ConfigSchema) == 0 {
		return nil, fmt.Errorf("%w: the class published no configuration schema", ErrInvalid)
	}
	raw, err := json.Marshal(specs.ConfigSchema)
	if err != nil {
		return nil, fmt.Errorf("profiles: the class's configuration schema: %w", err)
	}
	cfg, err = config.FormKitArrays(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	var inst any
	if err := json.Unmarshal(cfg, &inst); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, fmt.Errorf("profiles: the class's configuration schema: %w", err)
	}
	inst = shape(inst, tree, tree, 0)

	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("profiles: the class's configuration schema is not a JSON Schema: %w", err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("profiles: the class's configuration schema: %w", err)
	}
	if err := resolved.Validate(inst); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return json.Marshal(inst)
}

// maxDepth bounds the walk of a recursive schema.
const maxDepth = 64

// shape turns the FormKit forms of lists and maps in v into what schema s
// (of the document root) declares.
func shape(v any, s, root map[string]any, depth int) any {
	s = deref(s, root)
	if s == nil || depth > maxDepth {
		return v
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			am, _ := a.(map[string]any)
			am = deref(am, root)
			if am == nil || am["type"] == "null" {
				continue
			}
			return shape(v, am, root, depth+1)
		}
		return v
	}
	switch typeOf(s) {
	case "object":
		props, _ := s["properties"].(map[string]any)
		extra, _ := s["additionalProperties"].(map[string]any)
		isMap := extra != nil || s["additionalProperties"] == true
		if list, ok := v.([]any); ok && props == nil && isMap {
			if m, ok := keyValues(list); ok {
				v = m
			}
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return v
		}
		for k, e := range obj {
			if ps, ok := props[k].(map[string]any); ok {
				obj[k] = shape(e, ps, root, depth+1)
			} else if extra != nil {
				obj[k] = shape(e, extra, root, depth+1)
			}
		}
		return obj
	case "array":
		list, ok := v.([]any)
		if !ok {
			return v
		}
		items, _ := s["items"].(map[string]any)
		items = deref(items, root)
		if items == nil {
			return v
		}
		if wrapped(items, root) {
			for i, e := range list {
				if m, ok := e.(map[string]any); ok && len(m) == 1 {
					if x, ok := m["value"]; ok {
						list[i] = x
					}
				}
			}
		}
		for i, e := range list {
			list[i] = shape(e, items, root, depth+1)
		}
		return list
	}
	return v
}

// keyValues turns a repeater's [{"key": k, "value": v}, ...] into a map; a
// list of any other shape, or with a key twice, is left as it is for the
// validation to refuse.
func keyValues(list []any) (map[string]any, bool) {
	out := make(map[string]any, len(list))
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok || len(m) > 2 {
			return nil, false
		}
		k, ok := m["key"].(string)
		if !ok {
			return nil, false
		}
		if _, dup := out[k]; dup {
			return nil, false
		}
		out[k] = m["value"]
	}
	return out, true
}

// wrapped reports whether the form puts items of schema s into a
// {"value": x} object: every item but a struct's (an object with fields
// of its own other than a LocaleString's).
func wrapped(s, root map[string]any) bool {
	s = deref(s, root)
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if am := deref(asObject(a), root); am != nil && am["type"] != "null" {
				s = am
				break
			}
		}
	}
	props, _ := s["properties"].(map[string]any)
	if typeOf(s) != "object" || len(props) == 0 {
		return true
	}
	for k := range props {
		switch k {
		case "de", "en", "fr", "it":
		default:
			return false
		}
	}
	return true // a LocaleString
}

func asObject(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// typeOf returns the type s declares: its "type", or the first type other
// than null of a list of types.
func typeOf(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, e := range t {
			if n, ok := e.(string); ok && n != "null" {
				return n
			}
		}
	}
	return ""
}

// deref follows a local reference ("#/$defs/Name") of s.
func deref(s, root map[string]any) map[string]any {
	for range maxDepth {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		if !ok {
			return s
		}
		defs, _ := root["$defs"].(map[string]any)
		next, _ := defs[name].(map[string]any)
		if next == nil {
			return s
		}
		s = next
	}
	return s
}
