package event

import (
	"encoding/json"
	"reflect"
	"slices"
)

// Block is one content block of a ChatMessage, discriminated on the wire
// by block_type. Unknown block types are kept as *RawBlock.
type Block interface {
	// BlockType returns the wire discriminator ("text", "image", ...).
	BlockType() string
}

// TextBlock is a text block.
type TextBlock struct {
	Text string `json:"text"`
}

// ImageBlock is an image, inline (Image) or by URL or path.
type ImageBlock struct {
	Image         Bytes   `json:"image"`
	Path          *string `json:"path"`
	URL           *string `json:"url"`
	ImageMimetype *string `json:"image_mimetype"`
	Detail        *string `json:"detail"`
}

// AudioBlock is audio, inline (Audio) or by URL or path.
type AudioBlock struct {
	Audio  Bytes   `json:"audio"`
	Path   *string `json:"path"`
	URL    *string `json:"url"`
	Format *string `json:"format"`
}

// VideoBlock is a video, inline or by URL or path.
type VideoBlock struct {
	Video         Bytes    `json:"video"`
	Path          *string  `json:"path"`
	URL           *string  `json:"url"`
	VideoMimetype *string  `json:"video_mimetype"`
	Detail        *string  `json:"detail"`
	FPS           *float64 `json:"fps"`
}

// DocumentBlock is a document, inline (Data) or by URL or path.
type DocumentBlock struct {
	Data             Bytes   `json:"data"`
	Path             *string `json:"path"`
	URL              *string `json:"url"`
	Title            *string `json:"title"`
	DocumentMimetype *string `json:"document_mimetype"`
}

// CacheControl is the cache setting of a CacheBlock.
type CacheControl struct {
	Type string  `json:"type"`
	TTL  *string `json:"ttl"`
}

// CacheBlock marks a cache point for providers that support prompt caching.
type CacheBlock struct {
	CacheControl CacheControl `json:"cache_control"`
}

// CitableBlock is content that a model may cite.
type CitableBlock struct {
	Title   string            `json:"title"`
	Source  string            `json:"source"`
	Content []json.RawMessage `json:"content"`
}

// CitationBlock is a citation a model produced.
type CitationBlock struct {
	CitedContent           json.RawMessage            `json:"cited_content"`
	Source                 string                     `json:"source"`
	Title                  string                     `json:"title"`
	AdditionalLocationInfo map[string]json.RawMessage `json:"additional_location_info"`
}

// RawBlock keeps a block of a type this SDK does not know, as received.
type RawBlock struct {
	Type string          // block_type as received
	Raw  json.RawMessage // the whole block object
}

// BlockType implements Block.
func (*TextBlock) BlockType() string { return "text" }

// BlockType implements Block.
func (*ImageBlock) BlockType() string { return "image" }

// BlockType implements Block.
func (*AudioBlock) BlockType() string { return "audio" }

// BlockType implements Block.
func (*VideoBlock) BlockType() string { return "video" }

// BlockType implements Block.
func (*DocumentBlock) BlockType() string { return "document" }

// BlockType implements Block.
func (*CacheBlock) BlockType() string { return "cache" }

// BlockType implements Block.
func (*CitableBlock) BlockType() string { return "citable" }

// BlockType implements Block.
func (*CitationBlock) BlockType() string { return "citation" }

// BlockType implements Block.
func (b *RawBlock) BlockType() string { return b.Type }

var (
	blockIface = reflect.TypeFor[Block]()
	blocksType = reflect.TypeFor[[]Block]()
	rawMapType = reflect.TypeFor[map[string]json.RawMessage]()
	blockTypes = map[string]reflect.Type{
		"text":     reflect.TypeFor[TextBlock](),
		"image":    reflect.TypeFor[ImageBlock](),
		"audio":    reflect.TypeFor[AudioBlock](),
		"video":    reflect.TypeFor[VideoBlock](),
		"document": reflect.TypeFor[DocumentBlock](),
		"cache":    reflect.TypeFor[CacheBlock](),
		"citable":  reflect.TypeFor[CitableBlock](),
		"citation": reflect.TypeFor[CitationBlock](),
	}
)

func valueOfPtr(p any) reflect.Value { return reflect.ValueOf(p).Elem() }

// blockCodec decodes the Block interface by block_type.
func blockCodec() *codec {
	return &codec{
		dec: func(d *decoder, v reflect.Value) error {
			if d.null() {
				v.Set(reflect.Zero(blockIface))
				return nil
			}
			start := d.pos
			raw, err := d.skip()
			if err != nil {
				return err
			}
			end := d.pos
			// Find block_type first: it may come after the other keys. The
			// decoder itself reads it, so that no second decoder escapes.
			d.pos = start
			var kind string
			var t reflect.Type
			ok := false
			err = d.object(func(key []byte) error {
				if string(key) == "block_type" && d.peek() == '"' {
					b, err := d.stringBytes()
					if t, ok = blockTypes[string(b)]; !ok {
						kind = string(b)
					}
					return err
				}
				_, err := d.skip()
				return err
			})
			if err != nil {
				return err
			}
			if !ok {
				d.pos = end
				v.Set(reflect.ValueOf(&RawBlock{Type: kind, Raw: slices.Clone(raw)}))
				return nil
			}
			p := reflect.New(t)
			plan, err := planFor(t)
			if err != nil {
				return err
			}
			d.pos = start
			if err := d.structValue(plan, p.Elem()); err != nil {
				return err
			}
			v.Set(p)
			return nil
		},
		enc: func(e *encoder, v reflect.Value) error {
			if v.IsNil() {
				e.buf = append(e.buf, "null"...)
				return nil
			}
			b := v.Interface().(Block)
			if rb, ok := b.(*RawBlock); ok {
				if len(rb.Raw) == 0 {
					e.buf = append(e.buf, "null"...)
				} else {
					e.buf = append(e.buf, rb.Raw...)
				}
				return nil
			}
			x := v.Elem()
			if x.Kind() == reflect.Pointer {
				x = x.Elem()
			}
			plan, err := planFor(x.Type())
			if err != nil {
				return err
			}
			e.buf = append(e.buf, `{"block_type": `...)
			e.buf = appendString(e.buf, b.BlockType())
			if err := e.fields(plan, x, true); err != nil {
				return err
			}
			e.buf = append(e.buf, '}')
			return nil
		},
	}
}

var strPtrType = reflect.TypeFor[*string]()

func reflectType[T any]() reflect.Type { return reflect.TypeFor[T]() }
