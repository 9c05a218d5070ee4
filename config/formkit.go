package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
)

// formkitArrays turns the arrays of a FormKit submission back into JSON
// arrays, recursively. FormKit stores a repeater's items as an object with
// the keys "0", "1", ... ({"0": {...}, "1": {...}}), and the platform keeps
// the submission as it came, so a profile can hold such objects where the
// configuration type has a list.
//
// Like the reference, an object counts as an array only when its keys are
// exactly "0" to "n-1" and every value is an object (FormKit arrays always
// hold objects), so a map keyed by small numbers with scalar values stays a
// map.
func formkitArrays(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if items, ok := formkitItems(v); ok {
			out := make([]any, len(items))
			for i, it := range items {
				out[i] = formkitArrays(it)
			}
			return out
		}
		for k, e := range v {
			v[k] = formkitArrays(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = formkitArrays(e)
		}
		return v
	}
	return v
}

// formkitItems returns the values of m in index order when m is a FormKit
// array.
func formkitItems(m map[string]any) ([]any, bool) {
	if len(m) == 0 {
		return nil, false
	}
	items := make([]any, len(m))
	for k, e := range m {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= len(m) || strconv.Itoa(i) != k {
			return nil, false
		}
		if _, ok := e.(map[string]any); !ok {
			return nil, false
		}
		items[i] = e
	}
	return items, true
}

// FormKitArrays returns the JSON object obj with the lists of a FormKit
// submission (objects keyed "0", "1", ... of objects) turned back into JSON
// arrays, as Merge does before merging; the object itself stays an object.
// Whatever stores profiles uses it to keep and validate them in the shape
// the configuration type declares.
func FormKitArrays(obj json.RawMessage) (json.RawMessage, error) {
	var m map[string]any
	if err := json.Unmarshal(obj, &m); err != nil || m == nil {
		return nil, fmt.Errorf("config: a configuration must be a JSON object")
	}
	for k, v := range m {
		m[k] = formkitArrays(v)
	}
	return json.Marshal(m)
}

// maxShapeDepth bounds the walk of a recursive configuration type.
const maxShapeDepth = 32

// repeaterItems turns the items of the FormKit repeaters a generated form
// submits back into what the configuration type t declares, recursively:
// items {"value": x} of a list whose elements are not structs (or are
// LocaleStrings) become x, and a list of {"key": k, "value": v} items where
// t is a map with string keys becomes the map. A list of any other shape is
// left for the type check to report.
func repeaterItems(v any, t reflect.Type, depth int) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if depth > maxShapeDepth {
		return v
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok || reflect.PointerTo(t).Implements(jsonUnmarshaler) {
			return v
		}
		fields := jsonFields(t)
		for k, e := range obj {
			if ft, ok := fields[k]; ok {
				obj[k] = repeaterItems(e, ft, depth+1)
			}
		}
		return obj
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			return v
		}
		elem := t.Elem()
		for elem.Kind() == reflect.Pointer {
			elem = elem.Elem()
		}
		wrapped := elem.Kind() != reflect.Struct || reflect.PointerTo(elem).Implements(jsonUnmarshaler)
		for i, e := range list {
			if m, ok := e.(map[string]any); ok && wrapped && len(m) == 1 {
				if x, ok := m["value"]; ok {
					e = x
				}
			}
			list[i] = repeaterItems(e, t.Elem(), depth+1)
		}
		return list
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return v
		}
		if list, ok := v.([]any); ok {
			m := make(map[string]any, len(list))
			for _, e := range list {
				item, ok := e.(map[string]any)
				k, isString := item["key"].(string)
				_, dup := m[k]
				if !ok || !isString || dup || len(item) > 2 {
					return v
				}
				m[k] = item["value"]
			}
			v = m
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return v
		}
		for k, e := range obj {
			obj[k] = repeaterItems(e, t.Elem(), depth+1)
		}
		return obj
	}
	return v
}
