package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"testing"
)

// reference is the canonical encoding, computed the slow way.
func reference(class, run, stepName string, ids []string) [32]byte {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	var buf []byte
	for _, s := range append([]string{class, run, stepName}, ids...) {
		buf = appendField(buf, s)
	}
	return sha256.Sum256(buf)
}

func TestBindingIsCanonical(t *testing.T) {
	cases := [][]string{
		{},
		{"6955b9000000000000000003"},
		{"6955b9000000000000000003", "5955b9000000000000000009", "6955b9000000000000000001"},
		{"6955b9000000000000000003", "not-an-object-id", "A"},
		{"6955b9000000000000000003", "6955b9000000000000000003"}, // the same event bound twice
	}
	for _, ids := range cases {
		want := reference("C", "r", "s", ids)
		for _, perm := range [][]string{slices.Clone(ids), reversed(ids)} {
			got := bindingOf("C", "r", "s", perm)
			if got.digest != want {
				t.Errorf("bindingOf(%q) digest differs from the canonical encoding", ids)
			}
		}
	}
	if bindingOf("C", "r", "s", []string{"a"}).key == bindingOf("C", "r", "s", []string{"a", "a"}).key {
		t.Error("a duplicate id does not change the key")
	}
	if bindingOf("C1", "r", "s", []string{"a"}).key == bindingOf("C2", "r", "s", []string{"a"}).key {
		t.Error("the class does not change the key")
	}
}

func reversed(s []string) []string {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

var hex24 = regexp.MustCompile(`^[0-9a-f]{24}$`)

func TestOutputIDs(t *testing.T) {
	b := bindingOf("C", "r", "s", []string{"5955b9000000000000000009", "6955b9000000000000000003"})
	ids := []string{b.id("out", 0), b.id("out", 1), b.id("exception", 0), b.id("emit", 1)}
	for _, id := range ids {
		if !hex24.MatchString(id) {
			t.Fatalf("id %q is not 24 lower-hex", id)
		}
		if id[:8] != "6955b900" {
			t.Fatalf("id %q does not start with the newest input's time 6955b900", id)
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(ids)))) != len(ids) {
		t.Fatalf("ids collide: %q", ids)
	}
	if again := bindingOf("C", "r", "s", []string{"6955b9000000000000000003", "5955b9000000000000000009"}); again.id("out", 1) != ids[1] {
		t.Fatal("the same inputs in another order give another id")
	}
	// No ObjectId among the inputs: all 12 bytes from the hash.
	nb := bindingOf("C", "r", "s", []string{"x"})
	sum := sha256.Sum256(append(nb.digest[:], "out0"...))
	if got := nb.id("out", 0); got != hex.EncodeToString(sum[:12]) {
		t.Fatalf("id without ObjectId inputs = %q, want the hash's first 12 bytes", got)
	}
}

// Output ids are keyed with the run's secret: the same secret and inputs
// give the same id (a re-run after a crash, another replica), another
// secret gives unrelated ids, and without the secret the inputs do not
// tell the id.
func TestOutputIDsAreKeyed(t *testing.T) {
	inputs := []string{"5955b9000000000000000009", "6955b9000000000000000003"}
	keyed := func(secret string) binding {
		b := bindingOf("C", "r", "s", slices.Clone(inputs))
		b.secret = []byte(secret)
		return b
	}
	a, again, other := keyed("secret-one-16byt"), keyed("secret-one-16byt"), keyed("secret-two-16byt")
	plain := bindingOf("C", "r", "s", slices.Clone(inputs))
	for _, label := range []string{"out", "exception", "emit"} {
		for n := range 3 {
			id := a.id(label, n)
			if !hex24.MatchString(id) || id[:8] != "6955b900" {
				t.Fatalf("keyed id %q: want 24 lower-hex starting with the newest input's time", id)
			}
			if again.id(label, n) != id {
				t.Fatalf("%s %d: the same secret and inputs give another id", label, n)
			}
			if other.id(label, n)[8:] == id[8:] || plain.id(label, n)[8:] == id[8:] {
				t.Fatalf("%s %d: id %s does not depend on the secret", label, n, id)
			}
		}
	}
}
