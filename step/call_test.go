package step_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

func TestCallBindsEveryKind(t *testing.T) {
	a1, b1, c1 := &A{N: 1}, &B{N: 2}, &C{N: 3}
	r1, r2 := &R{N: 4}, &R{N: 5}
	w1, w2 := &W{N: 6}, &W{N: 7}
	g := &Go{}
	var got []string
	s := step.New(func(ctx step.Context,
		a *A,
		b step.Maybe[*B],
		none step.Maybe[*C],
		rs []*R,
		ro step.Maybe[[]*R],
		empty step.Maybe[[]*R],
		ws [2]*W,
		u step.Either[*A, *B],
		u3 step.Either3[*A, *B, *C],
		ou step.Maybe[step.Either[*A, *C]],
		lu []step.Either[*B, *C],
		flow *Go,
	) error {
		ok := a == a1 && b.OK && b.Value == b1 && !none.OK && none.Value == nil &&
			len(rs) == 2 && rs[0] == r1 && rs[1] == r2 &&
			ro.OK && len(ro.Value) == 1 && ro.Value[0] == r2 &&
			!empty.OK && empty.Value == nil &&
			ws[0] == w1 && ws[1] == w2 &&
			u.B == b1 && u.A == nil && u.Event() == event.Event(b1) &&
			u3.C == c1 && u3.Event() == event.Event(c1) &&
			ou.OK && ou.Value.B == c1 && ou.Value.A == nil &&
			len(lu) == 2 && lu[0].A == b1 && lu[1].B == c1 &&
			flow == g
		got = append(got, map[bool]string{true: "ok", false: "mismatch"}[ok])
		return nil
	}, step.Name("all"))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	out, err := s.Call(newCtx(), [][]event.Event{
		evs(a1), evs(b1), evs(), evs(r1, r2), evs(r2), evs(), evs(w1, w2),
		evs(b1), evs(c1), evs(c1), evs(b1, c1), evs(g),
	})
	if err != nil || out != nil {
		t.Fatalf("Call = %v, %v", out, err)
	}
	if diff := cmp.Diff([]string{"ok"}, got); diff != "" {
		t.Errorf("binding (-want +got):\n%s", diff)
	}
}

func TestCallContext(t *testing.T) {
	ctx := newCtx()
	s := step.New(func(c step.Context, a *A) error {
		if c != step.Context(ctx) {
			return errors.New("another context")
		}
		if v, ok := step.Config[string](c); !ok || v != "config" {
			return errors.New("config not reachable")
		}
		if _, ok := step.Config[int](c); ok {
			return errors.New("config of the wrong type accepted")
		}
		return c.Emit(&Disp{Text: "chunk"})
	}, step.Name("ctx"))
	if _, err := s.Call(ctx, [][]event.Event{evs(&A{})}); err != nil {
		t.Fatal(err)
	}
	if len(ctx.emitted) != 1 {
		t.Errorf("emitted %d events, want 1", len(ctx.emitted))
	}
}

func TestCallResults(t *testing.T) {
	b1, c1 := &B{N: 1}, &C{N: 2}
	boom := errors.New("boom")
	cases := []struct {
		name    string
		fn      any
		opts    []step.Option
		want    []event.Event
		wantErr error
	}{
		{"error nil", func(step.Context, *A) error { return nil }, nil, nil, nil},
		{"error", func(step.Context, *A) error { return boom }, nil, nil, boom},
		{"pointer", func(step.Context, *A) (*B, error) { return b1, nil }, nil, []event.Event{b1}, nil},
		{"nil pointer", func(step.Context, *A) (*B, error) { return nil, nil }, nil, nil, nil},
		{"pointer and error", func(step.Context, *A) (*B, error) { return b1, boom }, nil, nil, boom},
		{"slice in order, nils dropped", func(step.Context, *A) ([]*B, error) { return []*B{b1, nil, {N: 9}}, nil }, nil,
			[]event.Event{b1, &B{N: 9}}, nil},
		{"empty slice", func(step.Context, *A) ([]*B, error) { return []*B{}, nil }, nil, nil, nil},
		{"event", func(step.Context, *A) (event.Event, error) { return c1, nil }, []step.Option{step.Emits((*C)(nil))}, []event.Event{c1}, nil},
		{"typed nil event", func(step.Context, *A) (event.Event, error) { return (*C)(nil), nil }, []step.Option{step.Emits((*C)(nil))}, nil, nil},
		{"events", func(step.Context, *A) ([]event.Event, error) { return []event.Event{c1, nil, (*B)(nil), b1}, nil },
			[]step.Option{step.Emits((*C)(nil), (*B)(nil))}, []event.Event{c1, b1}, nil},
		{"either", func(step.Context, *A) (step.Either[*B, *C], error) { return step.Other[*B](c1), nil }, nil, []event.Event{c1}, nil},
		{"either empty", func(step.Context, *A) (step.Either[*B, *C], error) { return step.Either[*B, *C]{}, nil }, nil, nil, nil},
		{"either list", func(step.Context, *A) ([]step.Either[*B, *C], error) {
			return []step.Either[*B, *C]{step.OneOf[*B, *C](b1), {}, step.Other[*B](c1)}, nil
		}, nil, []event.Event{b1, c1}, nil},
	}
	for _, c := range cases {
		s := step.New(c.fn, append(c.opts, step.Name("s"))...)
		if err := s.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		out, err := s.Call(newCtx(), [][]event.Event{evs(&A{})})
		if !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.wantErr)
		}
		if diff := cmp.Diff(c.want, out, cmp.AllowUnexported(event.Base{})); diff != "" {
			t.Errorf("%s: outputs (-want +got):\n%s", c.name, diff)
		}
	}
}

func TestCallRecoversPanics(t *testing.T) {
	boom := errors.New("boom")
	s := step.New(func(step.Context, *A) (*B, error) { panic(boom) }, step.Name("Panicky"))
	out, err := s.Call(newCtx(), [][]event.Event{evs(&A{})})
	var pe *step.PanicError
	if !errors.As(err, &pe) || out != nil {
		t.Fatalf("Call = %v, %v; want a *PanicError", out, err)
	}
	if pe.Step != "Panicky" || pe.Value != boom || !errors.Is(err, boom) {
		t.Errorf("PanicError = %+v", pe)
	}
	if !strings.Contains(string(pe.Stack), "TestCallRecoversPanics") || !strings.Contains(pe.Error(), "Panicky panicked: boom") {
		t.Errorf("stack or message missing: %q", pe.Error())
	}
	// A nil-pointer dereference is a runtime panic, recovered the same way.
	s = step.New(func(_ step.Context, a *A) error { var p *A; _ = p.N; return nil }, step.Name("Nil"))
	if _, err := s.Call(newCtx(), [][]event.Event{evs(&A{})}); !errors.As(err, &pe) {
		t.Errorf("runtime panic: %v", err)
	}
}

func TestCallRefusesBadArgs(t *testing.T) {
	s := step.New(func(step.Context, *A, step.Maybe[*B], []*R, [2]*W, step.Either[*A, *B]) error { return nil }, step.Name("s"))
	good := func() [][]event.Event {
		return [][]event.Event{evs(&A{}), evs(), evs(&R{}), evs(&W{}, &W{}), evs(&B{})}
	}
	if _, err := s.Call(newCtx(), good()); err != nil {
		t.Fatalf("good args: %v", err)
	}
	cases := []struct {
		name string
		mod  func([][]event.Event) [][]event.Event
		msg  string
	}{
		{"too few lists", func(a [][]event.Event) [][]event.Event { return a[:2] }, "2 argument lists for 5 parameters"},
		{"single empty", func(a [][]event.Event) [][]event.Event { a[0] = nil; return a }, "arg1 got 0 events, wants exactly 1"},
		{"single two", func(a [][]event.Event) [][]event.Event { a[0] = evs(&A{}, &A{}); return a }, "arg1 got 2 events"},
		{"single wrong type", func(a [][]event.Event) [][]event.Event { a[0] = evs(&B{}); return a }, "arg1 cannot take a *step_test.B"},
		{"single nil", func(a [][]event.Event) [][]event.Event { a[0] = evs(nil); return a }, "arg1 cannot take a <nil>"},
		{"single nil pointer", func(a [][]event.Event) [][]event.Event { a[0] = evs((*A)(nil)); return a }, "arg1 cannot take"},
		{"optional two", func(a [][]event.Event) [][]event.Event { a[1] = evs(&B{}, &B{}); return a }, "arg2 got 2 events, wants 0 or 1"},
		{"optional nil", func(a [][]event.Event) [][]event.Event { a[1] = evs(nil); return a }, "arg2 cannot take"},
		{"optional wrong type", func(a [][]event.Event) [][]event.Event { a[1] = evs(&A{}); return a }, "arg2 cannot take"},
		{"list empty", func(a [][]event.Event) [][]event.Event { a[2] = nil; return a }, "arg3 got 0 events, wants at least 1"},
		{"list wrong type", func(a [][]event.Event) [][]event.Event { a[2] = evs(&R{}, &A{}); return a }, "arg3 cannot take"},
		{"list nil", func(a [][]event.Event) [][]event.Event { a[2] = evs(nil); return a }, "arg3 cannot take"},
		{"fixed short", func(a [][]event.Event) [][]event.Event { a[3] = evs(&W{}); return a }, "arg4 got 1 events, wants exactly 2"},
		{"fixed long", func(a [][]event.Event) [][]event.Event { a[3] = evs(&W{}, &W{}, &W{}); return a }, "wants exactly 2"},
		{"union wrong type", func(a [][]event.Event) [][]event.Event { a[4] = evs(&C{}); return a }, "arg5 cannot take a *step_test.C"},
		{"union nil", func(a [][]event.Event) [][]event.Event { a[4] = evs(nil); return a }, "arg5 cannot take"},
	}
	for _, c := range cases {
		_, err := s.Call(newCtx(), c.mod(good()))
		if !errors.Is(err, step.ErrArgs) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want ErrArgs with %q", c.name, err, c.msg)
		}
	}
}

func TestCheck(t *testing.T) {
	var seen []int
	pre := func(ctx step.Context, b step.Maybe[*B], cs []*C) (bool, error) {
		seen = append(seen, len(cs))
		if len(cs) > 2 {
			return false, errors.New("too many")
		}
		if len(cs) == 2 {
			panic("two")
		}
		return b.OK, nil
	}
	s := step.New(Answer, step.Precondition(pre))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	ok, err := s.Check(newCtx(), [][]event.Event{evs(), evs(&C{})})
	if ok || err != nil {
		t.Errorf("without B: %v, %v", ok, err)
	}
	ok, err = s.Check(newCtx(), [][]event.Event{evs(&B{}), evs(&C{})})
	if !ok || err != nil {
		t.Errorf("with B: %v, %v", ok, err)
	}
	if ok, err = s.Check(newCtx(), [][]event.Event{evs(), evs(&C{}, &C{}, &C{})}); ok || err == nil || err.Error() != "too many" {
		t.Errorf("error: %v, %v", ok, err)
	}
	var pe *step.PanicError
	if ok, err = s.Check(newCtx(), [][]event.Event{evs(), evs(&C{}, &C{})}); ok || !errors.As(err, &pe) {
		t.Errorf("panic: %v, %v", ok, err)
	}
	if _, err = s.Check(newCtx(), [][]event.Event{evs()}); !errors.Is(err, step.ErrArgs) {
		t.Errorf("bad args: %v", err)
	}
	if diff := cmp.Diff([]int{1, 1, 3, 2}, seen); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	// No precondition: always ready.
	if ok, err := step.New(Answer).Check(newCtx(), nil); !ok || err != nil {
		t.Errorf("no precondition: %v, %v", ok, err)
	}
}

func TestCallConcurrent(t *testing.T) {
	// Pooled frames and temporaries must never leak values between calls.
	s := step.New(func(_ step.Context, a *A, b step.Maybe[*B], ws [2]*W, u step.Either[*A, *C]) ([]*C, error) {
		if b.OK && b.Value.N != a.N || ws[0].N != a.N || ws[1].N != a.N {
			return nil, errors.New("mixed arguments")
		}
		if (a.N%2 == 0) != (u.A != nil) || (u.A == nil) == (u.B == nil) {
			return nil, errors.New("mixed union")
		}
		return []*C{{N: a.N}}, nil
	}, step.Name("concurrent"))
	done := make(chan error)
	for g := range 8 {
		go func() {
			for i := range 200 {
				n := g*1000 + i
				var opt []event.Event
				if i%3 != 0 {
					opt = evs(&B{N: n})
				}
				var u event.Event = &C{N: n}
				if n%2 == 0 {
					u = &A{N: n}
				}
				out, err := s.Call(newCtx(), [][]event.Event{evs(&A{N: n}), opt, evs(&W{N: n}, &W{N: n}), evs(u)})
				if err != nil {
					done <- err
					return
				}
				if len(out) != 1 || out[0].(*C).N != n {
					done <- errors.New("wrong output")
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
