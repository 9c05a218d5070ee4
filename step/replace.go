package step

import (
	"fmt"
	"reflect"
	"strings"
)

// Replace returns a copy of w in which the step called name calls fn
// instead of its function; everything else (name, inputs, outputs,
// precondition, options) stays. fn must have exactly the type of the
// step's function. Tests use it to stub a step, as activities are mocked
// in workflow tests; the error says what does not fit.
func (w *Workflow) Replace(name string, fn any) (*Workflow, error) {
	old := w.byName[name]
	if old == nil {
		names := make([]string, 0, len(w.steps))
		for _, s := range w.steps {
			names = append(names, s.name)
		}
		return nil, fmt.Errorf("step: %s has no step %q (its steps: %s)", w.class, name, strings.Join(names, ", "))
	}
	s, err := old.withFunc(fn)
	if err != nil {
		return nil, err
	}
	nw := &Workflow{
		r:          w.r,
		class:      w.class,
		steps:      make([]*Step, len(w.steps)),
		byName:     make(map[string]*Step, len(w.byName)),
		candidates: make(map[string][]*Step, len(w.candidates)),
		starts:     w.starts,
		stops:      w.stops,
		hitlReq:    w.hitlReq,
		hitlResp:   w.hitlResp,
	}
	swap := func(x *Step) *Step {
		if x == old {
			return s
		}
		return x
	}
	for i, x := range w.steps {
		nw.steps[i] = swap(x)
	}
	for k, x := range w.byName {
		nw.byName[k] = swap(x)
	}
	for k, xs := range w.candidates {
		c := make([]*Step, len(xs))
		for i, x := range xs {
			c[i] = swap(x)
		}
		nw.candidates[k] = c
	}
	return nw, nil
}

// withFunc returns a copy of s that calls fn, which must have the type of
// s's function.
func (s *Step) withFunc(fn any) (*Step, error) {
	v := reflect.ValueOf(fn)
	if fn == nil || v.Kind() != reflect.Func || v.IsNil() {
		return nil, fmt.Errorf("step %s: the replacement is %T, not a function", s.name, fn)
	}
	if !s.fn.IsValid() {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, s.name)
	}
	if want := s.fn.Type(); v.Type() != want {
		return nil, fmt.Errorf("step %s: the replacement has type %s, but the step's function has type %s; give it the same parameters and results",
			s.name, v.Type(), want)
	}
	s.resolve()
	c := &Step{
		name:        s.name,
		description: s.description,
		icon:        s.icon,
		fn:          v,
		origin:      funcName(v),
		params:      s.params,
		pub:         s.pub,
		triggers:    s.triggers,
		outputs:     s.outputs,
		results:     s.results,
		pre:         s.pre,
		maxExec:     s.maxExec,
		stopOnError: s.stopOnError,
		loop:        s.loop,
		problems:    s.problems,
	}
	c.once.Do(func() {}) // resolved: the wire names are s's
	return c, nil
}
