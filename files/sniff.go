package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"
)

// ErrUnsupportedType is wrapped by Sniff's errors: the content is of no
// type the caller accepts, or not of the type the client declared.
var ErrUnsupportedType = errors.New("files: unsupported content type")

// SniffLen is how many leading bytes Sniff looks at.
const SniffLen = 512

// Sniff decides a file's content type from its first bytes (at least
// SniffLen of them when the file is that long), the type the client
// declared and the file name, and checks it against allowed (none: every
// type this package knows). The content decides: a declared type only
// refines it (text declared or named as Markdown is text/markdown), and a
// declared type the content contradicts (a "PNG" that is a PDF) is an
// error, as is text that is not UTF-8.
func Sniff(head []byte, declared, name string, allowed ...string) (string, error) {
	decl, _, _ := mime.ParseMediaType(declared)
	decl = strings.ToLower(decl)
	got := strings.ToLower(strings.TrimSpace(strings.Split(http.DetectContentType(head), ";")[0]))
	switch got {
	case "text/plain":
		if !validHead(head) {
			return "", fmt.Errorf("%w: the text is not UTF-8", ErrUnsupportedType)
		}
		ext := strings.ToLower(path.Ext(name))
		if decl == "text/markdown" || decl == "text/x-markdown" || ext == ".md" || ext == ".markdown" {
			got = "text/markdown"
		}
	case "text/xml":
		// Without a declared HTML type, XML is no type a reader knows.
		if decl == "text/html" || decl == "application/xhtml+xml" {
			got = "text/html"
		}
	}
	if decl != "" && decl != "application/octet-stream" && decl != got && !compatible(decl, got) {
		return "", fmt.Errorf("%w: declared %s, but the content is %s", ErrUnsupportedType, decl, got)
	}
	ok := false
	if len(allowed) == 0 {
		ok = Known(got)
	}
	for _, a := range allowed {
		if strings.EqualFold(a, got) {
			ok = true
		}
	}
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrUnsupportedType, got)
	}
	return got, nil
}

// compatible reports whether a declared type may name content sniffed as
// got: any text type names plain text, Markdown or HTML.
func compatible(decl, got string) bool {
	return strings.HasPrefix(decl, "text/") && strings.HasPrefix(got, "text/")
}

// validHead reports whether a sniffed head is UTF-8, allowing a sequence
// cut at its end.
func validHead(b []byte) bool {
	for i := 0; i < utf8.UTFMax && i <= len(b); i++ {
		if utf8.Valid(b[:len(b)-i]) {
			return true
		}
	}
	return false
}

// ImageTypes are the image types models take as content blocks.
var ImageTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// Known reports whether a reader is registered for contentType or it is
// one of ImageTypes.
func Known(contentType string) bool {
	for _, t := range ImageTypes {
		if t == contentType {
			return true
		}
	}
	return reader(contentType) != nil
}

// A Scanner inspects a file before it is stored: a virus scanner, a DLP
// check. Scan reads the file from r; it returns a *RejectedError to refuse
// the file (the gateway answers 422 with the reason) and any other error
// when it could not decide (500; the file is not stored).
type Scanner interface {
	Scan(ctx context.Context, info Info, r io.Reader) error
}

// ScannerFunc adapts a function to Scanner.
type ScannerFunc func(ctx context.Context, info Info, r io.Reader) error

// Scan calls f.
func (f ScannerFunc) Scan(ctx context.Context, info Info, r io.Reader) error { return f(ctx, info, r) }

// RejectedError is a Scanner's refusal.
type RejectedError struct {
	// Reason says why, for the user ("infected: Eicar-Test-Signature").
	Reason string
}

func (e *RejectedError) Error() string { return "files: rejected: " + e.Reason }
