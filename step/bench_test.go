package step_test

import (
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// The Call benchmarks compare the cached reflective plan with a direct Go
// call of the same function (the baseline): BENCHMARKS.md reports the ratio.

func benchStep(ctx step.Context, a *A) (*B, error) { return &B{N: a.N}, nil }

func BenchmarkCallDirect(b *testing.B) {
	ctx := newCtx()
	a := &A{N: 1}
	b.ReportAllocs()
	for b.Loop() {
		out, err := benchStep(ctx, a)
		if err != nil || out == nil {
			b.Fatal(err)
		}
		sink = []event.Event{out}
	}
}

var sink []event.Event

func BenchmarkCall(b *testing.B) {
	ctx := newCtx()
	s := step.New(benchStep)
	args := [][]event.Event{{&A{N: 1}}}
	b.ReportAllocs()
	for b.Loop() {
		out, err := s.Call(ctx, args)
		if err != nil || len(out) != 1 {
			b.Fatal(err)
		}
		sink = out
	}
}

func benchKinds(ctx step.Context, a *A, o step.Maybe[*B], rs []*R, ws [2]*W, u step.Either[*A, *C]) ([]*B, error) {
	return []*B{{N: a.N + len(rs)}, {N: ws[1].N}}, nil
}

func BenchmarkCallKindsDirect(b *testing.B) {
	ctx := newCtx()
	a, bb, r1, r2, w1, w2, c := &A{}, &B{}, &R{}, &R{}, &W{}, &W{}, &C{}
	b.ReportAllocs()
	for b.Loop() {
		// The baseline builds the same argument values by hand.
		out, err := benchKinds(ctx, a, step.Maybe[*B]{Value: bb, OK: true}, []*R{r1, r2}, [2]*W{w1, w2}, step.Either[*A, *C]{B: c})
		if err != nil {
			b.Fatal(err)
		}
		res := make([]event.Event, 0, len(out))
		for _, o := range out {
			res = append(res, o)
		}
		sink = res
	}
}

func BenchmarkCallKinds(b *testing.B) {
	ctx := newCtx()
	s := step.New(benchKinds)
	args := [][]event.Event{{&A{}}, {&B{}}, {&R{}, &R{}}, {&W{}, &W{}}, {&C{}}}
	b.ReportAllocs()
	for b.Loop() {
		out, err := s.Call(ctx, args)
		if err != nil || len(out) != 2 {
			b.Fatal(err)
		}
		sink = out
	}
}

func BenchmarkCheck(b *testing.B) {
	ctx := newCtx()
	s := step.New(benchStep, step.Precondition(func(ctx step.Context, a *A, rs step.Maybe[[]*R]) (bool, error) {
		return len(rs.Value) < 3, nil
	}))
	args := [][]event.Event{{&A{}}, {&R{}}}
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := s.Check(ctx, args); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkCandidates(b *testing.B) {
	w, err := step.NewWorkflow("Test", named(begin, "begin"), named(middle, "middle"), named(finish, "finish"), named(maybeJoin, "also"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(w.Candidates("A")) != 2 {
			b.Fatal("candidates")
		}
	}
}

// BenchmarkNewWorkflow is the one-time registration cost: signature
// inspection and validation.
func BenchmarkNewWorkflow(b *testing.B) {
	r := &RAG{}
	b.ReportAllocs()
	for b.Loop() {
		_, err := step.NewWorkflow("RAGAgent", step.New(r.Condense), step.New(r.Retrieve), step.New(r.Answer))
		if err != nil {
			b.Fatal(err)
		}
	}
}
