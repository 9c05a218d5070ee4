package event

import (
	"encoding/binary"
	"encoding/hex"
	"testing"
)

// TestIDEntropy checks the 8 bytes after the time prefix: no collisions in
// 100 000 ids, every bit set about half the time, and nothing carried from
// one id to the next (a counter or a clock field would show in both).
func TestIDEntropy(t *testing.T) {
	const n = 100_000
	const bound = 6 * 158 // six standard deviations of Binomial(n, 1/2)
	var ones, flips [64]int
	seen := make(map[uint64]bool, n)
	var prev uint64
	near := 0
	for i := range n {
		id := NewID()
		var raw [12]byte
		if _, err := hex.Decode(raw[:], []byte(id)); err != nil {
			t.Fatalf("NewID() = %q: %v", id, err)
		}
		r := binary.BigEndian.Uint64(raw[4:])
		if seen[r] {
			t.Fatalf("random part of %s repeats after %d ids", id, i)
		}
		seen[r] = true
		for b := range 64 {
			ones[b] += int(r >> b & 1)
		}
		if i > 0 {
			x := r ^ prev
			for b := range 64 {
				flips[b] += int(x >> b & 1)
			}
			// A counter or a small step would put consecutive ids close;
			// for random ones |r-prev| < 2^32 has probability 2^-31.
			if d := r - prev; d < 1<<32 || -d < 1<<32 {
				near++
			}
		}
		prev = r
	}
	for b := range 64 {
		if d := ones[b] - n/2; d > bound || d < -bound {
			t.Errorf("bit %d set in %d of %d ids", b, ones[b], n)
		}
		if d := flips[b] - (n-1)/2; d > bound || d < -bound {
			t.Errorf("bit %d differs between consecutive ids %d times of %d", b, flips[b], n-1)
		}
	}
	if near > 0 {
		t.Errorf("%d consecutive ids lie within 2^32 of each other", near)
	}
}
