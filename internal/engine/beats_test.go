package engine

import (
	"testing"

	"github.com/saap-go/agent/bus"
)

// A disabled heartbeat registers nothing and arms no timer, so no
// zero-duration timer can spin.
func TestBeatsDisabledArmsNoTimer(t *testing.T) {
	var b beats
	var d bus.Delivery
	id := b.add(d)
	if b.armed || b.t != nil || len(b.live) != 0 {
		t.Fatalf("disabled beats: armed=%v timer=%v live=%d, want nothing", b.armed, b.t != nil, len(b.live))
	}
	b.remove(id)
}
