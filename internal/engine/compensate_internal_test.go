package engine

import (
	"encoding/json"
	"testing"
)

// The hand-built compensation record quotes any text as JSON does.
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "abc123", "6955b9000de9dad7816ae8a0", `a"b`, `back\slash`, "ctl\x01", "<html>&", "Grüezi", "tab\there"} {
		var got string
		raw := appendJSONString([]byte("x"), s)[1:]
		if err := json.Unmarshal(raw, &got); err != nil || got != s {
			t.Errorf("appendJSONString(%q) = %s, decodes to %q, %v", s, raw, got, err)
		}
	}
}
