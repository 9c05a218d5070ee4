package files_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/files"
	"github.com/saap-go/agent/files/filestest"
	_ "github.com/saap-go/agent/files/html"
	"github.com/saap-go/agent/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func put(t *testing.T, s files.Store, name, typ string, data []byte) event.UserUploadedFile {
	t.Helper()
	info, err := s.Put(context.Background(), files.Info{ID: files.NewID(), Name: name, ContentType: typ, Owner: "alice"}, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return info.Ref()
}

func TestNewIDIsAUUID4TheEventCodecAccepts(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := files.NewID()
		if err := files.CheckID(id); err != nil {
			t.Fatal(err)
		}
		if seen[id] {
			t.Fatalf("id %s twice", id)
		}
		seen[id] = true
	}
	msg := event.Stamp(&event.UserMessageEvent{User: &event.UserIdentity{ID: "u", Roles: []string{}},
		Files: []event.UserUploadedFile{{Filename: "a.txt", FileType: "text/plain", FileID: files.NewID()}}})
	if err := event.Validate(msg); err != nil {
		t.Fatal(err)
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a.txt", "Bericht 2026 (final).pdf", "ü.md"} {
		if err := files.CheckName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a/b", `a\b`, "x\x00y", "line\nbreak", strings.Repeat("a", 256)} {
		if err := files.CheckName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSniff(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	tests := []struct {
		head           string
		declared, name string
		want           string // "" = refused
	}{
		{"hello world", "text/plain", "a.txt", "text/plain"},
		{"# Title\n\ntext", "text/markdown", "a.md", "text/markdown"},
		{"# Title\n\ntext", "", "notes.md", "text/markdown"},
		{"# Title\n\ntext", "application/octet-stream", "notes.markdown", "text/markdown"},
		{"<!DOCTYPE html><html><body>x</body></html>", "text/html", "a.html", "text/html"},
		{"<html><body>x</body></html>", "text/plain", "a.txt", "text/html"}, // text types name each other
		{"%PDF-1.4\n...", "application/pdf", "a.pdf", ""},                   // no PDF reader linked here
		{string(png), "image/png", "a.png", "image/png"},
		{"%PDF-1.4\n...", "image/png", "a.png", ""}, // the content contradicts the header
		{string(png), "text/plain", "a.txt", ""},
		{"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff", "text/plain", "a.exe", ""},
		{"\xff\xfe\xfd not utf-8 \x80\x81", "text/plain", "a.txt", ""},
		{"ok \xc3", "text/plain", "cut.txt", "text/plain"}, // a rune cut at the sniff length
		{"PK\x03\x04\x14\x00\x06\x00", "", "a.docx", ""},
	}
	for _, tt := range tests {
		got, err := files.Sniff([]byte(tt.head), tt.declared, tt.name)
		if tt.want == "" {
			if err == nil || !errors.Is(err, files.ErrUnsupportedType) {
				t.Errorf("Sniff(%q, %s) = %q, %v; want ErrUnsupportedType", tt.head, tt.declared, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Sniff(%q, %s) = %q, %v; want %s", tt.head, tt.declared, got, err, tt.want)
		}
	}
	if _, err := files.Sniff([]byte("hello"), "", "a.txt", "image/png"); err == nil {
		t.Error("text accepted where only PNG is allowed")
	}
}

func TestReadTextWithinBudget(t *testing.T) {
	s := files.NewMemory()
	ctx := context.Background()
	long := strings.Repeat("word ", 1000) // 5000 bytes, ~1250 tokens
	ref := put(t, s, "long.txt", "text/plain", []byte(long))
	got, err := files.Read(ctx, s, ref, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Truncated || got.Tokens > 100 || got.Tokens < 90 || !strings.HasPrefix(long, got.Text) {
		t.Errorf("read %d tokens, truncated %v: %q", got.Tokens, got.Truncated, got.Text[:20])
	}
	all, err := files.Read(ctx, s, ref, 0)
	if err != nil || all.Truncated || all.Text != long {
		t.Errorf("unbounded read: %v, truncated %v", err, all.Truncated)
	}
	short := put(t, s, "short.md", "text/markdown", []byte("# Notes\n\nThe key is *42*."))
	got, err = files.Read(ctx, s, short, 100)
	if err != nil || got.Truncated || got.Text != "# Notes\n\nThe key is *42*." {
		t.Errorf("markdown: %+v, %v", got, err)
	}
	// A cut never splits a rune.
	umlauts := put(t, s, "u.txt", "text/plain", []byte(strings.Repeat("ä", 500)))
	got, err = files.Read(ctx, s, umlauts, 10)
	if err != nil || !got.Truncated || !strings.HasPrefix(strings.Repeat("ä", 500), got.Text) || strings.ContainsRune(got.Text, '\uFFFD') {
		t.Errorf("umlauts: %q, %v", got.Text, err)
	}
}

func TestReadHTML(t *testing.T) {
	s := files.NewMemory()
	page := `<!DOCTYPE html><html><head><title>Ignored title</title><style>p{color:red}</style>
<script>var secret = "not text";</script></head>
<body><h1>Release notes</h1><p>The <b>heron</b> build is H<sub>2</sub>O-proof.</p>
<ul><li>first</li><li>second</li></ul><noscript>enable js</noscript></body></html>`
	ref := put(t, s, "notes.html", "text/html", []byte(page))
	got, err := files.Read(context.Background(), s, ref, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := "Release notes\nThe heron build is H2O-proof.\nfirst\nsecond"
	if got.Text != want {
		t.Errorf("got %q\nwant %q", got.Text, want)
	}
}

func TestReadErrors(t *testing.T) {
	s := files.NewMemory()
	ctx := context.Background()
	if _, err := files.Read(ctx, s, event.UserUploadedFile{FileID: files.NewID()}, 10); !errors.Is(err, files.ErrNotFound) {
		t.Errorf("unknown file: %v", err)
	}
	if _, err := files.Read(ctx, s, event.UserUploadedFile{FileID: "../etc/passwd"}, 10); err == nil || !strings.Contains(err.Error(), "file_id") {
		t.Errorf("bad id: %v", err)
	}
	img := put(t, s, "a.png", "image/png", []byte("\x89PNG\r\n\x1a\nxx"))
	if _, err := files.Read(ctx, s, img, 10); !errors.Is(err, files.ErrNoReader) {
		t.Errorf("image: %v", err)
	}
}

func TestReadAllSharesTheBudgetAndFormat(t *testing.T) {
	s := files.NewMemory()
	ctx := context.Background()
	a := put(t, s, "a.txt", "text/plain", []byte("short file"))
	img := put(t, s, "b.png", "image/png", []byte("\x89PNG\r\n\x1a\nxx"))
	c := put(t, s, "c.txt", "text/plain", []byte(strings.Repeat("long ", 400)))
	texts, err := files.ReadAll(ctx, s, []event.UserUploadedFile{a, img, c}, 120)
	if err != nil {
		t.Fatal(err)
	}
	if len(texts) != 2 {
		t.Fatalf("%d texts", len(texts))
	}
	total := texts[0].Tokens + texts[1].Tokens
	if total > 120 || texts[1].Tokens < 50 || !texts[1].Truncated {
		t.Errorf("tokens %d + %d, second truncated %v", texts[0].Tokens, texts[1].Tokens, texts[1].Truncated)
	}
	out := files.Format(texts)
	if !strings.HasPrefix(out, "--- a.txt (10 bytes) ---\nshort file\n\n--- c.txt (2000 bytes) ---\nlong") || !strings.HasSuffix(out, "[...]") {
		t.Errorf("format: %q", out)
	}
}

func TestBlocks(t *testing.T) {
	s := files.NewMemory()
	ctx := context.Background()
	pngData := []byte("\x89PNG\r\n\x1a\nxx")
	img := put(t, s, "a.png", "image/png", pngData)
	doc := put(t, s, "r.pdf", "application/pdf", []byte("%PDF-1.4"))
	txt := put(t, s, "a.txt", "text/plain", []byte("x"))
	bs, err := files.Blocks(ctx, s, []event.UserUploadedFile{img, txt, doc}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[0].Kind != llm.BlockImage || bs[0].MediaType != "image/png" || !bytes.Equal(bs[0].Data, pngData) ||
		bs[1].Kind != llm.BlockDocument || bs[1].Title != "r.pdf" {
		t.Errorf("blocks %+v", bs)
	}
	if _, err := files.Blocks(ctx, s, []event.UserUploadedFile{img}, 4); err == nil {
		t.Error("a file over the bound became a block")
	}
}

func TestMemoryStore(t *testing.T) {
	filestest.Run(t, files.NewMemory())
}
