package step

import (
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/saap-go/agent/event"
)

// frame holds the arguments of one call. Frames are pooled so that a call
// allocates neither the argument slice nor a box for the Context; value
// temporaries (Maybe, Either, arrays) come from per-parameter pools, since
// reflect.Value.Call copies them into the callee's frame.
type frame struct {
	ctx  Context
	buf  [8]reflect.Value
	in   []reflect.Value
	tmps []temp
	tbuf [8]temp
}

// temp is a pooled *T whose Elem was passed by value.
type temp struct {
	pool *sync.Pool
	ptr  reflect.Value
}

var frames = sync.Pool{New: func() any { return new(frame) }}

// bindAll builds the argument list of a call: the Context, then one value
// per parameter from args. release must be called once the call returned.
func bindAll(ctx Context, params []binder, args [][]event.Event) (*frame, error) {
	if len(args) != len(params) {
		return nil, fmt.Errorf("%w: %d argument lists for %d parameters", ErrArgs, len(args), len(params))
	}
	f := frames.Get().(*frame)
	f.ctx = ctx
	f.tmps = f.tbuf[:0]
	if n := len(params) + 1; n <= len(f.buf) {
		f.in = f.buf[:n]
	} else {
		f.in = make([]reflect.Value, n)
	}
	f.in[0] = reflect.ValueOf(&f.ctx).Elem()
	for i := range params {
		v, err := params[i].bind(f, args[i])
		if err != nil {
			f.release()
			return nil, err
		}
		f.in[i+1] = v
	}
	return f, nil
}

// temp returns a zero T from pool (T = typ), to be returned by release.
func (f *frame) temp(pool *sync.Pool, typ reflect.Type) reflect.Value {
	var p reflect.Value
	if x := pool.Get(); x != nil {
		p = reflect.ValueOf(x)
	} else {
		p = reflect.New(typ)
	}
	f.tmps = append(f.tmps, temp{pool, p})
	return p.Elem()
}

// release clears the frame, so the pools retain no events, and returns it.
func (f *frame) release() {
	for _, t := range f.tmps {
		t.ptr.Elem().SetZero()
		t.pool.Put(t.ptr.Interface())
	}
	clear(f.tmps)
	clear(f.in)
	f.ctx, f.in, f.tmps = nil, nil, nil
	frames.Put(f)
}

// bind turns the events bound to one parameter into its value.
func (b *binder) bind(f *frame, evs []event.Event) (reflect.Value, error) {
	switch b.Kind {
	case Single:
		if len(evs) != 1 {
			return reflect.Value{}, b.countErr(len(evs), "exactly 1")
		}
		if b.union == nil {
			return b.pointer(evs[0])
		}
		u := f.temp(b.pool, b.union)
		return u, b.setUnion(u, evs[0])
	case Optional:
		if len(evs) > 1 {
			return reflect.Value{}, b.countErr(len(evs), "0 or 1")
		}
		m := f.temp(b.pool, b.typ)
		if len(evs) == 1 {
			if b.union == nil {
				v, err := b.pointer(evs[0])
				if err != nil {
					return reflect.Value{}, err
				}
				m.Field(0).Set(v)
			} else if err := b.setUnion(m.Field(0), evs[0]); err != nil {
				return reflect.Value{}, err
			}
			m.Field(1).SetBool(true)
		}
		return m, nil
	case List:
		if len(evs) == 0 {
			return reflect.Value{}, b.countErr(0, "at least 1")
		}
		// A pooled header with a fresh backing array: the step may keep
		// the slice, never the header.
		l := f.temp(b.pool, b.inner)
		l.Grow(len(evs))
		l.SetLen(len(evs))
		return l, b.fill(evs, l)
	case OptionalList:
		m := f.temp(b.pool, b.typ)
		if len(evs) > 0 {
			l := m.Field(0)
			l.Grow(len(evs))
			l.SetLen(len(evs))
			if err := b.fill(evs, l); err != nil {
				return reflect.Value{}, err
			}
			m.Field(1).SetBool(true)
		}
		return m, nil
	case Fixed:
		if len(evs) != b.Size {
			return reflect.Value{}, b.countErr(len(evs), fmt.Sprintf("exactly %d", b.Size))
		}
		a := f.temp(b.pool, b.inner)
		return a, b.fill(evs, a)
	}
	return reflect.Value{}, fmt.Errorf("%w: unknown kind %v", ErrArgs, b.Kind)
}

// pointer checks that e is the parameter's event type and returns it.
func (b *binder) pointer(e event.Event) (reflect.Value, error) {
	if e == nil {
		return reflect.Value{}, b.typeErr(e)
	}
	v := reflect.ValueOf(e)
	if v.Type() != b.members[0].typ || v.IsNil() {
		return reflect.Value{}, b.typeErr(e)
	}
	return v, nil
}

// setUnion stores e in the member field of the Either u that has its type.
func (b *binder) setUnion(u reflect.Value, e event.Event) error {
	if e == nil {
		return b.typeErr(e)
	}
	v := reflect.ValueOf(e)
	t := v.Type()
	for i := range b.members {
		if b.members[i].typ == t && !v.IsNil() {
			u.Field(i).Set(v)
			return nil
		}
	}
	return b.typeErr(e)
}

// fill stores evs in the slice or array dst.
func (b *binder) fill(evs []event.Event, dst reflect.Value) error {
	for i, e := range evs {
		if b.union != nil {
			if err := b.setUnion(dst.Index(i), e); err != nil {
				return err
			}
			continue
		}
		v, err := b.pointer(e)
		if err != nil {
			return err
		}
		dst.Index(i).Set(v)
	}
	return nil
}

func (b *binder) countErr(n int, want string) error {
	return fmt.Errorf("%w: %s got %d events, wants %s", ErrArgs, b.Name, n, want)
}

func (b *binder) typeErr(e event.Event) error {
	return fmt.Errorf("%w: %s cannot take a %T", ErrArgs, b.Name, e)
}

// collect turns the function's results into the outputs, appended to dst,
// and the error.
func (r resultPlan) collect(res []reflect.Value, dst []event.Event) ([]event.Event, error) {
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
		return append(dst, v.Interface().(event.Event)), nil
	case resEvent:
		if v.IsNil() {
			return nil, nil
		}
		e := v.Interface().(event.Event)
		if isNil(e) {
			return nil, nil
		}
		return append(dst, e), nil
	case resSlice, resEventSlice:
		n := v.Len()
		if n == 0 {
			return nil, nil
		}
		out := slices.Grow(dst, n)
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
			return append(dst, e), nil
		}
		return nil, nil
	case resEitherList:
		out := slices.Grow(dst, v.Len())
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
