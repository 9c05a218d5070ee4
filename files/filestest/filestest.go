// Package filestest is the conformance suite of files.Store: every store,
// the in-memory one, the Object Store and one of your own, passes it.
package filestest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/saap-go/agent/files"
)

// Run checks that s does what a files.Store must: put, stat, get and
// delete, ErrNotFound for unknown and bad ids. It
// stores and deletes files of fresh ids.
func Run(t *testing.T, s files.Store) {
	t.Helper()
	ctx := context.Background()
	data := bytes.Repeat([]byte("0123456789"), 50_000) // 500 kB: several object chunks
	id := files.NewID()
	in := files.Info{ID: id, Name: "big name ü.txt", ContentType: "text/plain", Owner: "alice", Thread: "65f0c0ffee0123456789abcd"}
	got, err := s.Put(ctx, in, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got.Size != int64(len(data)) || got.Created.IsZero() || got.Name != in.Name || got.Owner != "alice" || got.Thread != in.Thread {
		t.Errorf("put info %+v", got)
	}
	st, err := s.Stat(ctx, id)
	if err != nil || st.Size != got.Size || st.ContentType != "text/plain" || st.Name != in.Name || st.Thread != in.Thread {
		t.Errorf("stat %+v, %v", st, err)
	}
	rc, gi, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil || !bytes.Equal(back, data) || gi.Owner != "alice" {
		t.Errorf("get: %d bytes, %v, %+v", len(back), err, gi)
	}
	if _, err := s.Put(ctx, files.Info{ID: "not-a-uuid"}, bytes.NewReader(nil)); err == nil {
		t.Error("a bad id was stored")
	}
	if err := s.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"stat":   func() error { _, err := s.Stat(ctx, id); return err }(),
		"get":    func() error { _, _, err := s.Get(ctx, id); return err }(),
		"delete": s.Delete(ctx, id),
		"bad id": func() error { _, err := s.Stat(ctx, "../x"); return err }(),
	} {
		if !errors.Is(err, files.ErrNotFound) {
			t.Errorf("%s after delete: %v, want ErrNotFound", name, err)
		}
	}
}
