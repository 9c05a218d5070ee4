package files_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/saap-go/agent/files"
)

// FuzzSniff: any head, header and name give a known type or
// ErrUnsupportedType, never a panic.
func FuzzSniff(f *testing.F) {
	f.Add([]byte("hello"), "text/plain", "a.txt")
	f.Add([]byte("%PDF-1.4"), "image/png", "a.png")
	f.Add([]byte("<html>"), "text/html; charset=utf-8", "a.html")
	f.Add([]byte("\x89PNG\r\n\x1a\n"), "", "")
	f.Fuzz(func(t *testing.T, head []byte, declared, name string) {
		ct, err := files.Sniff(head, declared, name)
		if err != nil {
			if !errors.Is(err, files.ErrUnsupportedType) {
				t.Fatalf("error %v is no ErrUnsupportedType", err)
			}
			return
		}
		if !files.Known(ct) {
			t.Fatalf("accepted unknown type %q", ct)
		}
	})
}

// FuzzReadText: text and HTML readers return valid UTF-8 within the budget
// for any bytes.
func FuzzReadText(f *testing.F) {
	f.Add([]byte("plain ä text"), 3)
	f.Add([]byte("<p>a<script>x</script><b>b</b></p>\xff"), 0)
	s := files.NewMemory()
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte, tokens int) {
		tokens %= 1000
		for _, ct := range []string{"text/plain", "text/html"} {
			info, err := s.Put(ctx, files.Info{ID: files.NewID(), Name: "f", ContentType: ct}, bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			got, err := files.Read(ctx, s, info.Ref(), tokens)
			_ = s.Delete(ctx, info.ID)
			if err != nil {
				continue
			}
			if ct == "text/plain" && !utf8.ValidString(got.Text) {
				t.Fatalf("%s: invalid UTF-8 %q", ct, got.Text)
			}
			if tokens > 0 && got.Tokens > tokens {
				t.Fatalf("%s: %d tokens over the budget of %d", ct, got.Tokens, tokens)
			}
			_ = strings.TrimSpace(got.Text)
		}
	})
}
