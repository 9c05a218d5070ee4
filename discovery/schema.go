package discovery

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/invopop/jsonschema"

	"github.com/saap-go/agent/event"
)

// Schema returns the JSON Schema of the Go type t as pydantic v2's
// model_json_schema() writes it for the equivalent model, in validation
// mode, which is what the reference's API turns back into models (jambo's
// SchemaConverter):
//
//   - the root is the struct itself with a "title" (the event's wire name
//     or the Go type name); nested structs are "$defs" entries referenced as
//     {"$ref": "#/$defs/Name"};
//   - every property has a pydantic-style "title" ("http_status_code" →
//     "Http Status Code") except a bare reference to a model;
//   - a nullable field is {"anyOf": [<schema>, {"type": "null"}], "default": null};
//   - "required" lists the required fields; defaults appear as "default";
//   - event types allow additional properties (the reference's
//     extra="allow"); computed keys such as _event_name never appear.
//
// Fields follow the event package's tag conventions: `event:"required"`
// marks a required field, `event:"default=<json or text>"` its default. An
// untagged pointer, slice, map or interface field is optional and nullable
// (X | None = None); another untagged field is required, except the event
// envelope (event_id, created_at) and fields tagged omitempty. A
// `description:"..."` tag becomes the property's description.
func Schema(t reflect.Type) (map[string]json.RawMessage, error) {
	return schemaOf(t, reflect.Value{})
}

// ConfigSchema returns the JSON Schema of a configuration type, whose
// value defaults gives every top-level field its default: no field is
// required and each property carries "default" (pydantic's view of a
// settings model whose fields all have defaults). Pointer fields are
// nullable.
//
// Discovery responses are read by every client of the bus, so secrets must
// not leak through defaults: a field tagged `secret:"true"`, or whose JSON
// name has a word ending in "password", "secret" or "token" ("auth_token",
// "db_password"; not "max_tokens") or contains "api_key"/"apikey", gets no
// default and is marked "writeOnly". (pydantic also writes "format":
// "password" for a SecretStr, which some versions of the API's jambo
// converter reject as an unknown format, so it is left out.)
func ConfigSchema(defaults any) (map[string]json.RawMessage, error) {
	if defaults == nil {
		return map[string]json.RawMessage{}, nil
	}
	v := reflect.ValueOf(defaults)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, fmt.Errorf("discovery: config defaults are a nil %v", v.Type())
		}
		v = v.Elem()
	}
	return schemaOf(v.Type(), v)
}

func schemaOf(t reflect.Type, defaults reflect.Value) (out map[string]json.RawMessage, err error) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("discovery: schema of %v: only struct types have a model schema", t)
	}
	defer func() {
		// The reflector panics on types JSON cannot express (channels,
		// functions, complex numbers): report them as an error.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("discovery: schema of %v: %v", t, r)
		}
	}()
	g := newGenerator()
	g.config = defaults.IsValid()
	s := g.generate(t, defaults)
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("discovery: schema of %v: %w", t, err)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("discovery: schema of %v: %w", t, err)
	}
	return out, nil
}

var (
	typeLocale   = reflect.TypeFor[event.LocaleString]()
	typeFeature  = reflect.TypeFor[event.ChatFeature]()
	typeBlock    = reflect.TypeFor[event.Block]()
	typeEvent    = reflect.TypeFor[event.Event]()
	typeRaw      = reflect.TypeFor[json.RawMessage]()
	typeBytes    = reflect.TypeFor[event.Bytes]()
	typeTime     = reflect.TypeFor[time.Time]()
	typeBase     = reflect.TypeFor[event.Base]()
	typeMessage  = reflect.TypeFor[event.ChatMessage]()
	typeRawBlock = reflect.TypeFor[event.RawBlock]()
)

// blockTypes are the content blocks of a ChatMessage, in the order of the
// llama-index union.
var blockTypes = []reflect.Type{
	reflect.TypeFor[event.TextBlock](),
	reflect.TypeFor[event.ImageBlock](),
	reflect.TypeFor[event.AudioBlock](),
	reflect.TypeFor[event.VideoBlock](),
	reflect.TypeFor[event.DocumentBlock](),
	reflect.TypeFor[event.CacheBlock](),
	reflect.TypeFor[event.CitableBlock](),
	reflect.TypeFor[event.CitationBlock](),
}

// fieldDefaults are defaults of value types whose Go fields carry no tags
// because their codec is custom (llama-index's ChatMessage). An empty
// string is a default_factory: optional, and no default in the schema.
var fieldDefaults = map[reflect.Type]map[string]string{
	typeMessage: {"role": `"user"`, "additional_kwargs": "", "blocks": ""},
}

type generator struct {
	names   map[reflect.Type]string
	types   map[string]reflect.Type
	custom  map[string]*jsonschema.Schema
	pending []reflect.Type
	// config: untagged fields of nested types have defaults (they are parts
	// of a configuration value), so none is required.
	config bool
}

func newGenerator() *generator {
	return &generator{
		names:  map[reflect.Type]string{},
		types:  map[string]reflect.Type{},
		custom: map[string]*jsonschema.Schema{},
	}
}

func (g *generator) reflector(expanded bool) *jsonschema.Reflector {
	return &jsonschema.Reflector{
		Anonymous:                  true,
		ExpandedStruct:             expanded,
		AllowAdditionalProperties:  true,
		RequiredFromJSONSchemaTags: true,
		Namer:                      g.name,
		Mapper:                     g.mapper,
	}
}

func (g *generator) generate(t reflect.Type, defaults reflect.Value) *jsonschema.Schema {
	root := g.reflector(true).ReflectFromType(t)
	defs := root.Definitions
	if defs == nil {
		defs = jsonschema.Definitions{}
	}
	// Types the mapper referred to (the content blocks) get definitions of
	// their own.
	for len(g.pending) > 0 {
		pt := g.pending[0]
		g.pending = g.pending[1:]
		if _, done := defs[g.name(pt)]; done {
			continue
		}
		sub := g.reflector(false).ReflectFromType(pt)
		for k, v := range sub.Definitions {
			if _, ok := defs[k]; !ok {
				defs[k] = v
			}
		}
	}
	for k, v := range g.custom {
		defs[k] = v
	}
	for name, def := range defs {
		if _, custom := g.custom[name]; custom {
			continue
		}
		if dt, ok := g.types[name]; ok && dt.Kind() == reflect.Struct && def.Properties != nil {
			g.fixStruct(def, dt, reflect.Value{})
		}
	}
	g.fixStruct(root, t, defaults)
	root.Version = ""
	root.ID = ""
	root.Definitions = nil
	if len(defs) > 0 {
		root.Definitions = defs
	}
	return root
}

// name is the reflector's Namer: the wire name for registered events, the
// Go name otherwise, made unique and restricted to characters that are
// safe in a JSON pointer.
func (g *generator) name(t reflect.Type) string {
	if n, ok := g.names[t]; ok {
		return n
	}
	if t.Kind() == reflect.Pointer {
		return "" // the reflector names the element type instead
	}
	n := t.Name()
	if et, ok := event.TypeByGo(t); ok {
		n = et.Name
	}
	n = strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '_'
	}, n)
	if n == "" || strings.Trim(n, "_") == "" {
		return "" // anonymous: inlined
	}
	base := n
	for i := 2; ; i++ {
		if other, taken := g.types[n]; !taken || other == t {
			break
		}
		n = fmt.Sprintf("%s%d", base, i)
	}
	g.names[t] = n
	g.types[n] = t
	return n
}

func (g *generator) ref(name string) *jsonschema.Schema {
	return &jsonschema.Schema{Ref: "#/$defs/" + name}
}

// any is pydantic's schema of Any: an empty object (not "true").
func anySchema() *jsonschema.Schema { return &jsonschema.Schema{Extras: map[string]any{}} }

// mapper gives the types with custom codecs the schema of their wire form.
func (g *generator) mapper(t reflect.Type) *jsonschema.Schema {
	switch t {
	case typeLocale:
		if _, ok := g.custom["LocaleString"]; !ok {
			props := jsonschema.NewProperties()
			for _, k := range []string{"de", "en", "fr", "it"} {
				props.Set(k, &jsonschema.Schema{
					AnyOf:   []*jsonschema.Schema{{Type: "string"}, {Type: "null"}},
					Default: json.RawMessage("null"),
					Title:   pyTitle(k),
				})
			}
			g.custom["LocaleString"] = &jsonschema.Schema{Type: "object", Title: "LocaleString", Properties: props}
			g.types["LocaleString"] = t
			g.names[t] = "LocaleString"
		}
		return g.ref("LocaleString")
	case typeFeature:
		if _, ok := g.custom["ChatFeature"]; !ok {
			g.custom["ChatFeature"] = &jsonschema.Schema{
				Type:  "string",
				Title: "ChatFeature",
				Enum:  []any{string(event.FeatureWebSearch), string(event.FeatureCodeInterpreter), string(event.FeatureImageGeneration)},
			}
			g.types["ChatFeature"] = t
			g.names[t] = "ChatFeature"
		}
		return g.ref("ChatFeature")
	case typeBlock:
		s := &jsonschema.Schema{}
		for _, bt := range blockTypes {
			s.AnyOf = append(s.AnyOf, g.ref(g.name(bt)))
			g.pending = append(g.pending, bt)
		}
		return s
	case typeEvent:
		return &jsonschema.Schema{Type: "object", AdditionalProperties: jsonschema.TrueSchema}
	case typeRaw:
		return anySchema()
	case typeBytes:
		return &jsonschema.Schema{Type: "string", Format: "binary"}
	case typeTime:
		return &jsonschema.Schema{Type: "string", Format: "date-time"}
	case typeRawBlock:
		return &jsonschema.Schema{Type: "object", AdditionalProperties: jsonschema.TrueSchema}
	}
	switch t.Kind() {
	case reflect.Interface:
		return anySchema()
	case reflect.Map:
		if e := t.Elem(); e == typeRaw || e.Kind() == reflect.Interface {
			return &jsonschema.Schema{Type: "object", AdditionalProperties: jsonschema.TrueSchema}
		}
	}
	return nil
}

// fieldInfo is one JSON field of a struct, as encoding/json flattens it.
type fieldInfo struct {
	name     string
	typ      reflect.Type
	required bool
	def      []byte // default JSON, nil if none
	omit     bool   // json omitempty
	tagged   bool   // has an event tag
	desc     string
	envelope bool // event_id or created_at of event.Base
	secret   bool // tagged secret:"true"
	index    []int
}

func structFields(t reflect.Type) []fieldInfo {
	var out []fieldInfo
	seen := map[string]int{}
	var walk func(t reflect.Type, index []int, envelope bool)
	walk = func(t reflect.Type, index []int, envelope bool) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(slices.Clone(index), i)
			if sf.Anonymous && name == "" {
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, idx, ft == typeBase)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			f := fieldInfo{name: name, typ: sf.Type, omit: strings.Contains(","+opts+",", ",omitempty,"),
				desc: sf.Tag.Get("description"), envelope: envelope, index: idx,
				secret: sf.Tag.Get("secret") == "true"}
			for opt := range strings.SplitSeq(sf.Tag.Get("event"), ",") {
				switch {
				case opt == "required":
					f.required, f.tagged = true, true
				case strings.HasPrefix(opt, "default="):
					f.def, f.tagged = defaultJSON(strings.TrimPrefix(opt, "default=")), true
				}
			}
			if j, dup := seen[name]; dup {
				if len(out[j].index) <= len(idx) {
					continue // the shallower field wins, as in encoding/json
				}
				out[j] = f
				continue
			}
			seen[name] = len(out)
			out = append(out, f)
		}
	}
	walk(t, nil, t == typeBase)
	return out
}

// defaultJSON reads a default tag as the event codec does: valid JSON stays,
// anything else is a string.
func defaultJSON(s string) []byte {
	if json.Valid([]byte(s)) {
		return []byte(s)
	}
	b, _ := json.Marshal(s)
	return b
}

func nullableKind(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return t != typeRaw
	}
	return false
}

// fixStruct turns the reflector's struct schema s of type t into pydantic's
// form. With a valid defaults value (configuration mode) every top-level
// field takes its default from it and none is required.
func (g *generator) fixStruct(s *jsonschema.Schema, t reflect.Type, defaults reflect.Value) {
	if name := g.name(t); name != "" {
		s.Title = name
	} else {
		s.Title = t.Name()
	}
	s.Description = ""
	s.AdditionalProperties = nil
	if _, ok := event.TypeByGo(t); ok || t == typeBase {
		s.AdditionalProperties = jsonschema.TrueSchema // extra="allow"
	}
	var defaultsJSON map[string]json.RawMessage
	if defaults.IsValid() {
		if data, err := json.Marshal(defaults.Interface()); err == nil {
			_ = json.Unmarshal(data, &defaultsJSON)
		}
	}
	overrides := fieldDefaults[t]
	props := jsonschema.NewProperties()
	if reflect.PointerTo(t).Implements(typeBlock) && t != typeRawBlock {
		bt := reflect.New(t).Interface().(event.Block).BlockType()
		props.Set("block_type", &jsonschema.Schema{Type: "string", Const: bt, Default: bt, Title: "Block Type"})
	}
	var required []string
	for _, f := range structFields(t) {
		p, ok := s.Properties.Get(f.name)
		if !ok || p == nil {
			continue
		}
		factory := false
		if d, ok := overrides[f.name]; ok && !f.tagged {
			f.def, f.tagged, factory = []byte(d), true, d == ""
		}
		var def json.RawMessage
		req, nullable := false, false
		secret := g.config && isSecret(f)
		switch {
		case defaults.IsValid():
			if d, ok := defaultsJSON[f.name]; ok && !secret {
				def = d
				if fv, err := defaults.FieldByIndexErr(f.index); err == nil && f.typ == typeLocale {
					def = localeJSON(fv.Interface().(event.LocaleString))
				}
			}
			nullable = f.typ.Kind() == reflect.Pointer || f.typ.Kind() == reflect.Interface
		case f.required:
			req = true
		case factory:
		case f.def != nil:
			def = f.def
			nullable = f.typ.Kind() == reflect.Pointer || string(f.def) == "null"
		case f.envelope, f.omit:
			nullable = nullableKind(f.typ) && !f.envelope
		case g.config:
			nullable = f.typ.Kind() == reflect.Pointer || f.typ.Kind() == reflect.Interface
		case f.typ == typeRaw:
			def = json.RawMessage("null") // Any = None
		case nullableKind(f.typ):
			nullable, def = true, json.RawMessage("null")
		default:
			req = true
		}
		if secret {
			markSecret(p)
		}
		props.Set(f.name, property(p, f, def, nullable))
		if req {
			required = append(required, f.name)
		}
	}
	s.Properties = props
	s.Required = required
}

// property builds the final schema of one field from the reflected one.
func property(p *jsonschema.Schema, f fieldInfo, def json.RawMessage, nullable bool) *jsonschema.Schema {
	inner := p
	if p.Ref == "" && len(p.AnyOf) == 0 && len(p.OneOf) == 0 && len(p.AllOf) == 0 && p.Type == "" && len(p.Extras) == 0 && p.Items == nil && p.Properties == nil && p.Const == nil && len(p.Enum) == 0 {
		inner = anySchema() // Any
	}
	title := pyTitle(f.name)
	if nullable && !isNullSchema(inner) {
		out := &jsonschema.Schema{AnyOf: []*jsonschema.Schema{inner, {Type: "null"}}}
		if def == nil {
			def = json.RawMessage("null")
		}
		out.Default = def
		if inner.Ref == "" {
			out.Title = title
		}
		out.Description = f.desc
		return out
	}
	if def != nil {
		inner.Default = def
	}
	if inner.Ref == "" {
		inner.Title = title
	}
	if f.desc != "" {
		inner.Description = f.desc
	}
	if len(inner.Extras) == 0 && inner.Extras != nil && (inner.Title != "" || inner.Default != nil || inner.Description != "") {
		inner.Extras = nil
	}
	return inner
}

func isNullSchema(s *jsonschema.Schema) bool { return s.Type == "null" }

// isSecret reports whether a configuration field holds a secret: tagged
// secret:"true", or named with the word password, secret or token, or
// api_key / apikey. Counts such as max_tokens are not secrets.
func isSecret(f fieldInfo) bool {
	if f.secret {
		return true
	}
	n := strings.ToLower(f.name)
	if strings.Contains(n, "api_key") || strings.Contains(n, "apikey") {
		return true
	}
	for w := range strings.FieldsFuncSeq(n, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		switch w {
		case "password", "passwd", "secret", "token", "apikey":
			return true
		}
		if strings.HasSuffix(w, "password") || strings.HasSuffix(w, "secret") || strings.HasSuffix(w, "token") {
			return true // dbpassword, clientsecret, accesstoken
		}
	}
	return false
}

// markSecret marks a secret's schema write-only.
func markSecret(p *jsonschema.Schema) { p.WriteOnly = true }

// pyTitle is pydantic's field title: name.title().replace('_', ' ').
func pyTitle(name string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range name {
		switch {
		case unicode.IsLetter(r):
			if prevCased {
				b.WriteRune(unicode.ToLower(r))
			} else {
				b.WriteRune(unicode.ToUpper(r))
			}
			prevCased = true
		case r == '_':
			b.WriteByte(' ')
			prevCased = false
		default:
			b.WriteRune(r)
			prevCased = false
		}
	}
	return strings.TrimSpace(b.String())
}

// localeJSON writes a LocaleString as it travels: the four locales, null
// for an empty one.
func localeJSON(l event.LocaleString) json.RawMessage {
	text := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	data, _ := json.Marshal(object{{"de", text(l.De)}, {"en", text(l.En)}, {"fr", text(l.Fr)}, {"it", text(l.It)}})
	return data
}
