package gateway

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// TestMemoryHistoryMaxAge: entries older than MaxAge are neither read nor
// kept.
func TestMemoryHistoryMaxAge(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	h := NewMemoryHistory(HistoryLimits{MaxAge: time.Hour})
	h.now = func() time.Time { return now }
	ctx := context.Background()
	msg := json.RawMessage(`{"role":"user","content":"x"}`)
	thread := "0123456789abcdef01234567"
	if err := h.Append(ctx, thread, HistoryEntry{ID: "old", Message: msg}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	if es, _ := h.Read(ctx, thread, 0, 0); len(es) != 0 {
		t.Fatalf("read %d entries past MaxAge", len(es))
	}
	if err := h.Append(ctx, thread, HistoryEntry{ID: "new", Message: msg}); err != nil {
		t.Fatal(err)
	}
	es, _ := h.Read(ctx, thread, 0, 0)
	if len(es) != 1 || es[0].ID != "new" || len(h.threads[thread]) != 1 || h.ids[thread+"\x00old"] {
		t.Fatalf("after the next append: %v, kept %d", es, len(h.threads[thread]))
	}
}
