package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// codec decodes into and encodes from values of one Go type. Codecs are
// built once per type (reflection at build time, cached plans at run time).
type codec struct {
	dec func(d *decoder, v reflect.Value) error // v is settable
	enc func(e *encoder, v reflect.Value) error
}

// laxCodec is implemented by value types of this package that read and
// write themselves (ChatMessage, LocaleString, ...).
type laxCodec interface {
	decodeLax(d *decoder) error
	encodeLax(e *encoder) error
}

type field struct {
	name     string
	key      []byte // `"name":`
	index    []int
	typ      reflect.Type
	c        *codec
	required bool
	def      []byte // default as JSON text, nil for none
	omit     bool   // omitempty
	aliases  []string
	// zero is written instead of the value when the value is the Go zero
	// value and the reference's default differs from what that zero value
	// encodes to (500, "aihub", [] instead of 0, "", null). Nil for none.
	zero []byte
	// fill, for a pointer to a struct, is that struct's plan with defaults
	// for some of its fields: a set value gets its zero fields filled.
	fill    *structPlan
	literal *string  // the one value the field may hold (a Literal tag)
	oneOf   []string // the values a string field may hold (tag oneof=a|b)
}

type structPlan struct {
	fields      []field
	byName      map[string]int
	displayName int // index of display_name in fields, -1 if none
	displayDesc int
}

// knownStrings are values that most events carry (locales, chat roles,
// the default model name): decoding one shares the string instead of
// allocating. A lookup by string(b) does not allocate.
var knownStrings = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{
		"de", "en", "fr", "it",
		RoleSystem, RoleDeveloper, RoleUser, RoleAssistant, RoleFunction, RoleTool, RoleChatbot, RoleModel,
		"aihub",
	} {
		m[s] = s
	}
	return m
}()

// emptyArray backs decoded empty lists: non-nil, no allocation.
var emptyArray [0]byte

var (
	codecMu  sync.Mutex
	codecs   sync.Map // reflect.Type → *codec
	plans    sync.Map // reflect.Type → *structPlan
	building = map[reflect.Type]*codec{}

	eventIface  = reflect.TypeFor[Event]()
	anyIface    = reflect.TypeFor[any]()
	rawType     = reflect.TypeFor[json.RawMessage]()
	numberType  = reflect.TypeFor[json.Number]()
	timeType    = reflect.TypeFor[time.Time]()
	baseType    = reflect.TypeFor[Base]()
	laxType     = reflect.TypeFor[laxCodec]()
	jsonUnmType = reflect.TypeFor[json.Unmarshaler]()
	jsonMarType = reflect.TypeFor[json.Marshaler]()
)

func valueOf(e Event) reflect.Value         { return reflect.ValueOf(e) }
func newValue(t reflect.Type) reflect.Value { return reflect.New(t) }

// codecFor returns the cached codec of t, building it on first use.
func codecFor(t reflect.Type) (*codec, error) {
	if c, ok := codecs.Load(t); ok {
		return c.(*codec), nil
	}
	codecMu.Lock()
	defer codecMu.Unlock()
	return buildCodec(t)
}

func mustCodec(t reflect.Type) *codec {
	c, err := codecFor(t)
	if err != nil {
		panic(err)
	}
	return c
}

// buildCodec must be called with codecMu held.
func buildCodec(t reflect.Type) (*codec, error) {
	if c, ok := codecs.Load(t); ok {
		return c.(*codec), nil
	}
	if c, ok := building[t]; ok {
		return c, nil // recursive type: filled in when its build finishes
	}
	c := &codec{}
	building[t] = c
	defer delete(building, t)
	if err := fillCodec(c, t); err != nil {
		return nil, err
	}
	codecs.Store(t, c)
	return c, nil
}

func isEventStruct(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t != baseType && reflect.PointerTo(t).Implements(eventIface)
}

func fillCodec(c *codec, t reflect.Type) error {
	switch {
	case t == blockIface:
		*c = *blockCodec()
		return nil
	case reflect.PointerTo(t).Implements(laxType):
		c.dec = func(d *decoder, v reflect.Value) error { return v.Addr().Interface().(laxCodec).decodeLax(d) }
		c.enc = func(e *encoder, v reflect.Value) error {
			if v.CanAddr() {
				return v.Addr().Interface().(laxCodec).encodeLax(e)
			}
			p := reflect.New(t)
			p.Elem().Set(v)
			return p.Interface().(laxCodec).encodeLax(e)
		}
		return nil
	case t == rawType:
		c.dec = func(d *decoder, v reflect.Value) error {
			raw, err := d.skip()
			if err != nil {
				return err
			}
			v.SetBytes(slices.Clone(raw))
			return nil
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			b := v.Bytes()
			if len(b) == 0 {
				e.buf = append(e.buf, "null"...)
				return nil
			}
			e.buf = append(e.buf, b...)
			return nil
		}
		return nil
	case t == numberType:
		c.dec = func(d *decoder, v reflect.Value) error {
			if d.null() {
				v.SetString("")
				return nil
			}
			raw, _, err := d.number()
			if err != nil {
				return err
			}
			v.SetString(string(raw))
			return nil
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			s := v.String()
			if s == "" {
				s = "0"
			}
			e.buf = append(e.buf, s...)
			return nil
		}
		return nil
	case t == timeType:
		c.dec = func(d *decoder, v reflect.Value) error {
			if d.null() {
				v.Set(reflect.Zero(t))
				return nil
			}
			s, err := d.stringBytes()
			if err != nil {
				return err
			}
			tm, err := ParseTime(string(s))
			if err != nil {
				return d.errf(ErrType, "%v", err)
			}
			v.Set(reflect.ValueOf(tm))
			return nil
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			tm := v.Interface().(time.Time)
			if tm.IsZero() {
				e.buf = append(e.buf, "null"...)
				return nil
			}
			e.buf = appendString(e.buf, FormatTime(tm))
			return nil
		}
		return nil
	case t == eventIface || t.Kind() == reflect.Pointer && isEventStruct(t.Elem()):
		// A field typed Event falls back to any registered type; a
		// concrete event pointer asks for that type.
		var want reflect.Type
		if t != eventIface {
			want = t.Elem()
		}
		c.dec = func(d *decoder, v reflect.Value) error {
			if d.null() {
				v.Set(reflect.Zero(t))
				return nil
			}
			ev, err := d.nestedEvent(want)
			if err != nil {
				return err
			}
			v.Set(reflect.ValueOf(ev))
			return nil
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			if v.IsNil() {
				e.buf = append(e.buf, "null"...)
				return nil
			}
			return e.event(v.Interface().(Event))
		}
		return nil
	case isEventStruct(t):
		c.dec = func(d *decoder, v reflect.Value) error {
			if d.null() {
				v.Set(reflect.Zero(t))
				return nil
			}
			ev, err := d.nestedEvent(t)
			if err != nil {
				return err
			}
			v.Set(reflect.ValueOf(ev).Elem())
			return nil
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			p := reflect.New(t)
			p.Elem().Set(v)
			return e.event(p.Interface().(Event))
		}
		return nil
	case t == anyIface:
		c.dec = func(d *decoder, v reflect.Value) error {
			x, err := d.anyValue()
			if err != nil {
				return err
			}
			if x == nil {
				v.Set(reflect.Zero(t))
			} else {
				v.Set(reflect.ValueOf(x))
			}
			return nil
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			if v.IsNil() {
				e.buf = append(e.buf, "null"...)
				return nil
			}
			x := v.Elem()
			xc, err := codecFor(x.Type())
			if err != nil {
				return err
			}
			return xc.enc(e, x)
		}
		return nil
	case reflect.PointerTo(t).Implements(jsonUnmType) && t.Implements(jsonMarType):
		c.dec = func(d *decoder, v reflect.Value) error {
			raw, err := d.skip()
			if err != nil {
				return err
			}
			if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(raw); err != nil {
				return d.errf(ErrType, "%v", err)
			}
			return nil
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			b, err := v.Interface().(json.Marshaler).MarshalJSON()
			if err != nil {
				return err
			}
			e.buf = append(e.buf, b...)
			return nil
		}
		return nil
	}

	switch t.Kind() {
	case reflect.Bool:
		c.dec = func(d *decoder, v reflect.Value) error {
			switch d.peek() {
			case 't':
				if d.literal("true") {
					v.SetBool(true)
					return nil
				}
			case 'f':
				if d.literal("false") {
					v.SetBool(false)
					return nil
				}
			case 'n':
				if d.literal("null") {
					v.SetBool(false)
					return nil
				}
			}
			return d.errf(ErrType, "expected boolean, got %s", d.kindName())
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			if v.Bool() {
				e.buf = append(e.buf, "true"...)
			} else {
				e.buf = append(e.buf, "false"...)
			}
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		c.dec = func(d *decoder, v reflect.Value) error {
			if d.null() {
				v.SetInt(0)
				return nil
			}
			n, err := d.integer(bits)
			if err != nil {
				return err
			}
			v.SetInt(n)
			return nil
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			e.buf = appendInt(e.buf, v.Int())
			return nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		bits := t.Bits()
		c.dec = func(d *decoder, v reflect.Value) error {
			if d.null() {
				v.SetUint(0)
				return nil
			}
			n, err := d.integer(64)
			if err != nil {
				return err
			}
			if n < 0 || (bits < 64 && n >= 1<<bits) {
				return d.errf(ErrType, "%d out of range for %v", n, t)
			}
			v.SetUint(uint64(n))
			return nil
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			e.buf = fmtAppendUint(e.buf, v.Uint())
			return nil
		}
	case reflect.Float32, reflect.Float64:
		c.dec = func(d *decoder, v reflect.Value) error {
			if d.null() {
				v.SetFloat(0)
				return nil
			}
			f, err := d.float()
			if err != nil {
				return err
			}
			v.SetFloat(f)
			return nil
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			e.buf = appendFloat(e.buf, v.Float())
			return nil
		}
	case reflect.String:
		c.dec = func(d *decoder, v reflect.Value) error {
			if d.null() {
				v.SetString("")
				return nil
			}
			b, err := d.stringBytes()
			if err != nil {
				return err
			}
			if s, ok := knownStrings[string(b)]; ok {
				v.SetString(s)
				return nil
			}
			v.SetString(string(b))
			return nil
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			e.buf = appendString(e.buf, v.String())
			return nil
		}
	case reflect.Pointer:
		ec, err := buildCodec(t.Elem())
		if err != nil {
			return err
		}
		et := t.Elem()
		c.dec = func(d *decoder, v reflect.Value) error {
			if d.null() {
				v.Set(reflect.Zero(t))
				return nil
			}
			if v.IsNil() {
				v.Set(reflect.New(et))
			}
			return ec.dec(d, v.Elem())
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			if v.IsNil() {
				e.buf = append(e.buf, "null"...)
				return nil
			}
			return ec.enc(e, v.Elem())
		}
	case reflect.Slice:
		ec, err := buildCodec(t.Elem())
		if err != nil {
			return err
		}
		c.dec = func(d *decoder, v reflect.Value) error {
			if d.null() {
				v.Set(reflect.Zero(t))
				return nil
			}
			if err := d.arrBegin(); err != nil {
				return err
			}
			// An empty list is non-nil without an allocation; a list is
			// sized once, by counting its items first.
			v.SetZero()
			*(*unsafe.Pointer)(v.Addr().UnsafePointer()) = unsafe.Pointer(&emptyArray)
			if items := d.countItems(); items > 0 {
				v.Grow(items)
			}
			for n := 0; ; n++ {
				more, err := d.arrNext(n)
				if err != nil {
					return err
				}
				if !more {
					return nil
				}
				v.Grow(1)
				v.SetLen(n + 1)
				path, missing := len(d.path), len(d.missing)
				if err := ec.dec(d, v.Index(n)); err != nil {
					return d.indexError(err, path, n)
				}
				if len(d.missing) > missing {
					d.indexMissing(path, missing, n)
				}
			}
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			if v.IsNil() {
				e.buf = append(e.buf, "null"...)
				return nil
			}
			e.buf = append(e.buf, '[')
			for i := range v.Len() {
				if i > 0 {
					e.buf = append(e.buf, ", "...)
				}
				if err := ec.enc(e, v.Index(i)); err != nil {
					return err
				}
			}
			e.buf = append(e.buf, ']')
			return nil
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("unsupported map key type %v", t.Key())
		}
		ec, err := buildCodec(t.Elem())
		if err != nil {
			return err
		}
		kt, et := t.Key(), t.Elem()
		c.dec = func(d *decoder, v reflect.Value) error {
			if d.null() {
				v.Set(reflect.Zero(t))
				return nil
			}
			m := reflect.MakeMap(t)
			v.Set(m)
			return d.object(func(key []byte) error {
				ev := reflect.New(et).Elem()
				d.push(string(key))
				if err := ec.dec(d, ev); err != nil {
					return err
				}
				d.pop()
				m.SetMapIndex(reflect.ValueOf(string(key)).Convert(kt), ev)
				return nil
			})
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			if v.IsNil() {
				e.buf = append(e.buf, "null"...)
				return nil
			}
			keys := v.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
			e.buf = append(e.buf, '{')
			for i, k := range keys {
				if i > 0 {
					e.buf = append(e.buf, ", "...)
				}
				e.buf = appendString(e.buf, k.String())
				e.buf = append(e.buf, ": "...)
				if err := ec.enc(e, v.MapIndex(k)); err != nil {
					return err
				}
			}
			e.buf = append(e.buf, '}')
			return nil
		}
	case reflect.Struct:
		plan, err := buildPlan(t)
		if err != nil {
			return err
		}
		c.dec = func(d *decoder, v reflect.Value) error {
			if d.null() {
				v.Set(reflect.Zero(t))
				return nil
			}
			return d.structValue(plan, v)
		}
		c.enc = func(e *encoder, v reflect.Value) error {
			e.buf = append(e.buf, '{')
			if err := e.fields(plan, v, false); err != nil {
				return err
			}
			e.buf = append(e.buf, '}')
			return nil
		}
	default:
		return fmt.Errorf("unsupported type %v", t)
	}
	return nil
}

// planFor returns the field plan of a struct type.
func planFor(t reflect.Type) (*structPlan, error) {
	if p, ok := plans.Load(t); ok {
		return p.(*structPlan), nil
	}
	codecMu.Lock()
	defer codecMu.Unlock()
	return buildPlan(t)
}

// buildPlan must be called with codecMu held. Fields are collected the way
// encoding/json does: embedded structs without a json tag are inlined, a
// shallower field hides a deeper one of the same name.
func buildPlan(t reflect.Type) (*structPlan, error) {
	if p, ok := plans.Load(t); ok {
		return p.(*structPlan), nil
	}
	p := &structPlan{byName: map[string]int{}, displayName: -1, displayDesc: -1}
	depthOf := map[string]int{}
	var walk func(t reflect.Type, index []int) error
	walk = func(t reflect.Type, index []int) error {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			idx := append(slices.Clone(index), i)
			name, opts, _ := strings.Cut(tag, ",")
			if sf.Anonymous && name == "" {
				ft := sf.Type
				if ft.Kind() == reflect.Struct {
					if err := walk(ft, idx); err != nil {
						return err
					}
					continue
				}
				if !sf.IsExported() {
					continue
				}
				return fmt.Errorf("embedded %v: only struct values can be embedded", ft)
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if d, seen := depthOf[name]; seen {
				if d <= len(idx) {
					continue // the shallower field wins
				}
				j := p.byName[name]
				p.fields = slices.Delete(p.fields, j, j+1)
				for k, x := range p.fields {
					p.byName[x.name] = k
				}
			}
			fc, err := buildCodec(sf.Type)
			if err != nil {
				return fmt.Errorf("field %s: %w", name, err)
			}
			f := field{name: name, index: idx, typ: sf.Type, c: fc}
			f.key = append(appendString(nil, name), ": "...)
			f.omit = strings.Contains(opts, "omitempty")
			for opt := range strings.SplitSeq(sf.Tag.Get("event"), ",") {
				switch {
				case opt == "required":
					f.required = true
				case strings.HasPrefix(opt, "default="):
					f.def = defaultJSON(strings.TrimPrefix(opt, "default="))
				case strings.HasPrefix(opt, "oneof="):
					f.oneOf = strings.Split(strings.TrimPrefix(opt, "oneof="), "|")
				case strings.HasPrefix(opt, "alias="):
					f.aliases = append(f.aliases, strings.TrimPrefix(opt, "alias="))
				}
			}
			f.zero = zeroDefault(sf.Type, f.def, f.required)
			depthOf[name] = len(idx)
			p.byName[name] = len(p.fields)
			p.fields = append(p.fields, f)
		}
		return nil
	}
	if err := walk(t, nil); err != nil {
		return nil, err
	}
	// Keep declaration order (index order), as encoding/json does.
	slices.SortStableFunc(p.fields, func(a, b field) int { return slices.Compare(a.index, b.index) })
	for k, x := range p.fields {
		p.byName[x.name] = k
	}
	for k, x := range p.fields {
		for _, a := range x.aliases { // input-only names (pydantic aliases)
			if _, taken := p.byName[a]; !taken {
				p.byName[a] = k
			}
		}
	}
	if i, ok := p.byName["display_name"]; ok && p.fields[i].typ == reflect.TypeFor[*LocaleString]() {
		p.displayName = i
	}
	if i, ok := p.byName["display_description"]; ok && p.fields[i].typ == reflect.TypeFor[*LocaleString]() {
		p.displayDesc = i
	}
	plans.Store(t, p)
	return p, nil
}

// zeroDefault is what a field holding the Go zero value is written as,
// when that differs from the zero value's own encoding: the reference's
// default, or an empty list or object for a required list or map (the
// reference never accepts null there). Booleans keep false: it is a value a
// producer sets, not "unset".
func zeroDefault(t reflect.Type, def []byte, required bool) []byte {
	if def == nil {
		if !required || t == rawType {
			return nil
		}
		switch t.Kind() {
		case reflect.Slice:
			return []byte("[]")
		case reflect.Map:
			return []byte("{}")
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Struct:
		return nil
	case reflect.String:
		if string(def) == `""` {
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if f, err := strconv.ParseFloat(string(def), 64); err == nil && f == 0 {
			return nil
		}
	default:
		if string(def) == "null" {
			return nil
		}
	}
	return def
}

// clone copies the plan's fields, so that one event type can change its
// defaults without touching the shared plan of its Go type.
func (p *structPlan) clone() *structPlan {
	c := *p
	c.fields = slices.Clone(p.fields)
	return &c
}

// defaultJSON turns a default tag value into JSON text: valid JSON stays,
// anything else is a string.
func defaultJSON(s string) []byte {
	if json.Valid([]byte(s)) {
		return []byte(s)
	}
	return appendString(nil, s)
}

// structValue decodes an object into a value struct. Unknown members are
// dropped, as the reference's value models do.
func (d *decoder) structValue(p *structPlan, v reflect.Value) error {
	var seenBuf [64]bool
	var seen []bool
	if len(p.fields) <= len(seenBuf) {
		seen = seenBuf[:len(p.fields)]
	} else {
		seen = make([]bool, len(p.fields))
	}
	if err := d.objBegin(); err != nil {
		return err
	}
	for n := 0; ; n++ {
		key, more, err := d.objNext(n)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		i, ok := p.byName[string(key)]
		if !ok {
			if _, err := d.skip(); err != nil {
				return err
			}
			continue
		}
		f := &p.fields[i]
		seen[i] = true
		d.push(f.name)
		if err := f.c.dec(d, v.FieldByIndex(f.index)); err != nil {
			return err
		}
		d.pop()
	}
	return d.unseen(p, v, seen)
}

// unseen applies defaults and records missing required fields.
func (d *decoder) unseen(p *structPlan, v reflect.Value, seen []bool) error {
	for i, ok := range seen {
		if ok {
			continue
		}
		f := &p.fields[i]
		switch {
		case f.def != nil:
			sub := decoder{data: f.def, event: d.event, path: d.path}
			if err := f.c.dec(&sub, v.FieldByIndex(f.index)); err != nil {
				return err
			}
		case f.required:
			d.push(f.name)
			d.missing = append(d.missing, joinPath(d.path[d.base:]))
			d.pop()
		}
	}
	return nil
}

// fields writes the members of a struct, without braces.
func (e *encoder) fields(p *structPlan, v reflect.Value, comma bool) error {
	for i := range p.fields {
		f := &p.fields[i]
		fv := v.FieldByIndex(f.index)
		if f.omit && fv.IsZero() {
			continue
		}
		if comma {
			e.buf = append(e.buf, ", "...)
		}
		comma = true
		e.buf = append(e.buf, f.key...)
		if f.zero != nil && fv.IsZero() {
			e.buf = append(e.buf, f.zero...)
			continue
		}
		if err := f.c.enc(e, fv); err != nil {
			return fmt.Errorf("field %s: %w", f.name, err)
		}
	}
	return nil
}

// integer reads an integer token. An integral float token is accepted, as
// pydantic's lax mode does; NaN, infinities and fractions are not.
func (d *decoder) integer(bits int) (int64, error) {
	raw, isFloat, err := d.number()
	if err != nil {
		return 0, err
	}
	if !isFloat {
		if n, ok := parseInt(raw); ok && (bits == 64 || (n >= -1<<(bits-1) && n < 1<<(bits-1))) {
			return n, nil
		}
		return 0, d.errf(ErrType, "integer %s out of range", raw)
	}
	f, err := parseFloat(raw)
	if err != nil || f != math.Trunc(f) || math.IsInf(f, 0) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, d.errf(ErrType, "expected integer, got %s", raw)
	}
	return int64(f), nil
}

func (d *decoder) float() (float64, error) {
	raw, _, err := d.number()
	if err != nil {
		return 0, err
	}
	f, err := strconvFloat(raw)
	if err != nil && !errors.Is(err, strconv.ErrRange) { // Python reads 1e999 as inf
		return 0, d.errf(ErrType, "invalid float %s", raw)
	}
	return f, nil
}

// parseInt parses a JSON integer token without allocating.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		n = n*10 + uint64(c-'0')
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

// strconvFloat parses without copying the token into a new string.
func strconvFloat(b []byte) (float64, error) {
	if len(b) == 0 {
		return 0, ErrSyntax
	}
	return parseFloatString(unsafe.String(&b[0], len(b)))
}

func appendInt(b []byte, n int64) []byte { return fmtAppendInt(b, n) }
