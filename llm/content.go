package llm

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"

	"github.com/saap-go/agent/event"
)

// FromEventBlocks converts the blocks of a protocol chat message (a
// UserMessageEvent's messages) into content blocks: text, images and
// documents, inline or by URL, in order; consecutive text blocks are
// joined, as the message's Content joins them. A data: URL becomes inline
// data, and inline data without a MIME type gets the sniffed one. Blocks
// a model does not take here (audio, video, cache marks, citations,
// unknown kinds, a local path the agent cannot read) are left out; the
// second result counts them.
func FromEventBlocks(blocks []event.Block) ([]Block, int) {
	out := make([]Block, 0, len(blocks))
	skipped := 0
	for _, b := range blocks {
		var lb Block
		switch x := b.(type) {
		case *event.TextBlock:
			if n := len(out); n > 0 && out[n-1].Kind == BlockText {
				out[n-1].Text += x.Text
			} else {
				out = append(out, Text(x.Text))
			}
			continue
		case *event.ImageBlock:
			lb = media(BlockImage, x.Image, x.URL, x.ImageMimetype)
		case *event.DocumentBlock:
			lb = media(BlockDocument, x.Data, x.URL, x.DocumentMimetype)
			if x.Title != nil {
				lb.Title = *x.Title
			}
		default:
			skipped++
			continue
		}
		if lb.URL == "" && len(lb.Data) == 0 {
			skipped++
			continue
		}
		out = append(out, lb)
	}
	return out, skipped
}

func media(kind BlockKind, data []byte, u, mime *string) Block {
	b := Block{Kind: kind, Data: data}
	if mime != nil {
		b.MediaType = *mime
	}
	if len(data) == 0 && u != nil {
		b.URL = *u
		if d, mt, ok := dataURL(b.URL); ok {
			b.URL, b.Data = "", d
			b.MediaType = cmpOr(b.MediaType, mt)
		}
	}
	if len(b.Data) > 0 && b.MediaType == "" {
		b.MediaType = strings.TrimSuffix(http.DetectContentType(b.Data), "; charset=utf-8")
	}
	return b
}

// dataURL decodes a base64 data: URL.
func dataURL(s string) (data []byte, mediaType string, ok bool) {
	rest, found := strings.CutPrefix(s, "data:")
	if !found {
		return nil, "", false
	}
	meta, payload, found := strings.Cut(rest, ",")
	if !found {
		return nil, "", false
	}
	mt, isBase64 := strings.CutSuffix(meta, ";base64")
	if !isBase64 {
		text, err := url.PathUnescape(payload)
		if err != nil {
			return nil, "", false
		}
		return []byte(text), mt, true
	}
	d, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return nil, "", false
	}
	return d, mt, true
}

// EventBlocks converts content blocks into the blocks of a protocol chat
// message: text, images and documents (inline data as bytes with its MIME
// type, else the URL). Tool uses, tool results and thinking have no
// block there and are left out.
func EventBlocks(blocks []Block) []event.Block {
	out := make([]event.Block, 0, len(blocks))
	for _, b := range blocks {
		switch b.Kind {
		case BlockText:
			out = append(out, &event.TextBlock{Text: b.Text})
		case BlockImage:
			ib := &event.ImageBlock{}
			ib.Image, ib.URL, ib.ImageMimetype = mediaFields(b)
			out = append(out, ib)
		case BlockDocument:
			db := &event.DocumentBlock{}
			db.Data, db.URL, db.DocumentMimetype = mediaFields(b)
			if b.Title != "" {
				db.Title = event.Str(b.Title)
			}
			out = append(out, db)
		}
	}
	return out
}

func mediaFields(b Block) (event.Bytes, *string, *string) {
	var u, mt *string
	if b.URL != "" {
		u = event.Str(b.URL)
	}
	if b.MediaType != "" {
		mt = event.Str(b.MediaType)
	}
	if len(b.Data) > 0 {
		return event.Bytes(b.Data), nil, mt
	}
	return nil, u, mt
}
