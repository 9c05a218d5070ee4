package step

import (
	"fmt"
	"reflect"
	"runtime/debug"

	"github.com/saap-go/agent/event"
)

// CheckCompensation reports a compensating function that does not fit its
// step (see Compensate).
const CheckCompensation Check = "compensation"

// Compensate declares fn as the step's compensating function: what undoes
// the step's effect when the run fails after the step completed (a saga).
// fn takes a Context, then the step's own parameters in the same order and
// of the same types, then the step's result (if the step returns one), and
// returns error:
//
//	func Reserve(ctx step.Context, o *Order) (*Reserved, error)
//	func Release(ctx step.Context, o *Order, r *Reserved) error
//	step.New(Reserve, step.Compensate(Release))
//
// When a run fails, the engine runs the compensations of the steps that
// completed, newest first, each once per completed execution; its
// Context's IdempotencyKey is the compensation's own. A pointer result the
// step did not produce (nil) is passed as nil.
func Compensate(fn any) Option { return func(o *options) { o.comp, o.compSet = fn, true } }

// compensation is a step's compensating function, checked against the step.
type compensation struct {
	fn    reflect.Value
	out   reflect.Type // the step's result type; nil when it returns error only
	shape resultShape
}

// compensation checks fn against the step function of type st and returns
// its plan, or nil after recording the problems.
func (a analyzer) compensation(st reflect.Type, fn any) *compensation {
	s := a.step
	v := reflect.ValueOf(fn)
	if fn == nil || v.Kind() != reflect.Func || v.IsNil() {
		s.addProblem(CheckCompensation, "the compensation of %s is %T, not a function", whose(s, "step"), fn).
			hint("pass a function taking the step's Context, inputs and result and returning error")
		return nil
	}
	if st == nil {
		return nil // the step itself is not a function: reported already
	}
	t := v.Type()
	want := compensationType(st)
	if t != want {
		p := s.addProblem(CheckCompensation, "the compensation of %s has the type %s; it must be %s", whose(s, "step"), t, want)
		p.hint("a compensation takes the step's own Context and inputs, in the same order, then the step's result, and returns error")
		return nil
	}
	c := &compensation{fn: v, shape: s.results.shape}
	if st.NumOut() == 2 {
		c.out = st.Out(0)
		if c.shape == resEither || c.shape == resEitherList {
			s.addProblem(CheckCompensation, "the compensation of %s would take %s; a union result cannot be compensated", whose(s, "step"), c.out).
				hint("return one event type, a slice of one type, or event.Event / []event.Event with step.Emits")
			return nil
		}
	}
	return c
}

// compensationType is the function type a compensation of a step of type
// st must have.
func compensationType(st reflect.Type) reflect.Type {
	in := make([]reflect.Type, 0, st.NumIn()+1)
	for i := range st.NumIn() {
		in = append(in, st.In(i))
	}
	if st.NumOut() == 2 {
		in = append(in, st.Out(0))
	}
	return reflect.FuncOf(in, []reflect.Type{errorType}, false)
}

// HasCompensation reports whether the step declares a compensation
// (Compensate) that passed validation.
func (s *Step) HasCompensation() bool { return s.comp != nil }

// DeclaresCompensation reports whether the step was declared with
// Compensate, valid or not.
func (s *Step) DeclaresCompensation() bool { return s.compDeclared }

// Undo runs the step's compensation with the step's arguments, bound as by
// Call, and the outputs the step produced (decoded events, in order). A
// panic is recovered into a *PanicError. A step without a compensation
// returns ErrInvalid.
func (s *Step) Undo(ctx Context, args [][]event.Event, outs []event.Event) (err error) {
	c := s.comp
	if c == nil || !s.fn.IsValid() {
		return fmt.Errorf("%w: step %s has no usable compensation", ErrInvalid, s.name)
	}
	f, err := bindAll(ctx, s.params, args)
	if err != nil {
		return fmt.Errorf("compensation of %s: %w", s.name, err)
	}
	in := make([]reflect.Value, len(f.in), len(f.in)+1)
	copy(in, f.in)
	if c.out != nil {
		in = append(in, c.result(outs))
	}
	defer func() {
		f.release()
		if r := recover(); r != nil {
			err = &PanicError{Step: s.name + " (compensation)", Value: r, Stack: debug.Stack()}
		}
	}()
	if e := c.fn.Call(in)[0].Interface(); e != nil {
		return e.(error)
	}
	return nil
}

// result rebuilds the step's result value from its outputs.
func (c *compensation) result(outs []event.Event) reflect.Value {
	switch c.shape {
	case resPointer, resEvent:
		for _, o := range outs {
			if v := reflect.ValueOf(o); o != nil && v.Type().AssignableTo(c.out) {
				return v.Convert(c.out)
			}
		}
	case resSlice, resEventSlice:
		l := reflect.MakeSlice(c.out, 0, len(outs))
		for _, o := range outs {
			if v := reflect.ValueOf(o); o != nil && v.Type().AssignableTo(c.out.Elem()) {
				l = reflect.Append(l, v.Convert(c.out.Elem()))
			}
		}
		return l
	}
	return reflect.Zero(c.out)
}
