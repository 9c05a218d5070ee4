package step_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

type agent struct{ calls int }

func (a *agent) Retrieve(ctx step.Context, q *Start) (*A, error) {
	a.calls++
	return &A{N: len(q.Question)}, nil
}

func Answer(ctx step.Context, a *A) (*Done, error) { return &Done{Answer: "ok"}, nil }

func TestParamsKinds(t *testing.T) {
	s := step.New(func(ctx step.Context,
		a *A,
		b step.Maybe[*B],
		rs []*R,
		ro step.Maybe[[]*R],
		ws [2]*W,
		u step.Either[*A, *B],
		u3 step.Either3[*A, *B, *C],
		ou step.Maybe[step.Either[*A, *C]],
		lu []step.Either[*B, *C],
		g *Go,
	) error {
		return nil
	}, step.Name("kinds"))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	want := []step.Param{
		{Kind: step.Single, Names: []string{"A"}, Name: "arg1"},
		{Kind: step.Optional, Names: []string{"B"}, Name: "arg2"},
		{Kind: step.List, Names: []string{"R"}, Name: "arg3"},
		{Kind: step.OptionalList, Names: []string{"R"}, Name: "arg4"},
		{Kind: step.Fixed, Names: []string{"W"}, Size: 2, Name: "arg5"},
		{Kind: step.Single, Names: []string{"A", "B"}, Name: "arg6"},
		{Kind: step.Single, Names: []string{"A", "B", "C"}, Name: "arg7"},
		{Kind: step.Optional, Names: []string{"A", "C"}, Name: "arg8"},
		{Kind: step.List, Names: []string{"B", "C"}, Name: "arg9"},
		{Kind: step.Single, Names: []string{"Go"}, Name: "arg10"},
	}
	if diff := cmp.Diff(want, s.Params()); diff != "" {
		t.Errorf("Params (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"A", "B", "C", "Go", "R", "W"}, s.Triggers()); diff != "" {
		t.Errorf("Triggers (-want +got):\n%s", diff)
	}
	if !s.StopOnError() || s.MaxExecutions() != 0 || s.HasPrecondition() || s.PreconditionParams() != nil {
		t.Errorf("defaults: stopOnError=%v max=%d pre=%v", s.StopOnError(), s.MaxExecutions(), s.HasPrecondition())
	}
}

func TestNames(t *testing.T) {
	a := &agent{}
	cases := []struct {
		name string
		step *step.Step
		want string
	}{
		{"method value", step.New(a.Retrieve), "Retrieve"},
		{"function", step.New(Answer), "Answer"},
		{"option wins", step.New(Answer, step.Name("Final")), "Final"},
		{"closure with name", step.New(func(step.Context, *A) error { return nil }, step.Name("Inline")), "Inline"},
	}
	for _, c := range cases {
		if got := c.step.Name(); got != c.want {
			t.Errorf("%s: Name() = %q, want %q", c.name, got, c.want)
		}
		if err := c.step.Err(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestOptions(t *testing.T) {
	pre := func(ctx step.Context, b step.Maybe[*B], cs []*C) (bool, error) { return b.OK, nil }
	s := step.New(Answer, step.MaxExecutions(3), step.ContinueOnError(), step.Precondition(pre),
		step.Description("answers"), step.Icon("mage:robot"), step.Loop())
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if s.MaxExecutions() != 3 || s.StopOnError() || !s.HasPrecondition() || !s.Loop() {
		t.Errorf("options not applied: max=%d soe=%v pre=%v loop=%v", s.MaxExecutions(), s.StopOnError(), s.HasPrecondition(), s.Loop())
	}
	if s.Description() != "answers" || s.Icon() != "mage:robot" {
		t.Errorf("description %q icon %q", s.Description(), s.Icon())
	}
	want := []step.Param{
		{Kind: step.Optional, Names: []string{"B"}, Name: "arg1"},
		{Kind: step.List, Names: []string{"C"}, Name: "arg2"},
	}
	if diff := cmp.Diff(want, s.PreconditionParams()); diff != "" {
		t.Errorf("PreconditionParams (-want +got):\n%s", diff)
	}
	// Precondition events are not triggers.
	if diff := cmp.Diff([]string{"A"}, s.Triggers()); diff != "" {
		t.Errorf("Triggers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Done"}, s.Outputs()); diff != "" {
		t.Errorf("Outputs (-want +got):\n%s", diff)
	}
	if !s.Declares("Done") || s.Declares("A") {
		t.Error("Declares")
	}
}

func TestOutputsDeclared(t *testing.T) {
	cases := []struct {
		name string
		fn   any
		opts []step.Option
		want []string
	}{
		{"error only", func(step.Context, *A) error { return nil }, nil, nil},
		{"pointer", func(step.Context, *A) (*B, error) { return nil, nil }, nil, []string{"B"}},
		{"slice", func(step.Context, *A) ([]*B, error) { return nil, nil }, nil, []string{"B"}},
		{"either", func(step.Context, *A) (step.Either[*C, *B], error) { return step.Either[*C, *B]{}, nil }, nil, []string{"B", "C"}},
		{"either list", func(step.Context, *A) ([]step.Either[*C, *B], error) { return nil, nil }, nil, []string{"B", "C"}},
		{"event with emits", func(step.Context, *A) (event.Event, error) { return nil, nil },
			[]step.Option{step.Emits((*C)(nil), (*Done)(nil))}, []string{"C", "Done"}},
		{"events with emits", func(step.Context, *A) ([]event.Event, error) { return nil, nil },
			[]step.Option{step.Emits(&Disp{}, (*B)(nil))}, []string{"B", "Disp"}},
		{"pointer plus emits", func(step.Context, *A) (*B, error) { return nil, nil },
			[]step.Option{step.Emits((*C)(nil))}, []string{"B", "C"}},
	}
	for _, c := range cases {
		s := step.New(c.fn, append(c.opts, step.Name("s"))...)
		if err := s.Err(); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if diff := cmp.Diff(c.want, s.Outputs()); diff != "" {
			t.Errorf("%s: Outputs (-want +got):\n%s", c.name, diff)
		}
	}
}

func TestSignatureProblems(t *testing.T) {
	cases := []struct {
		name  string
		fn    any
		opts  []step.Option
		check step.Check
		msg   string // part of the message
		hint  string // part of the hint
	}{
		{"not a func", 42, nil, step.CheckSignature, "is a value of type int, not a function", "pass a function"},
		{"nil func", (func(step.Context, *A) error)(nil), nil, step.CheckSignature, "nil function", "pass a function"},
		{"no context", func(a *A) error { return nil }, nil, step.CheckSignature, "does not take a step.Context first", "first parameter ctx step.Context"},
		{"context.Context", func(ctx interface{ Done() <-chan struct{} }, a *A) error { return nil }, nil, step.CheckSignature, "step.Context first", "step.Context"},
		{"no events", func(step.Context) error { return nil }, nil, step.CheckSignature, "takes no events", "add the event"},
		{"variadic", func(step.Context, ...*A) error { return nil }, nil, step.CheckSignature, "variadic", "own parameter"},
		{"unregistered", func(step.Context, *Unregistered) error { return nil }, nil, step.CheckUnregistered, "not a registered event type", "event.MustRegister[Unregistered]()"},
		{"unregistered result", func(step.Context, *A) (*Unregistered, error) { return nil, nil }, nil, step.CheckUnregistered, "returns *step_test.Unregistered", "event.MustRegister[Unregistered]()"},
		{"non-pointer", func(step.Context, A) error { return nil }, nil, step.CheckSignature, "not a pointer to an event struct", "pointers to registered event types"},
		{"string param", func(step.Context, string) error { return nil }, nil, step.CheckSignature, "not a pointer to an event struct", "pointers"},
		{"array of 0", func(step.Context, [0]*W) error { return nil }, nil, step.CheckSignature, "size 0", "[2]*W"},
		{"optional array", func(step.Context, step.Maybe[[2]*W]) error { return nil }, nil, step.CheckSignature, "fixed-size list optional", "use *E"},
		{"nested maybe", func(step.Context, step.Maybe[step.Maybe[*A]]) error { return nil }, nil, step.CheckSignature, "nests Maybe", "use *E"},
		{"union twice", func(step.Context, step.Either[*A, *A]) error { return nil }, nil, step.CheckSignature, "lists *step_test.A twice", "once"},
		{"no error result", func(step.Context, *A) *B { return nil }, nil, step.CheckSignature, "not a supported result", "return error"},
		{"three results", func(step.Context, *A) (*B, *C, error) { return nil, nil, nil }, nil, step.CheckSignature, "not a supported result", "return error"},
		{"map result", func(step.Context, *A) (map[string]int, error) { return nil, nil }, nil, step.CheckSignature, "not a supported result", "(*E, error)"},
		{"event without emits", func(step.Context, *A) (event.Event, error) { return nil, nil }, nil, step.CheckSignature, "declares no output types", "step.Emits("},
		{"nil emits", func(step.Context, *A) error { return nil }, []step.Option{step.Emits(nil)}, step.CheckSignature, "nil interface", "(*Answer)(nil)"},
		{"max 0", func(step.Context, *A) error { return nil }, []step.Option{step.MaxExecutions(0)}, step.CheckSignature, "MaxExecutions(0)", "leave MaxExecutions out"},
		{"precondition result", func(step.Context, *A) error { return nil },
			[]step.Option{step.Precondition(func(step.Context, *A) bool { return true })}, step.CheckSignature, "not (bool, error)", "(true, nil)"},
		{"precondition not func", func(step.Context, *A) error { return nil },
			[]step.Option{step.Precondition("yes")}, step.CheckSignature, "precondition of s is a value of type string", "pass a function"},
		{"bad name", func(step.Context, *A) error { return nil }, []step.Option{step.Name("a.b")}, step.CheckName, `"a.b" contains '.'`, "Go identifier"},
	}
	for _, c := range cases {
		s := step.New(c.fn, append([]step.Option{step.Name("s")}, c.opts...)...)
		err := s.Err()
		var ve *step.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: Err() = %v, want a *ValidationError", c.name, err)
			continue
		}
		found := false
		for _, p := range ve.Problems {
			if p.Check == c.check && strings.Contains(p.Message, c.msg) && strings.Contains(p.Hint, c.hint) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no %s problem with %q / hint %q in:\n%v", c.name, c.check, c.msg, c.hint, err)
		}
		if !errors.Is(err, step.ErrInvalid) {
			t.Errorf("%s: errors.Is(err, ErrInvalid) = false", c.name)
		}
		if _, callErr := s.Call(newCtx(), nil); callErr == nil {
			t.Errorf("%s: Call on an invalid step did not fail", c.name)
		}
	}
}

func TestClosureNeedsName(t *testing.T) {
	s := step.New(func(step.Context, *A) error { return nil })
	var ve *step.ValidationError
	if !errors.As(s.Err(), &ve) || !ve.Has(step.CheckName) {
		t.Fatalf("Err() = %v, want a name problem", s.Err())
	}
	if !strings.Contains(ve.Problems[0].Hint, `step.Name("Answer")`) {
		t.Errorf("hint = %q", ve.Problems[0].Hint)
	}
}

type valueAgent struct{}

func (valueAgent) Plan(ctx step.Context, a *A) error { return nil }

type generic[T any] struct{}

func (*generic[T]) Handle(ctx step.Context, a *A) error { return nil }

func genericFunc[T any](ctx step.Context, a *A) error { return nil }

func TestNameDerivation(t *testing.T) {
	nested := func() any {
		return func() any { return func(step.Context, *A) error { return nil } }()
	}()
	cases := []struct {
		name string
		fn   any
		want string // "" means a closure: a name problem
	}{
		{"value receiver", valueAgent{}.Plan, "Plan"},
		{"method expression", (*agent).Retrieve, ""},
		{"generic method", (&generic[int]{}).Handle, "Handle"},
		{"generic function", genericFunc[string], "genericFunc"},
		{"nested closure", nested, ""},
	}
	for _, c := range cases {
		s := step.New(c.fn)
		if c.want == "" {
			var ve *step.ValidationError
			if !errors.As(s.Err(), &ve) || !(ve.Has(step.CheckName) || ve.Has(step.CheckSignature)) {
				t.Errorf("%s: Err() = %v, want a name or signature problem", c.name, s.Err())
			}
			continue
		}
		if s.Name() != c.want || s.Err() != nil {
			t.Errorf("%s: Name() = %q, Err() = %v; want %q", c.name, s.Name(), s.Err(), c.want)
		}
	}
}

func TestParamAndKindHelpers(t *testing.T) {
	p := step.Param{Kind: step.Optional, Names: []string{"A", "B"}}
	if !p.Accepts("B") || p.Accepts("C") {
		t.Error("Accepts")
	}
	names := map[step.Kind]string{step.Single: "Single", step.Optional: "Optional", step.List: "List",
		step.OptionalList: "OptionalList", step.Fixed: "Fixed", step.Kind(99): "Kind(99)"}
	for k, want := range names {
		if k.String() != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), k.String(), want)
		}
	}
	for k, want := range map[step.Kind]bool{step.Single: true, step.List: true, step.Fixed: true, step.Optional: false, step.OptionalList: false} {
		if k.Required() != want {
			t.Errorf("%v.Required() = %v", k, k.Required())
		}
	}
	e3 := step.Either3[*A, *B, *C]{B: &B{}}
	if e3.Event() != event.Event(e3.B) || (step.Either3[*A, *B, *C]{}).Event() != nil || (step.Either[*A, *B]{}).Event() != nil {
		t.Error("Either3.Event")
	}
	if p := (step.Problem{Message: "m"}); p.String() != "m" {
		t.Errorf("Problem without hint = %q", p.String())
	}
}

// Late is registered only after a step using it was declared.
type Late struct{ event.ControlEvent }

var lateOnce sync.Once

func TestDeclareBeforeRegister(t *testing.T) {
	// Package variables initialise before init functions run, so a step may
	// be declared before its event types are registered: names are looked
	// up when the workflow is built.
	s := step.New(func(step.Context, *Late) (*Done, error) { return nil, nil }, step.Name("late"))
	lateOnce.Do(func() { event.MustRegister[Late]() })
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Late"}, s.Triggers()); diff != "" {
		t.Errorf("Triggers (-want +got):\n%s", diff)
	}
}
