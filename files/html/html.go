// Package html reads the visible text of HTML files for package files.
// Importing it registers the reader of text/html:
//
//	import _ "github.com/saap-go/agent/files/html"
//
// It is its own package so that programs which read no HTML (the gateway,
// which only stores files) do not link the HTML parser,
// golang.org/x/net/html.
package html

import (
	"context"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/saap-go/agent/files"
)

// ContentType is the type this package reads.
const ContentType = "text/html"

func init() { files.Register(ContentType, Read) }

// Read is the files.ReaderFunc of HTML: the document's visible text.
// Scripts, styles and other non-content elements are dropped, block
// elements end lines, and runs of white space collapse to one; reading
// stops once maxBytes of text are in (<= 0: all).
func Read(_ context.Context, _ files.Info, r io.Reader, maxBytes int) (string, error) {
	z := html.NewTokenizer(r)
	var b strings.Builder
	skip := 0 // depth inside elements whose text is not content
	space := false
	for {
		if maxBytes > 0 && b.Len() > maxBytes {
			break
		}
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if z.Err() == io.EOF {
				return strings.TrimSpace(b.String()), nil
			}
			return "", z.Err()
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch a {
			case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Head, atom.Svg, atom.Iframe, atom.Object:
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
				}
				continue
			}
			if block[a] || a == atom.Br {
				if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
					b.WriteByte('\n')
				}
				space = false
			}
		case html.TextToken:
			if skip > 0 {
				continue
			}
			t := z.Text()
			if len(t) > 0 && isSpace(t[0]) {
				space = true
			}
			for i, f := range strings.Fields(string(t)) {
				if (i > 0 || space) && b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
					b.WriteByte(' ')
				}
				b.WriteString(f)
				space = false
			}
			if len(t) > 0 && isSpace(t[len(t)-1]) {
				space = true
			}
		}
	}
	return strings.TrimSpace(b.String()), nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' }

// block are the elements that start a new line of text.
var block = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Li: true, atom.Tr: true, atom.H1: true, atom.H2: true, atom.H3: true,
	atom.H4: true, atom.H5: true, atom.H6: true, atom.Pre: true, atom.Blockquote: true, atom.Section: true,
	atom.Article: true, atom.Header: true, atom.Footer: true, atom.Table: true, atom.Ul: true, atom.Ol: true,
	atom.Dt: true, atom.Dd: true, atom.Hr: true, atom.Title: true,
}
