package natskv_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/topic"
)

// A run id whose escaped key would not fit in a NATS protocol line is
// refused before any I/O with a permanent error; the connection survives.
func TestOverlongKeyIsRefused(t *testing.T) {
	js := connect(t, embedded(t))
	s := newStore(t, js)
	ctx := t.Context()
	// Escaping triples non-ASCII bytes: 1,400 bytes become 4,200.
	long := store.RunKey{Class: "C", Run: strings.Repeat("ü", 700)}
	for name, op := range map[string]func() error{
		"Claim": func() error {
			_, err := s.Claim(ctx, long, store.ClaimRequest{Step: "s", Key: "k"})
			return err
		},
		"SetMarker": func() error { _, _, err := s.SetMarker(ctx, long, "m", "v"); return err },
		"Set":       func() error { return s.Set(ctx, long.RunContext(), "k", []byte(`1`)) },
		"Get":       func() error { _, _, err := s.Get(ctx, long.RunContext(), "k"); return err },
		"Keys":      func() error { _, err := s.Keys(ctx, long.RunContext()); return err },
	} {
		err := op()
		if !errors.Is(err, topic.ErrSubjectTooLong) || !engine.IsPermanent(err) {
			t.Errorf("%s: %v, want a permanent ErrSubjectTooLong", name, err)
		}
	}
	if js.Conn().IsClosed() {
		t.Fatal("the connection was closed")
	}
	ok := store.RunKey{Class: "C", Run: "r"}
	if _, err := s.Claim(ctx, ok, store.ClaimRequest{Step: "s", Key: "k"}); err != nil {
		t.Fatalf("the store stopped working: %v", err)
	}
}
