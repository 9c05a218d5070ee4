package engine

import (
	"encoding/json"
	"testing"
)

func TestEachMember(t *testing.T) {
	data := []byte(` { "a" : 1, "b\"q": {"x": [1, "}", {"y": null}]}, "c": "s,}\"", "d": [], "e": -1.5e3, "f": true } `)
	var keys []string
	var vals []string
	if err := eachMember(data, func(k string, raw []byte) error {
		if !json.Valid(raw) {
			t.Errorf("value of %q is not valid JSON: %s", k, raw)
		}
		keys = append(keys, k)
		vals = append(vals, string(raw))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "b\"q", "c", "d", "e", "f"}
	if len(keys) != len(want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Fatalf("keys %q, want %q", keys, want)
		}
	}
	if vals[1] != `{"x": [1, "}", {"y": null}]}` || vals[2] != `"s,}\""` {
		t.Fatalf("values %q", vals)
	}
	for _, bad := range []string{``, `[]`, `{`, `{"a"}`, `{"a":}`, `{"a":1`, `{"a":"x}`, `{"a":1 "b":2}`} {
		if err := eachMember([]byte(bad), func(string, []byte) error { return nil }); err == nil {
			t.Errorf("eachMember(%q) succeeded", bad)
		}
	}
	if err := eachMember([]byte(`{}`), func(string, []byte) error { t.Error("called"); return nil }); err != nil {
		t.Fatal(err)
	}
}

func FuzzEachMember(f *testing.F) {
	f.Add([]byte(`{"a": 1, "b": {"c": [1, 2]}}`))
	f.Add([]byte(`{"k\"": "v"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var want map[string]json.RawMessage
		jsonErr := json.Unmarshal(data, &want)
		n := 0
		err := eachMember(data, func(k string, raw []byte) error {
			n++
			if jsonErr == nil && !json.Valid(raw) {
				t.Fatalf("member %q of valid %q has invalid value %q", k, data, raw)
			}
			return nil
		})
		if jsonErr == nil && err != nil {
			var obj map[string]any
			if json.Unmarshal(data, &obj) == nil {
				t.Fatalf("valid object %q refused: %v", data, err)
			}
		}
	})
}
