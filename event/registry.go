package event

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
)

// Type is what the registry knows about one wire name.
type Type struct {
	Name    string       // the wire name (_event_name)
	Go      reflect.Type // the struct type (not the pointer)
	Parents []string     // _parent_event_names, self first, then deepest ancestors first

	set     map[string]struct{} // Parents as a set
	depth   int                 // longest path to BaseEvent
	pdepth  map[string]int      // depth of every name in Parents
	bases   []*Type             // direct registered bases (embedded or declared)
	plan    *structPlan
	display *displayDefaults // nil unless the type fills display texts
	fields  []fieldOption    // WithDefault, WithLiteral, WithReply, inherited ones first
}

type displayDefaults struct {
	name, description LocaleString
}

// DisplayDefaults returns the default display_name and display_description
// of a display (or work) event type, and false for other types.
func (t *Type) DisplayDefaults() (name, description LocaleString, ok bool) {
	if t.display == nil {
		return LocaleString{}, LocaleString{}, false
	}
	return t.display.name, t.display.description, true
}

// registry is immutable once published; registration copies it.
type registry struct {
	byName map[string]*Type
	byGo   map[reflect.Type]*Type
}

var (
	reg   = newRegistry()
	regMu sync.Mutex
)

// newRegistry runs during variable initialization, before any init
// function registers the library.
func newRegistry() *atomic.Pointer[registry] {
	var p atomic.Pointer[registry]
	p.Store(&registry{byName: map[string]*Type{}, byGo: map[reflect.Type]*Type{}})
	return &p
}

// Option configures Register.
type Option func(*options)

type options struct {
	name    string
	parents []string
	display *displayDefaults
	fields  []fieldOption
}

// fieldOption changes the default of one field for one type and its
// subtypes, as a Python subclass redeclares an inherited field.
type fieldOption struct {
	field   string
	value   string // tag syntax: JSON text, else a string
	literal bool   // the only value the field may hold
	write   bool   // applied when writing only, not when reading
}

// WithName sets the wire name when it differs from the Go type name.
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithParents declares parents beyond the embedded event type: the other
// bases of a multiple-inheritance type (LLMStopEvent embeds LLMEvent and
// declares "StopEvent"), or opaque intermediate names with no Go type such
// as "HumanInTheLoopResponseEvent[HumanInTheLoopInputRequestEvent]", which
// are placed just below the type itself.
func WithParents(names ...string) Option {
	return func(o *options) { o.parents = append(o.parents, names...) }
}

// WithDisplay sets the default display texts of a display event type.
// Without it a type uses the texts of the library table, else its parent's.
func WithDisplay(name, description LocaleString) Option {
	return func(o *options) { o.display = &displayDefaults{name, description} }
}

// WithDefault sets the default of a field, usually one the type inherits,
// as a Python subclass redeclares it: the value (JSON text, else a string)
// is used when the field is absent on read and when it holds the Go zero
// value on write. A default for a boolean applies on read only, since false
// is a value a producer may set. Subtypes inherit it.
func WithDefault(field, value string) Option {
	return func(o *options) { o.fields = append(o.fields, fieldOption{field: field, value: value}) }
}

// WithLiteral fixes a string field to one value, like a Literal annotation
// with that default: HumanInTheLoopInputRequestEvent's hitl_type is
// "input". The value is read when the field is absent, written when it is
// empty, and Validate rejects any other value. Subtypes inherit it.
func WithLiteral(field, value string) Option {
	return func(o *options) {
		o.fields = append(o.fields, fieldOption{field: field, value: quote(value), literal: true})
	}
}

// WithReply declares the response event of an in-the-loop request type
// (one with a topic field): the request's topic is written with event_type
// "control_event" and event_name response wherever the producer left them
// unset, as the reference's request factories fill them, so that clients
// know which event answers the request. Subtypes inherit it.
func WithReply(response string) Option {
	return func(o *options) {
		o.fields = append(o.fields, fieldOption{field: "topic", write: true,
			value: `{"event_type": "control_event", "event_name": ` + quote(response) + `}`})
	}
}

// Register enters the event type T under its wire name (the Go type name
// unless WithName says otherwise). Its parents are the registered event
// types it embeds plus WithParents. Registering a name twice is an error.
func Register[T any, PT interface {
	*T
	Event
}](opts ...Option) error {
	return register(reflect.TypeFor[T](), opts...)
}

// MustRegister is Register for init functions; it panics on error.
func MustRegister[T any, PT interface {
	*T
	Event
}](opts ...Option) {
	if err := register(reflect.TypeFor[T](), opts...); err != nil {
		panic(err)
	}
}

func register(gt reflect.Type, opts ...Option) error {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if gt.Kind() != reflect.Struct {
		return fmt.Errorf("event: register %v: not a struct type", gt)
	}
	name := o.name
	if name == "" {
		name = gt.Name()
	}
	if name == "" {
		return fmt.Errorf("event: register %v: anonymous type needs WithName", gt)
	}
	regMu.Lock()
	defer regMu.Unlock()
	old := reg.Load()
	if _, dup := old.byName[name]; dup {
		return fmt.Errorf("event: register %s: %w", name, ErrDuplicate)
	}
	if prev, dup := old.byGo[gt]; dup {
		return fmt.Errorf("event: register %s: Go type %v is already registered as %s: %w", name, gt, prev.Name, ErrDuplicate)
	}
	t := &Type{Name: name, Go: gt}

	// Direct bases: embedded registered event structs, then declared names.
	for i := range gt.NumField() {
		f := gt.Field(i)
		if !f.Anonymous || f.Type.Kind() != reflect.Struct {
			continue
		}
		if b, ok := old.byGo[f.Type]; ok {
			t.bases = append(t.bases, b)
		} else if isEventStruct(f.Type) {
			return fmt.Errorf("event: register %s: embedded %v is not registered; register parents first", name, f.Type)
		}
	}
	var opaque []string
	for _, p := range o.parents {
		if b, ok := old.byName[p]; ok {
			if !slices.Contains(t.bases, b) {
				t.bases = append(t.bases, b)
			}
		} else if p != name && !slices.Contains(opaque, p) {
			opaque = append(opaque, p)
		}
	}

	depth := map[string]int{}
	for _, b := range t.bases {
		for p, d := range b.pdepth {
			depth[p] = max(depth[p], d)
		}
		t.depth = max(t.depth, b.depth+1)
	}
	for _, p := range opaque {
		depth[p] = t.depth
	}
	if len(opaque) > 0 {
		t.depth++
	}
	if len(t.bases) == 0 && len(opaque) == 0 {
		t.depth = 1
	}
	rest := make([]string, 0, len(depth))
	for p := range depth {
		if p != name {
			rest = append(rest, p)
		}
	}
	slices.SortFunc(rest, func(a, b string) int {
		if c := cmp.Compare(depth[b], depth[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	t.Parents = append([]string{name}, rest...)
	depth[name] = t.depth
	t.pdepth = depth
	t.set = make(map[string]struct{}, len(t.Parents))
	for _, p := range t.Parents {
		t.set[p] = struct{}{}
	}

	plan, err := planFor(gt)
	if err != nil {
		return fmt.Errorf("event: register %s: %w", name, err)
	}
	var fopts []fieldOption
	for _, b := range t.bases {
		fopts = append(fopts, b.fields...)
	}
	fopts = append(fopts, o.fields...)
	if len(fopts) > 0 {
		plan = plan.clone()
		for _, fo := range fopts {
			if err := plan.apply(fo); err != nil {
				return fmt.Errorf("event: register %s: %w", name, err)
			}
		}
		t.fields = fopts
	}
	t.plan = plan
	for i := range plan.fields {
		f := &plan.fields[i]
		if f.def == nil {
			continue
		}
		d := decoder{data: f.def}
		if err := f.c.dec(&d, reflect.New(f.typ).Elem()); err != nil {
			return fmt.Errorf("event: register %s: default of field %s: %w", name, f.name, err)
		}
	}

	if t.fillsDisplay() {
		switch {
		case o.display != nil:
			t.display = o.display
		default:
			if n, d, ok := libraryTexts(name); ok {
				t.display = &displayDefaults{n, d}
			} else {
				for _, b := range t.bases {
					if b.display != nil {
						t.display = b.display
						break
					}
				}
			}
		}
		if t.display == nil {
			t.display = &displayDefaults{}
		}
	}

	next := &registry{byName: make(map[string]*Type, len(old.byName)+1), byGo: make(map[reflect.Type]*Type, len(old.byGo)+1)}
	for k, v := range old.byName {
		next.byName[k] = v
	}
	for k, v := range old.byGo {
		next.byGo[k] = v
	}
	next.byName[name] = t
	next.byGo[gt] = t
	reg.Store(next)
	return nil
}

// fillsDisplay reports whether decode and Marshal fill display texts: true
// for types under DisplayEvent or WorkEvent.
func (t *Type) fillsDisplay() bool {
	if t.Name == "DisplayEvent" || t.Name == "WorkEvent" {
		return true
	}
	var walk func(*Type) bool
	walk = func(x *Type) bool {
		for _, b := range x.bases {
			if b.Name == "DisplayEvent" || b.Name == "WorkEvent" || walk(b) {
				return true
			}
		}
		return false
	}
	return walk(t) && t.plan.displayName >= 0
}

// Lookup returns the registered type of a wire name.
func Lookup(name string) (*Type, bool) {
	t, ok := reg.Load().byName[name]
	return t, ok
}

// TypeOf returns the registered type of an event value (by its Go type).
func TypeOf(e Event) (*Type, bool) {
	if e == nil {
		return nil, false
	}
	g, r := reflect.TypeOf(e), reg.Load()
	// A handful of types make most lookups: a direct-mapped cache in front
	// of the map spares hashing the type for each (every Is* and Name
	// call). An entry holds for one registry only.
	slot := &typeCache[reflect.ValueOf(g).Pointer()>>5%uintptr(len(typeCache))]
	if c := slot.Load(); c != nil && c.g == g && c.reg == r {
		return c.t, c.t != nil
	}
	t, ok := r.byGo[g.Elem()]
	slot.Store(&typeEntry{g: g, t: t, reg: r})
	return t, ok
}

type typeEntry struct {
	g   reflect.Type // the event's pointer type
	t   *Type        // nil: not registered
	reg *registry
}

var typeCache [64]atomic.Pointer[typeEntry]

// TypeFor returns the registered type of the Go type T.
func TypeFor[T any, PT interface {
	*T
	Event
}]() (*Type, bool) {
	t, ok := reg.Load().byGo[reflect.TypeFor[T]()]
	return t, ok
}

// NameOf returns the wire name of the Go type T, or "" if it is not registered.
func NameOf[T any, PT interface {
	*T
	Event
}]() string {
	if t, ok := TypeFor[T, PT](); ok {
		return t.Name
	}
	return ""
}

// TypeByGo returns the registered type of a struct type or a pointer to one.
func TypeByGo(t reflect.Type) (*Type, bool) {
	if t == nil {
		return nil, false
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	x, ok := reg.Load().byGo[t]
	return x, ok
}

// Types returns every registered type, sorted by name.
func Types() []*Type {
	r := reg.Load()
	out := make([]*Type, 0, len(r.byName))
	for _, t := range r.byName {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *Type) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// IsA reports whether t is name or has name among its parents.
func (t *Type) IsA(name string) bool {
	_, ok := t.set[name]
	return ok
}

// apply changes the default of one field of a cloned plan.
func (p *structPlan) apply(fo fieldOption) error {
	i, ok := p.byName[fo.field]
	if !ok || p.fields[i].name != fo.field {
		return fmt.Errorf("default of %s: no such field", fo.field)
	}
	f := &p.fields[i]
	if fo.literal && f.typ.Kind() != reflect.String {
		return fmt.Errorf("literal of field %s: not a string field", f.name)
	}
	raw := defaultJSON(fo.value)
	canon, err := canonical(f.c, f.typ, raw)
	if err != nil {
		return fmt.Errorf("default of field %s: %w", f.name, err)
	}
	if fo.literal {
		var s string
		_ = json.Unmarshal(raw, &s)
		f.literal = &s
	}
	if !fo.write {
		f.def, f.required = raw, false
	}
	f.zero = nil
	if f.typ.Kind() != reflect.Bool {
		if zero, err := canonical(f.c, f.typ, nil); err != nil || !bytes.Equal(zero, canon) {
			f.zero = canon
		}
	}
	f.fill = nil
	if f.typ.Kind() == reflect.Pointer && f.typ.Elem().Kind() == reflect.Struct && !isEventStruct(f.typ.Elem()) {
		var members map[string]json.RawMessage
		if json.Unmarshal(raw, &members) != nil {
			return nil
		}
		sub, err := planFor(f.typ.Elem())
		if err != nil {
			return err
		}
		sub = sub.clone()
		for k, v := range members {
			j, ok := sub.byName[k]
			if !ok {
				return fmt.Errorf("default of field %s: no member %s", f.name, k)
			}
			sf := &sub.fields[j]
			c, err := canonical(sf.c, sf.typ, v)
			if err != nil {
				return fmt.Errorf("default of field %s.%s: %w", f.name, k, err)
			}
			sf.zero = c
		}
		f.fill = sub
	}
	return nil
}

// canonical decodes raw (nil: the zero value) into a value of type t and
// encodes it again, so that a default is written in full, every member of
// an object included.
func canonical(c *codec, t reflect.Type, raw []byte) ([]byte, error) {
	v := reflect.New(t).Elem()
	if raw != nil {
		d := decoder{data: raw}
		if err := c.dec(&d, v); err != nil {
			return nil, err
		}
	}
	e := encoder{}
	if err := c.enc(&e, v); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// Default returns the JSON a field of the type is written as when it holds
// its Go zero value, where that differs from the zero value's own encoding
// (the reference's default), and false otherwise.
func (t *Type) Default(field string) ([]byte, bool) {
	i, ok := t.plan.byName[field]
	if !ok || t.plan.fields[i].zero == nil {
		return nil, false
	}
	return slices.Clone(t.plan.fields[i].zero), true
}
