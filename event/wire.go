package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

func fmtAppendInt(b []byte, n int64) []byte   { return strconv.AppendInt(b, n, 10) }
func fmtAppendUint(b []byte, n uint64) []byte { return strconv.AppendUint(b, n, 10) }
func parseFloatString(s string) (float64, error) {
	return strconv.ParseFloat(s, 64)
}

var encoders = sync.Pool{New: func() any { return &encoder{buf: make([]byte, 0, 1024)} }}

// Marshal encodes e as the reference writes it: every declared field, the
// unknown members it was received with, then _event_name and
// _parent_event_names. A field holding its Go zero value is written as the
// reference's default where the two differ (an empty list for a list, 500
// for ExceptionEvent.http_status_code, a subtype's hitl_type, the type's
// display texts), so that an event built as a struct literal reads back in
// Python as the same event; other unset fields are null. Marshal does not
// validate (see Validate), so that received events can be forwarded.
func Marshal(e Event) ([]byte, error) {
	if e == nil || reflect.ValueOf(e).IsNil() {
		return nil, fmt.Errorf("event: marshal nil event: %w", ErrInvalid)
	}
	enc := encoders.Get().(*encoder)
	enc.buf = enc.buf[:0]
	err := enc.event(e)
	var out []byte
	if err == nil {
		out = slices.Clone(enc.buf)
	}
	if cap(enc.buf) <= 1<<16 {
		encoders.Put(enc)
	}
	return out, err
}

// MarshalTo is Marshal appending to dst, for callers that reuse buffers.
func MarshalTo(dst []byte, e Event) ([]byte, error) {
	if e == nil {
		return dst, fmt.Errorf("event: marshal nil event: %w", ErrInvalid)
	}
	enc := encoder{buf: dst}
	if err := enc.event(e); err != nil {
		return dst, err
	}
	return enc.buf, nil
}

var baseEventType = &Type{Name: "BaseEvent", Go: reflect.TypeFor[BaseEvent](), Parents: []string{"BaseEvent"}, set: map[string]struct{}{"BaseEvent": {}}}

func init() {
	p, err := planFor(baseEventType.Go)
	if err != nil {
		panic(err)
	}
	baseEventType.plan = p
}

// typeOfValue is TypeOf, also knowing BaseEvent.
func typeOfValue(e Event) (*Type, bool) {
	if t, ok := TypeOf(e); ok {
		return t, true
	}
	if _, ok := e.(*BaseEvent); ok {
		return baseEventType, true
	}
	return nil, false
}

func (enc *encoder) event(e Event) error {
	if rv := reflect.ValueOf(e); rv.Kind() == reflect.Pointer && rv.IsNil() {
		enc.buf = append(enc.buf, "null"...)
		return nil
	}
	t, ok := typeOfValue(e)
	if !ok {
		return fmt.Errorf("event: marshal %T: %w", e, ErrUnregistered)
	}
	v := reflect.ValueOf(e).Elem()
	m := e.EventBase().meta
	p := t.plan
	enc.buf = append(enc.buf, '{')
	comma := false
	for i := range p.fields {
		f := &p.fields[i]
		if m != nil && len(m.raws) > 0 {
			if j := slices.IndexFunc(m.raws, func(x extra) bool { return x.key == f.name }); j >= 0 {
				if comma {
					enc.buf = append(enc.buf, ", "...)
				}
				comma = true
				enc.buf = append(enc.buf, f.key...)
				enc.buf = append(enc.buf, m.raws[j].raw...)
				continue
			}
		}
		fv := v.FieldByIndex(f.index)
		if f.omit && fv.IsZero() {
			continue
		}
		if comma {
			enc.buf = append(enc.buf, ", "...)
		}
		comma = true
		enc.buf = append(enc.buf, f.key...)
		if t.display != nil && (i == p.displayName || i == p.displayDesc) && fv.IsNil() {
			ls := t.display.name
			if i == p.displayDesc {
				ls = t.display.description
			}
			if err := ls.encodeLax(enc); err != nil {
				return err
			}
			continue
		}
		if f.zero != nil && fv.IsZero() {
			enc.buf = append(enc.buf, f.zero...)
			continue
		}
		if f.fill != nil && !fv.IsNil() {
			enc.buf = append(enc.buf, '{')
			if err := enc.fields(f.fill, fv.Elem(), false); err != nil {
				return fmt.Errorf("event: marshal %s: field %s: %w", t.Name, f.name, err)
			}
			enc.buf = append(enc.buf, '}')
			continue
		}
		if err := f.c.enc(enc, fv); err != nil {
			return fmt.Errorf("event: marshal %s: field %s: %w", t.Name, f.name, err)
		}
	}
	if m != nil {
		for _, x := range m.extras {
			if _, declared := p.byName[x.key]; declared || x.key == keyName || x.key == keyParents {
				continue
			}
			if comma {
				enc.buf = append(enc.buf, ", "...)
			}
			comma = true
			enc.buf = appendString(enc.buf, x.key)
			enc.buf = append(enc.buf, ": "...)
			enc.buf = append(enc.buf, x.raw...)
		}
	}
	if comma {
		enc.buf = append(enc.buf, ", "...)
	}
	enc.buf = append(enc.buf, `"_event_name": `...)
	name := t.Name
	parents := t.Parents
	if m != nil && m.fallback {
		if m.name != "" {
			name = m.name
		}
		parents = m.parents
	}
	enc.buf = appendString(enc.buf, name)
	enc.buf = append(enc.buf, `, "_parent_event_names": [`...)
	for i, s := range parents {
		if i > 0 {
			enc.buf = append(enc.buf, ", "...)
		}
		enc.buf = appendString(enc.buf, s)
	}
	enc.buf = append(enc.buf, "]}"...)
	return nil
}

const (
	keyName    = "_event_name"
	keyParents = "_parent_event_names"
)

// Unmarshal decodes an event the way the reference's
// BaseEvent.deserialize_event does, leniently: the exact
// registered name wins; an unknown name falls back to the first registered
// name of its parent list (ControlEvent or DisplayEvent become
// ControlAndDisplayEvent when the list names both), keeping the received
// name, parents and unknown fields; the last resort is *BaseEvent. Missing
// required fields are reported by Missing, not as errors.
func Unmarshal(data []byte) (Event, error) {
	d := getDecoder(validUTF8(data))
	defer putDecoder(d)
	return d.eventAs(nil, true)
}

// UnmarshalAs decodes data as T, like calling deserialize_event on the
// class T: T is the last resort. A payload naming T decodes exactly; a
// payload naming another name, or none, decodes as a fallback to T that
// keeps the received name, parents and unknown fields. A payload naming a
// registered type that is not T or a subtype of T is ErrTypeMismatch.
func UnmarshalAs[T any, PT interface {
	*T
	Event
}](data []byte) (PT, error) {
	d := getDecoder(validUTF8(data))
	defer putDecoder(d)
	ev, err := d.eventAs(reflect.TypeFor[T](), true)
	if err != nil {
		return nil, err
	}
	return ev.(PT), nil
}

// validUTF8 replaces invalid UTF-8 by U+FFFD, as encoding/json does, so
// that names, strings and kept raw values are valid text.
func validUTF8(data []byte) []byte {
	if utf8.Valid(data) {
		return data
	}
	return bytes.ToValidUTF8(data, []byte("\uFFFD"))
}

// intern returns a registered name equal to b without allocating, or a
// copy of b.
func (r *registry) intern(b []byte) string {
	if x, ok := r.byName[string(b)]; ok {
		return x.Name
	}
	return string(b)
}

// parentList reads the received parent list at d.data[start:] verbatim
// (non-string items are dropped), sharing the registered names' strings.
func (d *decoder) parentList(r *registry, start int) []string {
	save, depth := d.pos, d.depth
	d.pos = start
	parents := []string{}
	_ = d.array(func() error {
		if d.peek() == '"' {
			b, err := d.stringBytes()
			if err == nil {
				parents = append(parents, r.intern(b))
			}
			return err
		}
		_, err := d.skip()
		return err
	})
	d.pos, d.depth = save, depth
	return parents
}

// nameError completes a DecodeError from the first pass, which runs before
// the event's name is known: it names the member and, if it can find one,
// the event.
func nameError(err error, data []byte, key string) error {
	var de *DecodeError
	if !errors.As(err, &de) {
		return err
	}
	if de.Field == "" {
		de.Field = key
	}
	if de.Event == "" {
		de.Event = sniffName(data)
	}
	return err
}

// sniffName finds the _event_name of a document that does not parse.
func sniffName(data []byte) string {
	i := bytes.Index(data, []byte(`"_event_name"`))
	if i < 0 {
		return ""
	}
	d := decoder{data: data, pos: i + len(`"_event_name"`)}
	if d.peek() != ':' {
		return ""
	}
	d.pos++
	s, err := d.str()
	if err != nil {
		return ""
	}
	return s
}

type entry struct {
	key        []byte
	start, end int
}

// nestedEvent decodes the event object at the current position. want is
// the Go struct type the field declares, nil for the Event interface.
func (d *decoder) nestedEvent(want reflect.Type) (Event, error) {
	raw, err := d.skip()
	if err != nil {
		return nil, err
	}
	sub := decoder{data: raw, path: slices.Clone(d.path), event: d.event, base: len(d.path), depth: d.depth}
	return sub.eventAs(want, false)
}

// eventAs decodes the object in d.data as an event. want restricts the
// result to one Go struct type (nil: any registered type, BaseEvent last).
func (d *decoder) eventAs(want reflect.Type, top bool) (Event, error) {
	var buf [32]entry
	entries := buf[:0]
	nameAt, parentsAt := -1, -1
	if err := d.objBegin(); err != nil {
		return nil, err
	}
	for n := 0; ; n++ {
		key, more, err := d.objNext(n)
		if err != nil {
			return nil, nameError(err, d.data, "")
		}
		if !more {
			break
		}
		d.ws()
		start := d.pos
		if _, err := d.skip(); err != nil {
			return nil, nameError(err, d.data, string(key))
		}
		switch string(key) {
		case keyName:
			nameAt = len(entries)
		case keyParents:
			parentsAt = len(entries)
		}
		entries = append(entries, entry{key: key, start: start, end: d.pos})
	}
	if top {
		if err := d.end(); err != nil {
			return nil, nameError(err, d.data, "")
		}
	}

	r := reg.Load()
	var name string
	if nameAt >= 0 {
		save := d.pos
		d.pos = entries[nameAt].start
		if b, err := d.stringBytes(); err == nil {
			name = r.intern(b)
		}
		d.pos = save
	}
	// The received parent list matters only for a fallback; an exact
	// decode does not read it (its parents are the registered ones).
	var parents []string
	parentsList := false
	if parentsAt >= 0 {
		parentsList = d.peekAt(entries[parentsAt].start) == '['
	}
	if parentsList {
		if x, ok := r.byName[name]; !ok || name == "" || want != nil && x.Go != want {
			parents = d.parentList(r, entries[parentsAt].start)
		}
	}
	if d.hasDefs {
		if nameAt < 0 {
			name = d.defName
		}
		if parentsAt < 0 && d.defParents != nil {
			parents, parentsList = d.defParents, true
		}
		d.hasDefs = false
	}
	if d.event == "" {
		d.event = name
	}

	var wantT *Type
	if want != nil {
		if want == baseEventType.Go {
			wantT = baseEventType
		} else if t, ok := r.byGo[want]; ok {
			wantT = t
		} else {
			return nil, d.errf(ErrUnregistered, "%v", want)
		}
	}

	// Resolve the Go type: exact name, then ancestry, then the last resort.
	var t *Type
	fallback := true
	if x, ok := r.byName[name]; ok && name != "" {
		switch {
		case wantT == nil || x == wantT:
			t, fallback = x, false
		case x.IsA(wantT.Name) && x.Go != wantT.Go:
			t = wantT
			if !parentsList {
				parents, parentsList = x.Parents, true
			}
		default:
			return nil, d.errf(ErrTypeMismatch, "%s is not a %s", name, wantT.Name)
		}
	} else if wantT != nil {
		t = wantT
		// A nested object without a name is validated as the declared
		// type, as pydantic does for a typed field: an exact decode.
		fallback = top || nameAt >= 0
	} else {
		// Fallback by ancestry: the registered names of the received list,
		// in list order; a candidate that fails to decode gives way to the
		// next one, and BaseEvent is the last resort.
		path, depth := len(d.path), d.depth
		var firstErr error
		if parentsList {
			for _, p := range parents {
				x, ok := r.byName[p]
				if !ok {
					continue
				}
				if (p == "ControlEvent" && slices.Contains(parents, "DisplayEvent")) ||
					(p == "DisplayEvent" && slices.Contains(parents, "ControlEvent")) {
					if cad, ok := r.byName["ControlAndDisplayEvent"]; ok {
						x = cad
					}
				}
				ev, err := d.decodeInto(x, entries, true, name, parents)
				if err == nil {
					return ev, nil
				}
				if firstErr == nil {
					firstErr = err
				}
				d.path, d.depth, d.missing, d.event = d.path[:path], depth, nil, name
			}
		}
		ev, err := d.decodeInto(baseEventType, entries, true, name, parents)
		if err != nil && firstErr != nil {
			return nil, firstErr
		}
		return ev, err
	}
	return d.decodeInto(t, entries, fallback, name, parents)
}

// decodeInto decodes the recorded members into a new value of t.
func (d *decoder) decodeInto(t *Type, entries []entry, fallback bool, name string, parents []string) (Event, error) {
	if !fallback || d.event == "" {
		d.event = t.Name
	}

	pv := reflect.New(t.Go)
	ev := pv.Interface().(Event)
	b := ev.EventBase()
	var m *meta
	if fallback {
		if parents == nil {
			parents = []string{}
		}
		m = &meta{fallback: true, name: name, parents: parents}
	}
	v := pv.Elem()
	p := t.plan
	var texts *displayTexts
	var seenBuf [64]bool
	var seen []bool
	if len(p.fields) <= len(seenBuf) {
		seen = seenBuf[:len(p.fields)]
	} else {
		seen = make([]bool, len(p.fields))
	}
	for _, en := range entries {
		i, ok := p.byName[string(en.key)]
		if !ok {
			if string(en.key) == keyName || string(en.key) == keyParents {
				continue
			}
			if m == nil {
				m = &meta{}
			}
			k := string(en.key)
			raw := slices.Clone(d.data[en.start:en.end])
			if j := slices.IndexFunc(m.extras, func(x extra) bool { return x.key == k }); j >= 0 {
				m.extras[j].raw = raw
			} else {
				m.extras = append(m.extras, extra{key: k, raw: raw})
			}
			continue
		}
		f := &p.fields[i]
		seen[i] = true
		d.pos = en.start
		d.push(f.name)
		if i == p.displayName || i == p.displayDesc {
			if err := d.display(t, v, i, &texts); err != nil {
				return nil, err
			}
		} else if err := f.c.dec(d, v.FieldByIndex(f.index)); err != nil {
			return nil, err
		}
		d.pop()
	}
	missing := d.missing
	d.missing = nil
	if err := d.unseen(p, v, seen); err != nil {
		return nil, err
	}
	missing = append(missing, d.missing...)
	if len(missing) > 0 {
		if m == nil {
			m = &meta{}
		}
		m.missing = missing
	}
	if i, ok := p.byName["event_id"]; !ok || !seen[i] || b.EventID == "" && isNullAt(d.data, entries, "event_id") {
		b.EventID = NewID()
	}
	if i, ok := p.byName["created_at"]; !ok || !seen[i] || b.CreatedAt == 0 && isNullAt(d.data, entries, "created_at") {
		b.CreatedAt = time.Now().UnixNano()
	}
	if t.display != nil {
		fillDisplay(t, v, texts)
	}
	b.meta = m
	return ev, nil
}

func isNullAt(data []byte, entries []entry, key string) bool {
	for _, en := range entries {
		if string(en.key) == key {
			return string(data[en.start:en.end]) == "null"
		}
	}
	return false
}

// fillDisplay replaces nil display texts by the type's defaults.
func fillDisplay(t *Type, v reflect.Value, texts *displayTexts) {
	p := t.plan
	if p.displayName >= 0 {
		if f := v.FieldByIndex(p.fields[p.displayName].index); f.IsNil() {
			if texts == nil {
				texts = new(displayTexts)
			}
			texts.name = t.display.name
			f.Set(reflect.ValueOf(&texts.name))
		}
	}
	if p.displayDesc >= 0 {
		if f := v.FieldByIndex(p.fields[p.displayDesc].index); f.IsNil() {
			if texts == nil {
				texts = new(displayTexts)
			}
			texts.description = t.display.description
			f.Set(reflect.ValueOf(&texts.description))
		}
	}
}

// displayTexts holds an event's display_name and display_description in
// one allocation. Each field points at its own member, so callers may
// change either text without affecting the other or any other event.
type displayTexts struct {
	name, description LocaleString
}

// display decodes the display field i of t (display_name or
// display_description) into *texts, allocated on first use. Texts equal to
// the type's defaults share the defaults' strings (strings are immutable).
func (d *decoder) display(t *Type, v reflect.Value, i int, texts **displayTexts) error {
	f := v.FieldByIndex(t.plan.fields[i].index)
	if d.null() {
		f.SetZero()
		return nil
	}
	if *texts == nil {
		*texts = new(displayTexts)
	}
	l, like := &(*texts).name, (*LocaleString)(nil)
	if i == t.plan.displayDesc {
		l = &(*texts).description
	}
	if t.display != nil {
		like = &t.display.name
		if i == t.plan.displayDesc {
			like = &t.display.description
		}
	}
	if err := l.decodeLike(d, like); err != nil {
		return err
	}
	f.Set(reflect.ValueOf(l))
	return nil
}

// anyValue decodes a value into any: map[string]any, []any, string,
// json.Number (NaN and the infinities included), bool or nil.
func (d *decoder) anyValue() (any, error) {
	switch d.peek() {
	case '{':
		m := map[string]any{}
		err := d.object(func(key []byte) error {
			x, err := d.anyValue()
			m[string(key)] = x
			return err
		})
		return m, err
	case '[':
		s := []any{}
		err := d.array(func() error {
			x, err := d.anyValue()
			s = append(s, x)
			return err
		})
		return s, err
	case '"':
		return d.str()
	case 't', 'f', 'n':
		raw, err := d.skip()
		if err != nil {
			return nil, err
		}
		switch string(raw) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, nil
	default:
		raw, _, err := d.number()
		if err != nil {
			return nil, err
		}
		return json.Number(raw), nil
	}
}
