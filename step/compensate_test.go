package step_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

func reserveA(ctx step.Context, s *Start) (*A, error) { return &A{N: 1}, nil }

func TestCompensateUndo(t *testing.T) {
	var gotStart *Start
	var gotA *A
	s := step.New(reserveA, step.Compensate(func(ctx step.Context, st *Start, a *A) error {
		gotStart, gotA = st, a
		return nil
	}))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if !s.HasCompensation() {
		t.Fatal("HasCompensation is false")
	}
	start, a := &Start{Question: "q"}, &A{N: 7}
	if err := s.Undo(newCtx(), [][]event.Event{{start}}, []event.Event{&Disp{}, a}); err != nil {
		t.Fatal(err)
	}
	if gotStart != start || gotA != a {
		t.Fatalf("compensation got %v, %v; want the step's input and output", gotStart, gotA)
	}
	// No output (the step returned nil): the result is passed as nil.
	if err := s.Undo(newCtx(), [][]event.Event{{start}}, nil); err != nil || gotA != nil {
		t.Fatalf("Undo without outputs: err %v, output %v; want nil, nil", err, gotA)
	}
}

func TestCompensateErrorAndPanic(t *testing.T) {
	boom := errors.New("boom")
	s := step.New(func(ctx step.Context, st *Start) error { return nil }, step.Name("Noop"),
		step.Compensate(func(ctx step.Context, st *Start) error { return boom }))
	if err := s.Undo(newCtx(), [][]event.Event{{&Start{}}}, nil); !errors.Is(err, boom) {
		t.Fatalf("Undo = %v, want boom", err)
	}
	p := step.New(func(ctx step.Context, st *Start) error { return nil }, step.Name("Noop"),
		step.Compensate(func(ctx step.Context, st *Start) error { panic("oops") }))
	var pe *step.PanicError
	if err := p.Undo(newCtx(), [][]event.Event{{&Start{}}}, nil); !errors.As(err, &pe) {
		t.Fatalf("Undo = %v, want a *PanicError", err)
	}
}

func TestCompensateValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		comp any
		want string
	}{
		{"not a function", 42, "not a function"},
		{"nil", nil, "not a function"},
		{"missing result", func(ctx step.Context, s *Start) error { return nil }, "must be func(step.Context, *step_test.Start, *step_test.A) error"},
		{"other input type", func(ctx step.Context, s *B, a *A) error { return nil }, "must be"},
		{"no error result", func(ctx step.Context, s *Start, a *A) {}, "must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := step.New(reserveA, step.Compensate(tc.comp))
			err := s.Err()
			var ve *step.ValidationError
			if !errors.As(err, &ve) || !ve.Has(step.CheckCompensation) {
				t.Fatalf("Err() = %v, want a compensation problem", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "hint:") {
				t.Fatalf("Err() = %q, want it to contain %q and a hint", err, tc.want)
			}
			if s.HasCompensation() || !s.DeclaresCompensation() {
				t.Fatal("an invalid compensation must be declared but not usable")
			}
		})
	}
	// Through NewWorkflow, the problem is reported with the others.
	_, err := step.NewWorkflow("T", step.New(reserveA, step.Compensate(1)),
		step.New(func(ctx step.Context, a *A) (*Done, error) { return nil, nil }, step.Name("Finish")))
	if err == nil || !strings.Contains(err.Error(), "compensation") {
		t.Fatalf("NewWorkflow = %v, want the compensation problem", err)
	}
}
