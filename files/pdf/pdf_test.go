package pdf_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/saap-go/agent/files"
	_ "github.com/saap-go/agent/files/pdf"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The fixtures are written by testdata/gen (go run . .. there).
func fixture(t *testing.T, s files.Store, name string) files.Info {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := files.Sniff(data[:min(len(data), files.SniffLen)], "application/pdf", name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Put(context.Background(), files.Info{ID: files.NewID(), Name: name, ContentType: ct}, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func TestReadPDF(t *testing.T) {
	s := files.NewMemory()
	info := fixture(t, s, "report.pdf")
	got, err := files.Read(context.Background(), s, info.Ref(), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "Quarterly report\nThe blue heron project shipped on 3 March.\nRevenue grew by 17 percent."
	if got.Text != want {
		t.Errorf("got %q\nwant %q", got.Text, want)
	}
}

func TestReadPDFPagesWithinBudget(t *testing.T) {
	s := files.NewMemory()
	info := fixture(t, s, "pages.pdf")
	all, err := files.Read(context.Background(), s, info.Ref(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if all.Text != "Page one says alpha.\n\nPage two says beta.\n\nPage three says gamma." {
		t.Errorf("pages: %q", all.Text)
	}
	cut, err := files.Read(context.Background(), s, info.Ref(), 8)
	if err != nil {
		t.Fatal(err)
	}
	if !cut.Truncated || cut.Tokens > 8 || !strings.HasPrefix(all.Text, cut.Text) {
		t.Errorf("budget 8: %q (%d tokens, truncated %v)", cut.Text, cut.Tokens, cut.Truncated)
	}
}

// TestMalformedPDF: a file that starts like a PDF and is none is an error,
// never a panic.
func TestMalformedPDF(t *testing.T) {
	s := files.NewMemory()
	ctx := context.Background()
	data, err := os.ReadFile("testdata/report.pdf")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{[]byte("%PDF-1.4\ngarbage"), data[:len(data)/2], append(append([]byte{}, data[:300]...), bytes.Repeat([]byte{0xff}, 500)...)} {
		info, err := s.Put(ctx, files.Info{ID: files.NewID(), Name: "bad.pdf", ContentType: "application/pdf"}, bytes.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := files.Read(ctx, s, info.Ref(), 0); err == nil {
			t.Errorf("%d bytes of garbage read as a PDF", len(bad))
		}
	}
}

func FuzzRead(f *testing.F) {
	data, err := os.ReadFile("testdata/report.pdf")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte("%PDF-1.4\n1 0 obj << >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF"))
	s := files.NewMemory()
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := s.Put(context.Background(), files.Info{ID: files.NewID(), Name: "f.pdf", ContentType: "application/pdf"}, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = files.Read(context.Background(), s, info.Ref(), 100)
		_ = s.Delete(context.Background(), info.ID)
	})
}

// TestMutatedPDFsEnd: damaged copies of a fixture (bytes changed, the file
// cut short) are read or refused, never loop or panic. A truncated string
// made the parser this package first used loop forever.
func TestMutatedPDFsEnd(t *testing.T) {
	data, err := os.ReadFile("testdata/pages.pdf")
	if err != nil {
		t.Fatal(err)
	}
	s := files.NewMemory()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	n := 2000
	if testing.Short() {
		n = 200
	}
	for range n {
		b := append([]byte(nil), data...)
		for range 1 + r.IntN(8) {
			b[r.IntN(len(b))] = byte(r.IntN(256))
		}
		if r.IntN(4) == 0 {
			b = b[:r.IntN(len(b))]
		}
		info, err := s.Put(ctx, files.Info{ID: files.NewID(), Name: "m.pdf", ContentType: "application/pdf"}, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = files.Read(ctx, s, info.Ref(), 0)
		_ = s.Delete(ctx, info.ID)
	}
}
