package step

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/saap-go/agent/retry"

	"github.com/saap-go/agent/event"
)

// ErrArgs is returned by Call and Check when the arguments do not fit the
// parameters (a count or a type that the dispatcher should never produce).
var ErrArgs = errors.New("step: arguments do not match the parameters")

// ErrInvalid is returned by Call and Check on a step whose declaration has
// problems; NewWorkflow reports those problems in detail.
var ErrInvalid = errors.New("step: invalid declaration")

// ErrRunEnded is returned by Context.Emit, and is the cause of a step's
// cancelled context, once its run has published or received its terminal
// event: nothing may follow the end of a run.
var ErrRunEnded = errors.New("step: the run has ended")

// Step is a declared step: a Go function or method value plus the plan to
// call it, computed once by New. A Step is immutable and safe for concurrent
// use.
type Step struct {
	name        string
	description string
	displayName event.LocaleString
	displayDesc event.LocaleString
	icon        string
	fn          reflect.Value
	origin      string // the function's full name, for messages
	params      []binder
	pub         []Param
	triggers    []string
	outputs     []string
	results     resultPlan
	pre         *precondition
	maxExec     int
	stopOnError bool
	loop        bool
	retry       *retry.Policy
	problems    []Problem
	once        sync.Once // guards the wire names (resolve)

	comp         *compensation // see Compensate
	compDeclared bool
}

type precondition struct {
	fn     reflect.Value
	params []binder
	pub    []Param
}

// Option configures a step.
type Option func(*options)

type options struct {
	name        string
	description string
	displayName event.LocaleString
	displayDesc event.LocaleString
	icon        string
	maxExec     int
	maxSet      bool
	pre         any
	emits       []event.Event
	continueErr bool
	loop        bool
	retry       *retry.Policy
	comp        any // see Compensate
	compSet     bool
}

// Name sets the step's name, which is its identity in the workflow, in
// idempotency keys and in the graph. Closures need one; functions and
// method values default to their Go name.
func Name(name string) Option { return func(o *options) { o.name = name } }

// Description sets the text shown for the step in the discovery graph.
func Description(text string) Option { return func(o *options) { o.description = text } }

// Icon sets the icon shown for the step in the discovery graph (e.g.
// "mage:robot").
func Icon(icon string) Option { return func(o *options) { o.icon = icon } }

// MaxExecutions caps how often the step runs per run (n ≥ 1). It is also the
// bound that makes a cycle through the step acceptable.
func MaxExecutions(n int) Option {
	return func(o *options) { o.maxExec, o.maxSet = n, true }
}

// Precondition gates the step: fn is called after the step's inputs are
// available and its execution cap is not reached, and the step runs only if
// fn returns true. fn takes a Context first and then event parameters of any
// kind, and returns (bool, error). Its event types may be ones the step does
// not take: those are loaded for it but never trigger the step.
func Precondition(fn any) Option { return func(o *options) { o.pre = fn } }

// ContinueOnError turns stop-on-error off: a failing execution is recorded
// and logged, and the run carries on instead of ending with an
// ExceptionEvent.
func ContinueOnError() Option { return func(o *options) { o.continueErr = true } }

// Retry gives the step a retry policy: an execution that fails is tried
// again, after the policy's backoff, until it succeeds or its attempts are
// spent (or the error is one the policy does not retry); then it fails as a
// step without a policy fails, and its trigger is dead-lettered with the
// reason. Without Retry a failing step fails at its first attempt.
//
// Attempts are counted by the stream's server (they are the trigger's
// deliveries), so they survive a restart of the runner. An output that
// cannot be published (invalid, or too large) is never retried.
func Retry(p retry.Policy) Option { return func(o *options) { o.retry = &p } }

// Emits declares event types the step may return, given as samples such as
// (*Answer)(nil). Steps whose result type is event.Event or []event.Event
// need it; validation and the graph use the declaration.
func Emits(samples ...event.Event) Option {
	return func(o *options) { o.emits = append(o.emits, samples...) }
}

// Loop declares that a cycle through this step is intended and unbounded by
// MaxExecutions (for example a loop that ends on a counter in the run
// state).
func Loop() Option { return func(o *options) { o.loop = true } }

// New declares a step from a function or method value. The function takes a
// Context and then one parameter per input (see the package documentation
// for the kinds) and returns error, or a result and an error.
//
// New never panics: problems with the declaration are kept on the step and
// reported, all at once, by NewWorkflow (and by Err).
func New(fn any, opts ...Option) *Step {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	s := &Step{
		description: o.description,
		displayName: o.displayName,
		displayDesc: o.displayDesc,
		icon:        o.icon,
		stopOnError: !o.continueErr,
		loop:        o.loop,
	}
	v := reflect.ValueOf(fn)
	if fn != nil && v.Kind() == reflect.Func && !v.IsNil() {
		s.origin = funcName(v)
	}
	s.name = o.name
	if s.name == "" {
		s.name = defaultName(s.origin)
	}
	if o.name == "" && s.name == "" && s.origin != "" {
		s.addProblem(CheckName, "%s is a closure, so it has no name", s.origin).
			hint("give it one: step.New(fn, step.Name(\"Answer\"))")
	} else if err := checkName(s.name); err != "" && s.origin != "" {
		s.addProblem(CheckName, "the step name %q %s", s.name, err).
			hint("use a Go identifier such as \"Answer\"")
	}
	if o.retry != nil {
		if err := o.retry.Validate(); err != nil {
			s.addProblem(CheckSignature, "Retry: %v", err)
		} else {
			s.retry = o.retry
		}
	}
	if o.maxSet {
		if o.maxExec < 1 {
			s.addProblem(CheckSignature, "MaxExecutions(%d) must be at least 1", o.maxExec).
				hint("leave MaxExecutions out for no limit")
		} else {
			s.maxExec = o.maxExec
		}
	}

	a := analyzer{step: s}
	params, ok := a.function(v, fn, "step")
	if fn != nil && v.Kind() == reflect.Func && !v.IsNil() && !v.Type().IsVariadic() {
		// Results are planned even when a parameter is wrong, so that the
		// steps consuming them are not reported as well.
		s.results = a.results(v.Type(), o.emits)
	}
	s.params = params // kept for validation even when a parameter is wrong
	if ok {
		s.fn = v
	}
	if o.compSet {
		s.compDeclared = true
		var st reflect.Type
		if fn != nil && v.Kind() == reflect.Func && !v.IsNil() && !v.Type().IsVariadic() {
			st = v.Type()
		}
		s.comp = a.compensation(st, o.comp)
	}
	if o.pre != nil {
		pv := reflect.ValueOf(o.pre)
		params, ok := a.function(pv, o.pre, "precondition")
		if ok = a.preResults(pv, o.pre) && ok; ok || len(params) > 0 {
			s.pre = &precondition{params: params}
			if ok {
				s.pre.fn = pv
			}
		}
	}
	return s
}

// resolve looks up the wire names of the step's event types, once: at the
// first question about them, normally when the workflow is built, by which
// time every init function has registered its types.
func (s *Step) resolve() *Step {
	s.once.Do(func() {
		resolveParams(s, s.params, "step")
		s.pub = publicParams(s.params)
		s.triggers = triggerNames(s.params)
		s.outputs = resolveOutputs(s, s.results.types)
		if s.pre != nil {
			resolveParams(s, s.pre.params, "precondition")
			s.pre.pub = publicParams(s.pre.params)
		}
	})
	return s
}

// Name returns the step's name.
func (s *Step) Name() string { return s.name }

// Description returns the description set with the Description option.
func (s *Step) Description() string { return s.description }

// Icon returns the icon set with the Icon option.
func (s *Step) Icon() string { return s.icon }

// Params returns the event parameters in order (the Context excluded). The
// slice is shared: do not modify it.
func (s *Step) Params() []Param { return s.resolve().pub }

// Triggers returns every event name a parameter accepts, sorted and unique:
// the arrivals that make the step a candidate (exact names).
func (s *Step) Triggers() []string { return s.resolve().triggers }

// PreconditionParams returns the precondition's event parameters, or nil if
// the step has no precondition.
func (s *Step) PreconditionParams() []Param {
	if s.resolve().pre == nil {
		return nil
	}
	return s.pre.pub
}

// HasPrecondition reports whether the step has a precondition.
func (s *Step) HasPrecondition() bool { return s.pre != nil }

// MaxExecutions returns the per-run execution cap, 0 for none.
func (s *Step) MaxExecutions() int { return s.maxExec }

// RetryPolicy returns the step's retry policy, if it has one.
func (s *Step) RetryPolicy() (retry.Policy, bool) {
	if s.retry == nil {
		return retry.Policy{}, false
	}
	return *s.retry, true
}

// SingleOutput reports whether the step returns at most one event per
// execution (a pointer, an event.Event or an Either result, or none), as
// opposed to a list. The engine needs no record of such a step's execution
// beside the stream: its one output, under a deterministic id, says that it
// ran.
func (s *Step) SingleOutput() bool {
	switch s.results.shape {
	case resNone, resPointer, resEvent, resEither:
		return true
	}
	return false
}

// StopOnError reports whether a failure ends the run (the default).
func (s *Step) StopOnError() bool { return s.stopOnError }

// Loop reports whether the step was declared with Loop.
func (s *Step) Loop() bool { return s.loop }

// Outputs returns the declared output event names, sorted and unique.
func (s *Step) Outputs() []string { return s.resolve().outputs }

// Declares reports whether name is a declared output of the step.
func (s *Step) Declares(name string) bool {
	_, ok := slices.BinarySearch(s.resolve().outputs, name)
	return ok
}

// Err returns the step's declaration problems as a *ValidationError, or nil.
func (s *Step) Err() error {
	if len(s.resolve().problems) == 0 {
		return nil
	}
	return &ValidationError{Class: s.name, Problems: slices.Clone(s.problems)}
}

// PanicError is the error of a step or precondition that panicked.
type PanicError struct {
	Step  string
	Value any    // the value passed to panic
	Stack []byte // the goroutine's stack at the panic
}

// Error describes the panic without the stack.
func (e *PanicError) Error() string {
	return fmt.Sprintf("step %s panicked: %v", e.Step, e.Value)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Call binds args[i] to Params()[i] and runs the step. args[i] holds 0 or 1
// event for Single and Optional parameters, the events in arrival order for
// lists, and exactly Size events for Fixed; events are the concrete types
// the parameter accepts. A panic is recovered into a *PanicError. The
// outputs are returned flattened in order, without nils; on error none are.
func (s *Step) Call(ctx Context, args [][]event.Event) (out []event.Event, err error) {
	return s.CallAppend(ctx, args, nil)
}

// CallAppend is Call appending the outputs to dst, so that a caller with a
// buffer of its own spares the allocation of the result.
func (s *Step) CallAppend(ctx Context, args [][]event.Event, dst []event.Event) (out []event.Event, err error) {
	if !s.fn.IsValid() {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, s.name)
	}
	f, err := bindAll(ctx, s.params, args)
	if err != nil {
		return nil, fmt.Errorf("step %s: %w", s.name, err)
	}
	defer func() {
		f.release()
		if r := recover(); r != nil {
			out, err = nil, &PanicError{Step: s.name, Value: r, Stack: debug.Stack()}
		}
	}()
	return s.results.collect(s.fn.Call(f.in), dst)
}

// Check runs the precondition with args bound per PreconditionParams. A step
// without a precondition passes. A panic is recovered into a *PanicError.
func (s *Step) Check(ctx Context, args [][]event.Event) (ok bool, err error) {
	if s.pre == nil {
		return true, nil
	}
	if !s.pre.fn.IsValid() {
		return false, fmt.Errorf("%w: precondition of %s", ErrInvalid, s.name)
	}
	f, err := bindAll(ctx, s.pre.params, args)
	if err != nil {
		return false, fmt.Errorf("precondition of %s: %w", s.name, err)
	}
	defer func() {
		f.release()
		if r := recover(); r != nil {
			ok, err = false, &PanicError{Step: s.name, Value: r, Stack: debug.Stack()}
		}
	}()
	res := s.pre.fn.Call(f.in)
	if e := res[1].Interface(); e != nil {
		return false, e.(error)
	}
	return res[0].Bool(), nil
}

func (s *Step) addProblem(check Check, format string, a ...any) *Problem {
	s.problems = append(s.problems, Problem{Check: check, Step: s.name, Message: fmt.Sprintf(format, a...)})
	return &s.problems[len(s.problems)-1]
}

func (p *Problem) hint(h string) { p.Hint = h }

// funcName is the runtime name of a function value, e.g.
// "example.com/rag.(*RAG).Retrieve-fm".
func funcName(v reflect.Value) string {
	f := runtime.FuncForPC(v.Pointer())
	if f == nil {
		return ""
	}
	return f.Name()
}

// defaultName derives a step name from a function's runtime name: the last
// element, without the method-value suffix; "" for closures.
func defaultName(full string) string {
	if full == "" {
		return ""
	}
	if i := strings.LastIndex(full, "/"); i >= 0 {
		full = full[i+1:]
	}
	if i := strings.Index(full, "["); i >= 0 { // generic instantiation
		j := strings.LastIndex(full, "]")
		full = full[:i] + full[j+1:]
	}
	full = strings.TrimSuffix(full, "-fm")
	parts := strings.Split(full, ".")
	last := parts[len(parts)-1]
	if isClosureName(last) {
		return ""
	}
	for _, p := range parts[1:] {
		if isClosureName(p) {
			return ""
		}
	}
	return last
}

func isClosureName(s string) bool {
	s = strings.TrimPrefix(s, "func")
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// checkName returns why name is unusable, or "".
func checkName(name string) string {
	if name == "" {
		return "is empty"
	}
	for _, r := range name {
		switch {
		case r == '.' || r == '*' || r == '>' || r == '/':
			return fmt.Sprintf("contains %q", r)
		case r <= ' ' || r == 0x7f:
			return "contains whitespace or a control character"
		}
	}
	return ""
}
