package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
)

// ErrNoReader is wrapped by Read's error for a file of a type no reader
// is registered for (an image: use Blocks).
var ErrNoReader = errors.New("files: no reader for the content type")

// A ReaderFunc turns a file's bytes into text. It reads at most what it
// needs; maxBytes is a hint of how much text the budget can take (the
// caller cuts the result to the budget anyway).
type ReaderFunc func(ctx context.Context, info Info, r io.Reader, maxBytes int) (string, error)

var (
	readersMu sync.RWMutex
	readers   = map[string]ReaderFunc{
		"text/plain":    readText,
		"text/markdown": readText,
	}
)

// Register makes fn the reader of contentType (a MIME type without
// parameters), replacing any before. Packages such as files/pdf call it
// from init.
func Register(contentType string, fn ReaderFunc) {
	readersMu.Lock()
	defer readersMu.Unlock()
	readers[strings.ToLower(contentType)] = fn
}

func reader(contentType string) ReaderFunc {
	readersMu.RLock()
	defer readersMu.RUnlock()
	return readers[contentType]
}

// EstimateTokens is the token count Read uses: a quarter of the bytes,
// rounded up, the usual rule of thumb for English and German text.
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// Text is a file read as text.
type Text struct {
	// Info is the file's, as stored.
	Info Info
	// Text is the file's text, cut to the budget.
	Text string
	// Tokens is the estimated token count of Text.
	Tokens int
	// Truncated reports that the file had more text than the budget.
	Truncated bool
}

// Read fetches the file ref names from store and returns its text, at most
// tokens tokens of it (EstimateTokens; tokens <= 0: no limit). The stored
// content type decides the reader, not the reference's file_type, which a
// client wrote. The caller must have checked that the run's user may read
// the file (the gateway does for files a message references).
func Read(ctx context.Context, store Store, ref event.UserUploadedFile, tokens int) (Text, error) {
	if err := CheckID(ref.FileID); err != nil {
		return Text{}, err
	}
	rc, info, err := store.Get(ctx, ref.FileID)
	if err != nil {
		return Text{}, err
	}
	defer rc.Close()
	fn := reader(info.ContentType)
	if fn == nil {
		return Text{Info: info}, fmt.Errorf("%w: %s is %s", ErrNoReader, info.Name, info.ContentType)
	}
	maxBytes := -1
	if tokens > 0 {
		maxBytes = tokens * 4
	}
	s, err := fn(ctx, info, rc, maxBytes)
	if err != nil {
		return Text{Info: info}, fmt.Errorf("files: read %s (%s): %w", info.Name, info.ContentType, err)
	}
	t := Text{Info: info, Text: s}
	if tokens > 0 && EstimateTokens(s) > tokens {
		t.Text, t.Truncated = cut(s, tokens*4), true
	}
	t.Tokens = EstimateTokens(t.Text)
	return t, nil
}

// ReadAll reads the files of refs that have a reader, sharing tokens
// between them: each gets an equal share of what is left, and what a short
// file leaves goes to the next. Files without a reader (images) are
// skipped; use Blocks for them.
func ReadAll(ctx context.Context, store Store, refs []event.UserUploadedFile, tokens int) ([]Text, error) {
	var out []Text
	left := tokens
	for i, ref := range refs {
		share := 0
		if tokens > 0 {
			share = left / (len(refs) - i)
			if share <= 0 {
				break
			}
		}
		t, err := Read(ctx, store, ref, share)
		if errors.Is(err, ErrNoReader) {
			continue
		}
		if err != nil {
			return out, err
		}
		out = append(out, t)
		left -= t.Tokens
	}
	return out, nil
}

// Format renders texts as one block of context for a prompt, each file
// under a header with its name and size, as the reference formats
// attached files.
func Format(texts []Text) string {
	var b strings.Builder
	for i, t := range texts {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "--- %s (%d bytes) ---\n%s", t.Info.Name, t.Info.Size, t.Text)
		if t.Truncated {
			b.WriteString("\n[...]")
		}
	}
	return b.String()
}

// Blocks fetches the images and PDFs among refs as content blocks for
// models that take them (llm.BlockImage, llm.BlockDocument); other files
// are skipped. maxBytes bounds each file (0: no bound); a larger file is an
// error.
func Blocks(ctx context.Context, store Store, refs []event.UserUploadedFile, maxBytes int64) ([]llm.Block, error) {
	var out []llm.Block
	for _, ref := range refs {
		if err := CheckID(ref.FileID); err != nil {
			return out, err
		}
		info, err := store.Stat(ctx, ref.FileID)
		if err != nil {
			return out, err
		}
		kind := llm.BlockImage
		switch {
		case strings.HasPrefix(info.ContentType, "image/"):
		case info.ContentType == "application/pdf":
			kind = llm.BlockDocument
		default:
			continue
		}
		if maxBytes > 0 && info.Size > maxBytes {
			return out, fmt.Errorf("files: %s has %d bytes, more than the %d a block may take", info.Name, info.Size, maxBytes)
		}
		rc, info, err := store.Get(ctx, ref.FileID)
		if err != nil {
			return out, err
		}
		data, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			return out, fmt.Errorf("files: read %s: %w", info.Name, err)
		}
		b := llm.Block{Kind: kind, Data: data, MediaType: info.ContentType}
		if kind == llm.BlockDocument {
			b.Title = info.Name
		}
		out = append(out, b)
	}
	return out, nil
}

// readText reads UTF-8 text, replacing invalid sequences.
func readText(_ context.Context, _ Info, r io.Reader, maxBytes int) (string, error) {
	if maxBytes > 0 {
		// A little over the budget, so the cut can tell it was cut.
		r = io.LimitReader(r, int64(maxBytes)+utf8.UTFMax+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	return strings.ToValidUTF8(string(data), "\uFFFD"), nil
}

// cut shortens s to at most n bytes, at a rune boundary, preferring the
// last line or word break in the final quarter.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	s = s[:n]
	if i := strings.LastIndexAny(s, "\n "); i > n*3/4 {
		s = s[:i]
	}
	return s
}
