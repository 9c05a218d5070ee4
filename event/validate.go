package event

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Validate checks that e may be produced, strictly: it has an
// event_id and a created_at, and ValidateFields holds. Lenient reading
// accepts what Validate refuses, so that received events can be forwarded.
func Validate(e Event) error {
	return validate(e, true)
}

// ValidateFields is Validate without the envelope (event_id, created_at),
// for producers that stamp the envelope after checking the rest. It checks
// that no required field was missing on the wire; that every required
// field the reference has no default for is set (pointers, interfaces,
// raw JSON; lists and maps are written as empty ones); that literal fields
// hold their value and fields with a fixed set of values one of them; and
// the same in nested values and events.
//
// The error names the event and the JSON path of the field of each
// problem: a *ValidationError when there is one, a ValidationErrors
// listing them when there are several. errors.As finds the first
// *ValidationError either way, and errors.Is(err, ErrInvalid) holds.
func ValidateFields(e Event) error {
	return validate(e, false)
}

func validate(e Event, envelope bool) error {
	if e == nil || reflect.ValueOf(e).IsNil() {
		return &ValidationError{Field: "(event)", Hint: "nil event"}
	}
	t, ok := typeOfValue(e)
	if !ok {
		return fmt.Errorf("event: validate %T: %w", e, ErrUnregistered)
	}
	c := checkers.Get().(*checker)
	defer func() {
		*c = checker{at: c.at[:0]}
		checkers.Put(c)
	}()
	c.event = Name(e)
	if envelope {
		b := e.EventBase()
		if b.EventID == "" {
			c.add("event_id", "empty; call Stamp or set an id")
		}
		if b.CreatedAt == 0 {
			c.add("created_at", "zero; call Stamp or set a time")
		}
	}
	c.event1(t, e)
	switch len(c.errs) {
	case 0:
		return nil
	case 1:
		return c.errs[0]
	}
	return slices.Clone(c.errs)
}

var checkers = sync.Pool{New: func() any { return &checker{at: make([]seg, 0, 8)} }}

// ValidationErrors lists every problem Validate found, in field order.
type ValidationErrors []*ValidationError

// Error implements error: the problems, separated by "; ".
func (v ValidationErrors) Error() string {
	var b strings.Builder
	for i, e := range v {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap returns the problems, so that errors.As and errors.Is see each.
func (v ValidationErrors) Unwrap() []error {
	out := make([]error, len(v))
	for i, e := range v {
		out[i] = e
	}
	return out
}

type checker struct {
	event string // name of the top-level event
	errs  ValidationErrors
	at    []seg // path of the value being checked
}

// seg is one step of a field's JSON path: a member name, or a list index
// when name is "".
type seg struct {
	name  string
	index int
}

func (c *checker) push(name string, index int) { c.at = append(c.at, seg{name, index}) }
func (c *checker) pop()                        { c.at = c.at[:len(c.at)-1] }

// add records a problem of field (a path below the current value, "" for
// the value itself). The path is built only here.
func (c *checker) add(field, hint string) {
	var b strings.Builder
	for _, s := range c.at {
		switch {
		case s.name == "":
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
		}
	}
	if field != "" {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(field)
	}
	c.errs = append(c.errs, &ValidationError{Event: c.event, Field: b.String(), Hint: hint})
}

// event1 checks an event's own fields.
func (c *checker) event1(t *Type, e Event) {
	for _, m := range Missing(e) {
		c.add(m, "required field was missing when the event was read")
	}
	c.fields(t.plan, reflect.ValueOf(e).Elem())
}

// hook records the error of a value type's own checks (a chat message's
// role, a file's name patterns), below the value's path.
func (c *checker) hook(err error) {
	if err == nil {
		return
	}
	if ve, ok := err.(*ValidationError); ok {
		c.add(ve.Field, ve.Hint)
		return
	}
	c.add("", err.Error())
}

// fields checks the fields of a struct by its plan.
func (c *checker) fields(p *structPlan, v reflect.Value) {
	for i := range p.fields {
		f := &p.fields[i]
		if i == p.displayName || i == p.displayDesc {
			continue // filled with the type's texts when unset
		}
		fv := v.FieldByIndex(f.index)
		if f.zero != nil && fv.IsZero() {
			continue // written as the reference's default
		}
		if f.required && unset(fv) {
			c.add(f.name, "required field is not set")
			continue
		}
		if f.literal != nil {
			if s := fv.String(); s != *f.literal {
				c.add(f.name, "must be "+quote(*f.literal)+", got "+quote(s))
			}
			continue
		}
		if f.oneOf != nil {
			if s := fv.String(); !slices.Contains(f.oneOf, s) {
				c.add(f.name, "must be one of "+joinQuoted(f.oneOf)+", got "+quote(s))
			}
			continue
		}
		if walks(f.typ) {
			c.push(f.name, 0)
			c.value(fv)
			c.pop()
		}
	}
}

// unset reports whether a required value is absent: a nil pointer, slice,
// map or interface, empty raw JSON, or a zero time.
func unset(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Interface:
		return v.IsNil()
	case reflect.Slice:
		return v.IsNil() || v.Type() == rawType && v.Len() == 0
	case reflect.Struct:
		return v.Type() == timeType && v.IsZero()
	}
	return false
}

// value checks a nested value: structs by their plan, events as events,
// the items of lists.
func (c *checker) value(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		if e, ok := v.Interface().(Event); ok {
			if t, ok := typeOfValue(e); ok {
				c.event1(t, e)
			}
			return
		}
		c.value(v.Elem())
	case reflect.Slice:
		for i := range v.Len() {
			c.push("", i)
			c.value(v.Index(i))
			c.pop()
		}
	case reflect.Struct:
		if v.CanAddr() {
			if e, ok := v.Addr().Interface().(Event); ok {
				if t, ok := typeOfValue(e); ok {
					c.event1(t, e)
				}
				return
			}
		}
		if p, err := planFor(v.Type()); err == nil {
			c.fields(p, v)
		}
		if v.CanAddr() {
			if x, ok := v.Addr().Interface().(interface{ validate() error }); ok {
				c.hook(x.validate())
			}
		}
	}
}

var walkCache sync.Map // reflect.Type → bool

// walks reports whether values of t can hold something to check: a struct
// (not a value type that reads and writes itself), an event, or a list or
// pointer of such.
func walks(t reflect.Type) bool {
	if w, ok := walkCache.Load(t); ok {
		return w.(bool)
	}
	w := false
	switch t.Kind() {
	case reflect.Interface:
		w = t == eventIface
	case reflect.Pointer, reflect.Slice:
		w = t != rawType && walks(t.Elem())
	case reflect.Struct:
		w = t != timeType && (!reflect.PointerTo(t).Implements(laxType) || reflect.PointerTo(t).Implements(validatorType))
	}
	walkCache.Store(t, w)
	return w
}

var validatorType = reflect.TypeFor[interface{ validate() error }]()
