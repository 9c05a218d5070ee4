package objstore_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/files"
	"github.com/saap-go/agent/files/filestest"
	"github.com/saap-go/agent/files/objstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, b *natsbus.Bus) *objstore.Store {
	t.Helper()
	ctx := context.Background()
	// A bucket of its own, so runs against a shared server do not meet.
	bucket := "test_files_" + files.NewID()[:8]
	s, err := objstore.New(ctx, b.JetStream(), objstore.Config{Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.JetStream().DeleteObjectStore(context.Background(), bucket) })
	return s
}

func TestObjectStore(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { filestest.Run(t, open(t, bustest.NewNATS(t))) })
	t.Run("external", func(t *testing.T) { filestest.Run(t, open(t, bustest.NewExternalNATS(t))) })
}

// TestOpenExisting: a second New finds the bucket and its files.
func TestOpenExisting(t *testing.T) {
	b := bustest.NewNATS(t)
	ctx := context.Background()
	s1, err := objstore.New(ctx, b.JetStream(), objstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	info, err := s1.Put(ctx, files.Info{ID: files.NewID(), Name: "a.txt", ContentType: "text/plain", Owner: "u"}, stringsReader("hi"))
	if err != nil {
		t.Fatal(err)
	}
	s2, err := objstore.New(ctx, b.JetStream(), objstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s2.Stat(ctx, info.ID); err != nil || got.Size != 2 || got.Name != "a.txt" {
		t.Errorf("stat through a second store: %+v, %v", got, err)
	}
}
