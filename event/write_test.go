package event

import (
	"encoding/json"
	"math"
	"testing"
)

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "\x00\x1f\n\r\t", "é😀 \u2028 \u2029 \u2027 \u202a", "bad\xffutf8\u2028", "\xe2", "a\xe2\x80"} {
		out := appendString(nil, s)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Errorf("%q → %s: %v", s, out, err)
			continue
		}
		want := []rune(s) // invalid bytes read back as U+FFFD
		if back != string(want) {
			t.Errorf("%q → %s → %q", s, out, back)
		}
		for _, c := range out {
			if c < 0x20 {
				t.Errorf("%q → %s: raw control character", s, out)
			}
		}
	}
	if got := string(appendString(nil, "a\u2028b<>&")); got != `"a\u2028b<>&"` {
		t.Errorf("got %s", got)
	}
}

func TestAppendFloat(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0.0", 1: "1.0", -0.5: "-0.5", 1e16: "1e+16", 1e15: "1000000000000000.0", 1e-5: "1e-05",
		2.5e-07: "2.5e-07", math.Inf(1): "Infinity", math.Inf(-1): "-Infinity",
		0.0001: "0.0001", 123.456: "123.456",
	} {
		if got := string(appendFloat(nil, f)); got != want {
			t.Errorf("appendFloat(%v) = %s, want %s", f, got, want)
		}
	}
	a, b := 0.1, 0.2
	if got := string(appendFloat(nil, a+b)); got != "0.30000000000000004" {
		t.Errorf("0.1+0.2 → %s", got)
	}
	if got := string(appendFloat(nil, math.NaN())); got != "NaN" {
		t.Errorf("NaN → %s", got)
	}
}
