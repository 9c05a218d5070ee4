package step

import (
	"fmt"
	"reflect"

	"github.com/saap-go/agent/event"
)

// bindAll builds the argument list of a call: the Context, then one value
// per parameter from args.
func bindAll(ctx Context, params []binder, args [][]event.Event) ([]reflect.Value, error) {
	if len(args) != len(params) {
		return nil, fmt.Errorf("%w: %d argument lists for %d parameters", ErrArgs, len(args), len(params))
	}
	in := make([]reflect.Value, len(params)+1)
	in[0] = reflect.ValueOf(&ctx).Elem()
	for i := range params {
		v, err := params[i].bind(args[i])
		if err != nil {
			return nil, err
		}
		in[i+1] = v
	}
	return in, nil
}

// bind turns the events bound to one parameter into its value.
func (b *binder) bind(evs []event.Event) (reflect.Value, error) {
	switch b.Kind {
	case Single:
		if len(evs) != 1 {
			return reflect.Value{}, b.countErr(len(evs), "exactly 1")
		}
		return b.one(evs[0])
	case Optional:
		if len(evs) > 1 {
			return reflect.Value{}, b.countErr(len(evs), "0 or 1")
		}
		m := reflect.New(b.typ).Elem()
		if len(evs) == 1 {
			v, err := b.one(evs[0])
			if err != nil {
				return reflect.Value{}, err
			}
			m.Field(0).Set(v)
			m.Field(1).SetBool(true)
		}
		return m, nil
	case List:
		if len(evs) == 0 {
			return reflect.Value{}, b.countErr(0, "at least 1")
		}
		return b.list(evs, reflect.MakeSlice(b.inner, len(evs), len(evs)))
	case OptionalList:
		m := reflect.New(b.typ).Elem()
		if len(evs) > 0 {
			l, err := b.list(evs, reflect.MakeSlice(b.inner, len(evs), len(evs)))
			if err != nil {
				return reflect.Value{}, err
			}
			m.Field(0).Set(l)
			m.Field(1).SetBool(true)
		}
		return m, nil
	case Fixed:
		if len(evs) != b.Size {
			return reflect.Value{}, b.countErr(len(evs), fmt.Sprintf("exactly %d", b.Size))
		}
		return b.list(evs, reflect.New(b.inner).Elem())
	}
	return reflect.Value{}, fmt.Errorf("%w: unknown kind %v", ErrArgs, b.Kind)
}

func (b *binder) countErr(n int, want string) error {
	return fmt.Errorf("%w: %s got %d events, wants %s", ErrArgs, b.Name, n, want)
}

// one binds a single event: the pointer itself, or an Either holding it.
func (b *binder) one(e event.Event) (reflect.Value, error) {
	v := reflect.ValueOf(e)
	if b.union == nil {
		if v.Type() != b.members[0].typ || v.IsNil() {
			return reflect.Value{}, b.typeErr(e)
		}
		return v, nil
	}
	u := reflect.New(b.union).Elem()
	if err := b.setUnion(u, v, e); err != nil {
		return reflect.Value{}, err
	}
	return u, nil
}

func (b *binder) setUnion(u, v reflect.Value, e event.Event) error {
	if e == nil || v.IsNil() {
		return b.typeErr(e)
	}
	t := v.Type()
	for i := range b.members {
		if b.members[i].typ == t {
			u.Field(i).Set(v)
			return nil
		}
	}
	return b.typeErr(e)
}

// list fills the slice or array dst with evs.
func (b *binder) list(evs []event.Event, dst reflect.Value) (reflect.Value, error) {
	if b.union == nil {
		want := b.members[0].typ
		for i, e := range evs {
			v := reflect.ValueOf(e)
			if e == nil || v.Type() != want || v.IsNil() {
				return reflect.Value{}, b.typeErr(e)
			}
			dst.Index(i).Set(v)
		}
		return dst, nil
	}
	for i, e := range evs {
		if err := b.setUnion(dst.Index(i), reflect.ValueOf(e), e); err != nil {
			return reflect.Value{}, err
		}
	}
	return dst, nil
}

func (b *binder) typeErr(e event.Event) error {
	return fmt.Errorf("%w: %s cannot take a %T", ErrArgs, b.Name, e)
}

// collect turns the function's results into the outputs and the error.
func (r resultPlan) collect(res []reflect.Value) ([]event.Event, error) {
	if e := res[len(res)-1]; !e.IsNil() {
		return nil, e.Interface().(error)
	}
	if len(res) == 1 {
		return nil, nil
	}
	v := res[0]
	switch r.shape {
	case resPointer:
		if v.IsNil() {
			return nil, nil
		}
		return []event.Event{v.Interface().(event.Event)}, nil
	case resEvent:
		if v.IsNil() {
			return nil, nil
		}
		e := v.Interface().(event.Event)
		if isNil(e) {
			return nil, nil
		}
		return []event.Event{e}, nil
	case resSlice, resEventSlice:
		n := v.Len()
		if n == 0 {
			return nil, nil
		}
		out := make([]event.Event, 0, n)
		for i := range n {
			x := v.Index(i)
			if x.IsNil() {
				continue
			}
			e := x.Interface().(event.Event)
			if r.shape == resEventSlice && isNil(e) {
				continue
			}
			out = append(out, e)
		}
		return out, nil
	case resEither:
		if e := eitherEvent(v); e != nil {
			return []event.Event{e}, nil
		}
		return nil, nil
	case resEitherList:
		out := make([]event.Event, 0, v.Len())
		for i := range v.Len() {
			if e := eitherEvent(v.Index(i)); e != nil {
				out = append(out, e)
			}
		}
		return out, nil
	}
	return nil, nil
}

// eitherEvent returns the set member of an Either value, or nil.
func eitherEvent(v reflect.Value) event.Event {
	for i := range v.NumField() {
		if f := v.Field(i); !f.IsNil() {
			return f.Interface().(event.Event)
		}
	}
	return nil
}
