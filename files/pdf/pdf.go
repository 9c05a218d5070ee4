// Package pdf reads the text of PDF files for package files. Importing it
// registers the reader of application/pdf:
//
//	import _ "github.com/saap-go/agent/files/pdf"
//
// It is its own package so that agents which read no PDFs do not link a PDF
// parser. The parser is github.com/ledongthuc/pdf, pure Go, the maintained
// fork of rsc.io/pdf (which loops forever on some truncated files). It
// reads the text a PDF draws (not the text of scanned images, which needs
// OCR), page by page, in the order the page draws it. Encrypted PDFs are
// refused.
package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ledongthuc/pdf"

	"github.com/saap-go/agent/files"
)

// ContentType is the type this package reads.
const ContentType = "application/pdf"

// MaxPages bounds the pages read of one file.
const MaxPages = 2000

// MaxText bounds the text read of one file, in bytes, whatever the
// budget: a small compressed stream can draw gigabytes.
const MaxText = 16 << 20

// enough stops the interpretation of a page whose text reached the limit.
type enough struct{}

func init() { files.Register(ContentType, Read) }

// Read is the files.ReaderFunc of PDFs: the text of each page, pages
// separated by a blank line, until maxBytes of text (<= 0: all).
func Read(ctx context.Context, _ files.Info, r io.Reader, maxBytes int) (text string, err error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	// The parser panics on some malformed files; a bad upload is an error.
	defer func() {
		if p := recover(); p != nil {
			text, err = "", fmt.Errorf("pdf: malformed file: %v", p)
		}
	}()
	doc, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", fmt.Errorf("pdf: %w", err)
	}
	limit := MaxText
	if maxBytes > 0 {
		limit = min(maxBytes+1, MaxText)
	}
	var b strings.Builder
	n := min(doc.NumPage(), MaxPages)
	for i := 1; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if b.Len() >= limit {
			break
		}
		t := pageText(doc.Page(i), limit-b.Len())
		if t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(t)
	}
	if b.Len() == 0 && n > 0 {
		return "", errors.New("pdf: no text in the file (a scanned document needs OCR)")
	}
	return b.String(), nil
}

// pageText is the text a page shows, in the order its content stream
// shows it (the reading order of nearly every generated PDF): a new line
// where the text moves to another line, a space where a TJ array moves on
// by more than a fifth of a space. It interprets the stream itself rather
// than using the parser's glyph positions, which need font widths that
// PDFs using the standard fonts do not carry.
func pageText(p pdf.Page, limit int) (text string) {
	if p.V.IsNull() || limit <= 0 {
		return ""
	}
	var b strings.Builder
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(enough); !ok {
				panic(r)
			}
			text = tidy(b.String())
		}
	}()
	var enc pdf.TextEncoding
	nl := func() {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
	}
	show := func(v pdf.Value) {
		if enc == nil {
			b.WriteString(v.Text())
		} else {
			b.WriteString(enc.Decode(v.RawString()))
		}
		if b.Len() >= limit {
			panic(enough{})
		}
	}
	op := func(stk *pdf.Stack, op string) {
		n := stk.Len()
		args := make([]pdf.Value, n)
		for i := n - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		switch op {
		case "Tf":
			if n == 2 {
				f := p.Font(args[0].Name())
				enc = f.Encoder()
			}
		case "BT", "T*":
			nl()
		case "Td", "TD":
			if n == 2 && args[1].Float64() != 0 {
				nl()
			}
		case "Tm":
			nl()
		case "Tj":
			if n == 1 {
				show(args[0])
			}
		case "'", "\"":
			nl()
			if n >= 1 {
				show(args[n-1])
			}
		case "TJ":
			if n != 1 {
				return
			}
			for i := 0; i < args[0].Len(); i++ {
				x := args[0].Index(i)
				if x.Kind() == pdf.String {
					show(x)
				} else if x.Float64() < -200 && !strings.HasSuffix(b.String(), " ") {
					b.WriteByte(' ')
				}
			}
		}
	}
	c := p.V.Key("Contents")
	if c.Kind() == pdf.Array {
		for i := 0; i < c.Len(); i++ {
			pdf.Interpret(c.Index(i), op)
			nl()
		}
	} else {
		pdf.Interpret(c, op)
	}
	return tidy(b.String())
}

// tidy collapses white space within lines and drops empty lines.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
