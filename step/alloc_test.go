//go:build !race

package step_test

import (
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// TestCallAllocations pins the cost of the cached plan: beyond what the step
// itself allocates (its result and the output list), a call allocates only
// inside reflect.Value.Call (the result slice and the error's box).
func TestCallAllocations(t *testing.T) {
	ctx := newCtx()
	s := step.New(benchStep)
	args := [][]event.Event{{&A{N: 1}}}
	got := testing.AllocsPerRun(200, func() {
		if _, err := s.Call(ctx, args); err != nil {
			t.Fatal(err)
		}
	})
	if got > 4 {
		t.Errorf("Call allocates %v times, want at most 4", got)
	}
	// Optional, union and fixed-size values come from pools: what remains
	// is reflect.Value.Call's own.
	s = step.New(func(_ step.Context, a *A, o step.Maybe[*B], ws [2]*W, u step.Either[*A, *C]) error { return nil }, step.Name("values"))
	args = [][]event.Event{{&A{}}, {&B{}}, {&W{}, &W{}}, {&C{}}}
	got = testing.AllocsPerRun(200, func() {
		if _, err := s.Call(ctx, args); err != nil {
			t.Fatal(err)
		}
	})
	if got > 3 {
		t.Errorf("Call with value parameters allocates %v times, want at most 3", got)
	}
}
