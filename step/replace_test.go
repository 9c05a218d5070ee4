package step_test

import (
	"strings"
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

func TestWorkflowReplace(t *testing.T) {
	w, err := step.NewWorkflow("Replaced", step.New(begin), step.New(middle, step.MaxExecutions(2)), step.New(finish))
	if err != nil {
		t.Fatal(err)
	}
	stub := func(step.Context, *A) (*B, error) { return &B{N: 42}, nil }
	r, err := w.Replace("middle", stub)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Step("middle")
	if s == w.Step("middle") || s.MaxExecutions() != 2 || !s.Declares("B") || len(s.Params()) != 1 {
		t.Fatalf("replacement lost the step's declaration: max %d outputs %v", s.MaxExecutions(), s.Outputs())
	}
	if c := r.Candidates("A"); len(c) != 1 || c[0] != s {
		t.Fatalf("candidates of A = %v, want the replacement", c)
	}
	if r.Step("begin") != w.Step("begin") || w.Candidates("A")[0] != w.Step("middle") {
		t.Fatal("Replace changed the original workflow or the other steps")
	}
	out, err := s.Call(newCtx(), [][]event.Event{{&A{}}})
	if err != nil || len(out) != 1 || out[0].(*B).N != 42 {
		t.Fatalf("Call = %v, %v, want the stub's B", out, err)
	}

	cases := []struct {
		name string
		fn   any
		want []string
	}{
		{"middle", func(step.Context, *B) (*B, error) { return nil, nil }, []string{"step middle", "func(step.Context, *step_test.B) (*step_test.B, error)", "func(step.Context, *step_test.A) (*step_test.B, error)"}},
		{"middle", "not a function", []string{"step middle", "string, not a function"}},
		{"middle", nil, []string{"not a function"}},
		{"nope", stub, []string{`no step "nope"`, "begin, finish, middle"}},
	}
	for _, c := range cases {
		_, err := w.Replace(c.name, c.fn)
		for _, want := range c.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Replace(%s, %T) = %v, want an error containing %q", c.name, c.fn, err, want)
			}
		}
	}
}
