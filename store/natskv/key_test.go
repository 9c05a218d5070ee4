package natskv

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// keyGrammar is the KV key grammar of nats.go: tokens of [-/_=a-zA-Z0-9]
// separated by dots.
var keyGrammar = regexp.MustCompile(`^[-/_=a-zA-Z0-9]+(\.[-/_=a-zA-Z0-9]+)*$`)

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain_Name-1", "plain_Name-1"},
		{"a.b", "a=2Eb"},
		{"*", "=2A"},
		{">", "=3E"},
		{"a b", "a=20b"},
		{"x=y", "x=3Dy"},
		{"a/b", "a=2Fb"},
		{"ü", "=C3=BC"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := escape(tt.in); got != tt.want {
			t.Errorf("escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
		back, err := unescape(escape(tt.in))
		if err != nil || back != tt.in {
			t.Errorf("unescape(escape(%q)) = %q, %v", tt.in, back, err)
		}
	}
}

func TestUnescapeRejectsMalformed(t *testing.T) {
	for _, s := range []string{"=", "=4", "a=zz", "=4g", "x=2"} {
		if got, err := unescape(s); err == nil {
			t.Errorf("unescape(%q) = %q, want an error", s, got)
		}
	}
}

func TestKeysAreValidAndApart(t *testing.T) {
	class, run := "Cl.ass*", "run >1"
	keys := []string{
		claimKey(class, run, "step.x", "k*"),
		counterKey(class, run, "step.x"),
		markerKey(class, run, "end"),
		runContextPrefix(class, run) + escape("_agent_config"),
		threadPrefix(class, "th read") + escape("k"),
	}
	for _, k := range keys {
		if !keyGrammar.MatchString(k) {
			t.Errorf("key %q is not a valid KV key", k)
		}
	}
	// The marker must not be under the run prefix that DeleteRun purges.
	if strings.HasPrefix(keys[2], runPrefix(class, run)) {
		t.Errorf("marker %q is under the run prefix", keys[2])
	}
	// A class whose escaped name is a prefix of another's stays apart,
	// because every name is a whole token.
	if strings.HasPrefix(runPrefix("A", "r"), runPrefix("A.r", "")) {
		t.Error("run prefixes of different classes overlap")
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"a.b", "ü-日本", "*", ">", "x=y", "=2E"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := escape(s)
		if s != "" && !keyGrammar.MatchString(e) {
			t.Fatalf("escape(%q) = %q is not a valid key token", s, e)
		}
		if strings.Contains(e, ".") {
			t.Fatalf("escape(%q) = %q contains a dot", s, e)
		}
		back, err := unescape(e)
		if err != nil || back != s {
			t.Fatalf("round trip of %q: %q, %v", s, back, err)
		}
	})
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.Bucket != "saap_state" || c.ThreadBucket != "saap_state_threads" || c.TTL != 30*24*time.Hour || c.ThreadTTL != 0 || c.Replicas != 1 {
		t.Fatalf("defaults = %+v", c)
	}
	c = Config{Bucket: "b", TTL: -1, ThreadTTL: time.Hour}.withDefaults()
	if c.ThreadBucket != "b_threads" || c.TTL != 0 || c.ThreadTTL != time.Hour {
		t.Fatalf("withDefaults = %+v", c)
	}
}

// validKey, the byte check of keys written directly, accepts what the
// client's grammar accepts.
func FuzzValidKey(f *testing.F) {
	for _, s := range []string{"a", "a.b", ".a", "a.", "a..b", "a.b.c", "=2E", "a b", "*", ">", "a/b_c-d=e", "ü", "", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validKey(s), keyGrammar.MatchString(s); got != want {
			t.Fatalf("validKey(%q) = %v, the client's grammar says %v", s, got, want)
		}
	})
}
