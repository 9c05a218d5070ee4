package step

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/saap-go/agent/event"
)

var (
	contextType = reflect.TypeFor[Context]()
	errorType   = reflect.TypeFor[error]()
	eventType   = reflect.TypeFor[event.Event]()
	boolType    = reflect.TypeFor[bool]()
)

// member is one accepted event type of a parameter.
type member struct {
	name string       // wire name
	typ  reflect.Type // the Go pointer type, e.g. *RetrieveEvent
	bad  bool         // not an event type (already reported)
}

// binder is the cached plan for one event parameter: how to turn the bound
// events into the reflect.Value the function takes.
type binder struct {
	Param
	typ     reflect.Type // the parameter's Go type
	members []member
	maybe   bool         // wrapped in Maybe
	inner   reflect.Type // type inside Maybe (== typ when !maybe)
	union   reflect.Type // the Either type of a single value or of list elements, or nil
	pool    *sync.Pool   // temporaries of the value types (Maybe, Either, arrays)
}

// analyzer inspects signatures and records problems on its step.
type analyzer struct{ step *Step }

// label names the step or its precondition in messages, with the
// function's type: "step Answer (func(step.Context, *A) error)".
func (a analyzer) label(what string, t reflect.Type) string {
	name := a.step.name
	switch {
	case name == "":
		return fmt.Sprintf("the %s %s", what, t)
	case what == "precondition":
		return fmt.Sprintf("the precondition of %s (%s)", name, t)
	}
	return fmt.Sprintf("step %s (%s)", name, t)
}

// whose names the step or its precondition for parameter messages.
func whose(s *Step, what string) string {
	switch {
	case s.name == "":
		return "the " + what
	case what == "precondition":
		return "the precondition of " + s.name
	}
	return "step " + s.name
}

// function checks that fn is a func taking (Context, event params...) and
// returns the parameter plans.
func (a analyzer) function(v reflect.Value, fn any, what string) ([]binder, bool) {
	if fn == nil || v.Kind() != reflect.Func {
		a.step.addProblem(CheckSignature, "%s is a value of type %T, not a function", whose(a.step, what), fn).
			hint("pass a function or a method value, e.g. step.New(agent.Answer)")
		return nil, false
	}
	if v.IsNil() {
		a.step.addProblem(CheckSignature, "%s is a nil function", whose(a.step, what)).
			hint("pass a function or a method value, e.g. step.New(agent.Answer)")
		return nil, false
	}
	t := v.Type()
	if t.IsVariadic() {
		a.step.addProblem(CheckSignature, "%s is variadic", a.label(what, t)).
			hint("declare each input as its own parameter; use a slice type for a list")
		return nil, false
	}
	if t.NumIn() == 0 || t.In(0) != contextType {
		a.step.addProblem(CheckSignature, "%s does not take a step.Context first", a.label(what, t)).
			hint("make the first parameter ctx step.Context")
		return nil, false
	}
	ok := true
	var params []binder
	for i := 1; i < t.NumIn(); i++ {
		b, good := a.param(t.In(i), i, what)
		ok = ok && good
		params = append(params, b)
	}
	if ok && what == "step" && len(params) == 0 {
		a.step.addProblem(CheckSignature, "%s takes no events, so nothing can trigger it", a.label(what, t)).
			hint("add the event that should start it, e.g. msg *event.UserMessageEvent")
		ok = false
	}
	return params, ok
}

// param plans one event parameter at position i.
func (a analyzer) param(t reflect.Type, i int, what string) (binder, bool) {
	b := binder{typ: t, inner: t, pool: new(sync.Pool)}
	b.Name = fmt.Sprintf("arg%d", i)
	unsupported := func(why string) (binder, bool) {
		a.step.addProblem(CheckSignature, "parameter %d of %s has the type %s, which %s", i, whose(a.step, what), t, why).
			hint("use *E, step.Maybe[*E], []*E, step.Maybe[[]*E], [N]*E or step.Either[*A, *B] with registered event types E")
		return b, false
	}
	if t.Implements(maybeIface) {
		b.maybe = true
		b.inner = t.Field(0).Type
		if b.inner.Implements(maybeIface) {
			return unsupported("nests Maybe")
		}
	}
	in := b.inner
	switch {
	case in.Kind() == reflect.Slice:
		b.Kind = List
		if b.maybe {
			b.Kind = OptionalList
		}
		ok := a.elements(&b, in.Elem(), i, what)
		return b, ok
	case in.Kind() == reflect.Array:
		if b.maybe {
			return unsupported("makes a fixed-size list optional (it never blocks anyway until complete)")
		}
		b.Kind = Fixed
		b.Size = in.Len()
		if b.Size == 0 {
			a.step.addProblem(CheckSignature, "parameter %d of %s is the array %s of size 0, which can never be filled", i, whose(a.step, what), t).
				hint("give the array the number of events to wait for, e.g. [2]*W")
			return b, false
		}
		ok := a.elements(&b, in.Elem(), i, what)
		return b, ok
	default:
		b.Kind = Single
		if b.maybe {
			b.Kind = Optional
		}
		ok := a.elements(&b, in, i, what)
		return b, ok
	}
}

// elements resolves the event type(s) of one value or of list elements: a
// registered event pointer or an Either of them.
func (a analyzer) elements(b *binder, t reflect.Type, i int, what string) bool {
	if t.Implements(eitherIface) && t.Kind() == reflect.Struct {
		b.union = t
		ok := true
		for f := range t.Fields() {
			m, good := a.eventMember(f.Type, i, what)
			ok = ok && good
			b.members = append(b.members, m)
		}
		if ok {
			for j, m := range b.members {
				if slices.ContainsFunc(b.members[:j], func(o member) bool { return o.typ == m.typ }) {
					a.step.addProblem(CheckSignature, "parameter %d of %s lists %s twice in its union", i, whose(a.step, what), m.typ).
						hint("name each event type once")
					ok = false
				}
			}
		}
		return ok
	}
	m, ok := a.eventMember(t, i, what)
	b.members = []member{m}
	return ok
}

// eventMember checks that t can be an event type. Its wire name is looked
// up later, by resolve, so that steps may be declared before their event
// types are registered (package variables initialise before init runs).
func (a analyzer) eventMember(t reflect.Type, i int, what string) (member, bool) {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		a.step.addProblem(CheckSignature, "parameter %d of %s has the type %s, which is not a pointer to an event struct", i, whose(a.step, what), t).
			hint("declare inputs as pointers to registered event types, e.g. q *QuestionEvent")
		return member{typ: t, bad: true}, false
	}
	return member{typ: t}, true
}

// resolveParams looks up the wire names of the parameters' event types and
// reports the unregistered ones.
func resolveParams(s *Step, bs []binder, what string) {
	for i := range bs {
		b := &bs[i]
		b.Names = make([]string, 0, len(b.members))
		for j := range b.members {
			m := &b.members[j]
			if m.bad {
				continue
			}
			if m.name == "" {
				name, ok := wireName(m.typ)
				if !ok {
					s.addProblem(CheckUnregistered, "parameter %d of %s uses %s, which is not a registered event type", i+1, whose(s, what), m.typ).
						hint(fmt.Sprintf("register it before building the workflow, e.g. in init: event.MustRegister[%s]()", m.typ.Elem().Name()))
					name = m.typ.Elem().Name()
				}
				m.name = name
			}
			b.Names = append(b.Names, m.name)
		}
	}
}

// wireName is the registered wire name of the event pointer type t.
func wireName(t reflect.Type) (string, bool) {
	if t.Kind() == reflect.Pointer {
		if et, ok := event.TypeByGo(t.Elem()); ok {
			return et.Name, true
		}
	}
	if et, ok := event.TypeByGo(t); ok {
		return et.Name, true
	}
	return "", false
}

// publicParams exposes the parameter descriptions.
func publicParams(bs []binder) []Param {
	if len(bs) == 0 {
		return nil
	}
	out := make([]Param, len(bs))
	for i, b := range bs {
		out[i] = b.Param
	}
	return out
}

// triggerNames is the sorted set of every accepted name.
func triggerNames(bs []binder) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Names...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// resultShape is how a step's results turn into outputs.
type resultShape int

const (
	resNone       resultShape = iota // error only
	resPointer                       // *X
	resSlice                         // []*X
	resEvent                         // event.Event
	resEventSlice                    // []event.Event
	resEither                        // Either[...]
	resEitherList                    // []Either[...]
)

// resultPlan is the cached plan for a step's results.
type resultPlan struct {
	shape resultShape
	types []reflect.Type // declared output types (result type plus Emits)
}

// resolveOutputs looks up the wire names of the declared outputs, sorted
// and unique, and reports the unregistered ones.
func resolveOutputs(s *Step, types []reflect.Type) []string {
	var names []string
	for _, t := range types {
		name, ok := wireName(t)
		if !ok {
			s.addProblem(CheckUnregistered, "%s returns %s, which is not a registered event type", whose(s, "step"), t).
				hint(fmt.Sprintf("register it before building the workflow, e.g. in init: event.MustRegister[%s]()", t.Elem().Name()))
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// results plans the result list of a step.
func (a analyzer) results(t reflect.Type, emits []event.Event) resultPlan {
	var rp resultPlan
	emitted := func() {
		for _, e := range emits {
			if e == nil {
				a.step.addProblem(CheckSignature, "step.Emits of %s got a nil interface", whose(a.step, "step")).
					hint("pass typed samples such as (*Answer)(nil)")
				continue
			}
			if t, ok := a.resultMember(reflect.TypeOf(e)); ok {
				rp.types = append(rp.types, t)
			}
		}
	}
	bad := func() resultPlan {
		// Keep what can be told of the outputs, so that the steps consuming
		// them are not reported too.
		if n := t.NumOut(); n > 0 && t.Out(0).Kind() == reflect.Pointer && t.Out(0).Elem().Kind() == reflect.Struct {
			rp.types = append(rp.types, t.Out(0))
		}
		emitted()
		a.step.addProblem(CheckSignature, "%s returns %s, which is not a supported result", a.label("step", t), resultList(t)).
			hint("return error, (*E, error), ([]*E, error), (step.Either[*A, *B], error), or (event.Event, error) / ([]event.Event, error) with step.Emits(...)")
		return rp
	}
	n := t.NumOut()
	if n == 0 || n > 2 || t.Out(n-1) != errorType {
		return bad()
	}
	if n == 2 {
		out := t.Out(0)
		add := func(t reflect.Type) bool {
			m, ok := a.resultMember(t)
			if ok {
				rp.types = append(rp.types, m)
			}
			return ok
		}
		switch {
		case out == eventType:
			rp.shape = resEvent
		case out.Kind() == reflect.Slice && out.Elem() == eventType:
			rp.shape = resEventSlice
		case out.Implements(eitherIface) && out.Kind() == reflect.Struct:
			rp.shape = resEither
			for f := range out.Fields() {
				add(f.Type)
			}
		case out.Kind() == reflect.Slice && out.Elem().Implements(eitherIface) && out.Elem().Kind() == reflect.Struct:
			rp.shape = resEitherList
			for f := range out.Elem().Fields() {
				add(f.Type)
			}
		case out.Kind() == reflect.Pointer:
			rp.shape = resPointer
			add(out)
		case out.Kind() == reflect.Slice && out.Elem().Kind() == reflect.Pointer:
			rp.shape = resSlice
			add(out.Elem())
		default:
			return bad()
		}
	}
	emitted()
	if (rp.shape == resEvent || rp.shape == resEventSlice) && len(emits) == 0 {
		a.step.addProblem(CheckSignature, "%s returns %s but declares no output types", whose(a.step, "step"), t.Out(0)).
			hint("list what it may return: step.Emits((*A)(nil), (*B)(nil))")
	}
	return rp
}

// resultMember checks that t can be an output event type.
func (a analyzer) resultMember(t reflect.Type) (reflect.Type, bool) {
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		a.step.addProblem(CheckSignature, "%s returns %s, which is not a pointer to an event struct", whose(a.step, "step"), t).
			hint("return pointers to registered event types, e.g. *AnswerEvent")
		return nil, false
	}
	return t, true
}

// preResults checks that a precondition returns (bool, error).
func (a analyzer) preResults(v reflect.Value, fn any) bool {
	if fn == nil || v.Kind() != reflect.Func || v.IsNil() {
		return false // reported by function
	}
	t := v.Type()
	if t.NumOut() != 2 || t.Out(0) != boolType || t.Out(1) != errorType {
		a.step.addProblem(CheckSignature, "%s returns %s, not (bool, error)", a.label("precondition", t), resultList(t)).
			hint("return (true, nil) to let the step run, (false, nil) to wait")
		return false
	}
	return true
}

func resultList(t reflect.Type) string {
	if t.NumOut() == 0 {
		return "nothing"
	}
	parts := make([]string, t.NumOut())
	for i := range parts {
		parts[i] = t.Out(i).String()
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
