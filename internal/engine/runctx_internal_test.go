package engine

import (
	"context"
	"errors"
	"testing"
)

// A step that never waits on its context still sees the run's end through
// Err and context.Cause, and one that waits later finds store.Done closed.
func TestRunCtxEndsWithoutDone(t *testing.T) {
	r := &runEntry{}
	var c runCtx
	r.track(&c, context.Background())
	if err := c.Err(); err != nil {
		t.Fatalf("Err before the end = %v", err)
	}
	r.terminate()
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after the run ended = %v, want context.Canceled", err)
	}
	if cause := context.Cause(&c); !errors.Is(cause, ErrRunEnded) {
		t.Fatalf("Cause = %v, want ErrRunEnded", cause)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed after the run ended")
	}
	r.untrack(&c)
	if cause := context.Cause(&c); !errors.Is(cause, ErrRunEnded) {
		t.Fatalf("Cause after untrack = %v, want ErrRunEnded (the first end wins)", cause)
	}
}

// A context derived while the execution runs is cancelled by the run's end
// and by the parent's, and untrack ends it with context.Canceled.
func TestRunCtxDerived(t *testing.T) {
	r := &runEntry{}
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	var c runCtx
	r.track(&c, parent)
	child, cancel := context.WithCancel(&c)
	defer cancel()
	r.terminate()
	<-child.Done()
	if cause := context.Cause(child); !errors.Is(cause, ErrRunEnded) {
		t.Fatalf("child's cause = %v, want ErrRunEnded", cause)
	}

	var d runCtx
	r2 := &runEntry{}
	r2.track(&d, parent)
	waiting := d.Done()
	cancelParent()
	<-waiting
	if !errors.Is(d.Err(), context.Canceled) {
		t.Fatalf("Err after the parent's end = %v", d.Err())
	}

	var e runCtx
	r3 := &runEntry{}
	r3.track(&e, context.Background())
	r3.untrack(&e)
	if !errors.Is(e.Err(), context.Canceled) || context.Cause(&e) != context.Canceled {
		t.Fatalf("after untrack: Err %v, Cause %v; want context.Canceled", e.Err(), context.Cause(&e))
	}
	if len(r3.active) != 0 {
		t.Fatalf("untrack left %d contexts tracked", len(r3.active))
	}
	// A run already ended ends a context tracked after it.
	var f runCtx
	r.track(&f, context.Background())
	if cause := context.Cause(&f); !errors.Is(cause, ErrRunEnded) {
		t.Fatalf("tracked after the end: Cause = %v", cause)
	}
}
