package engine_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/saap-go/agent/internal/engine"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

func TestStepContext(t *testing.T) {
	var keys []string
	var runs []step.Run
	var stateKeys []string
	var cfg []any
	s := step.New(func(ctx step.Context, in *In) ([]*Out, error) {
		keys = append(keys, ctx.IdempotencyKey())
		runs = append(runs, ctx.Run())
		cfg = append(cfg, ctx.Config())
		if ctx.Logger() == nil || ctx.Tracer() == nil {
			t.Error("no logger or tracer")
		}
		st := ctx.RunState()
		if err := st.Set(ctx, "a", map[string]int{"x": 1}); err != nil {
			return nil, err
		}
		if err := st.Set(ctx, "b", "gone"); err != nil {
			return nil, err
		}
		if err := st.Delete(ctx, "b"); err != nil {
			return nil, err
		}
		var got map[string]int
		if ok, err := st.Get(ctx, "a", &got); !ok || err != nil || got["x"] != 1 {
			t.Errorf("RunState().Get = %v, %v, %v", got, ok, err)
		}
		k, err := st.Keys(ctx)
		stateKeys = k
		return []*Out{{}}, err
	}, step.Name("s"))
	st := &flakyStore{Store: memstore.New(), failComplete: 2} // a list is recorded: its record fails, nothing is published
	h := agenttest.New(t, partial(t, "Ctx", s), agenttest.WithStore(st))
	res := h.Start(&In{})
	in := res.IDs("In")[0]
	h.Redeliver(res, in)

	if len(keys) != 2 || keys[0] != keys[1] {
		t.Fatalf("idempotency keys %q: want the same key for the re-run", keys)
	}
	if !strings.HasPrefix(keys[0], "Ctx/"+res.RunID()+"/s/") {
		t.Fatalf("idempotency key %q is not namespaced by class, run and step", keys[0])
	}
	tp := res.Topic()
	r := runs[0]
	agenttest.Equal(t, []string{r.Class, r.AgentID, r.ThreadID, r.DisplayID, r.RunID, r.Trigger.EventBase().EventID},
		[]string{"Ctx", tp.ID, tp.Thread, tp.Display, tp.Run, in})
	if cfg[0] != nil {
		t.Fatalf("Config() = %v, want nil with the default resolver", cfg[0])
	}
	if !slices.Contains(stateKeys, "a") || slices.Contains(stateKeys, "b") {
		t.Fatalf("run state keys %q: want a, not b", stateKeys)
	}
}

// A union list binds every event of its member types in stream order.
func TestUnionList(t *testing.T) {
	var got [][]string
	s := step.New(func(ctx step.Context, xs []step.Either[*In, *Out]) error {
		var names []string
		for _, x := range xs {
			names = append(names, event.Name(x.Event()))
		}
		got = append(got, names)
		return nil
	}, step.Name("s"))
	h := agenttest.New(t, partial(t, "UnionList", s))
	res := h.Start(&In{})
	h.Send(res, &Out{})
	h.Send(res, &In{})
	agenttest.Equal(t, got, [][]string{{"In"}, {"In", "Out"}, {"In", "Out", "In"}})
}

// unregisteredProgress is a display event type nobody registered.
type unregisteredProgress struct {
	event.DisplayEvent
	Percent int `json:"percent"`
}

// Emit of an unregistered type says which Go type and how to register it.
func TestEmitUnregisteredType(t *testing.T) {
	var emitErr error
	s := step.New(func(ctx step.Context, in *In) (*Out, error) {
		emitErr = ctx.Emit(&unregisteredProgress{Percent: 50})
		return &Out{}, nil
	}, step.Name("s"))
	h := agenttest.New(t, partial(t, "EmitUnregistered", s))
	res := h.Start(&In{})
	if !errors.Is(emitErr, engine.ErrUnregistered) {
		t.Fatalf("Emit(unregistered) = %v, want ErrUnregistered", emitErr)
	}
	for _, want := range []string{"*engine_test.unregisteredProgress", "event.MustRegister[engine_test.unregisteredProgress]()", "init"} {
		if !strings.Contains(emitErr.Error(), want) {
			t.Errorf("error %q does not mention %q", emitErr, want)
		}
	}
	if n := len(res.Display()); n != 0 {
		t.Errorf("%d display events published, want none", n)
	}
}

// A step's error reaches the end user only as the message the step chose;
// any other error text, and a panic's value, stay in the logs under the
// reference the published message names.
func TestFailureMessages(t *testing.T) {
	const secret = "postgres://admin:hunter2@db"
	cases := []struct {
		name string
		fn   func() error
		want string // the published message; "" means the generic one
	}{
		{"plain error", func() error { return errors.New("dial " + secret + ": refused") }, ""},
		{"user error", func() error {
			return fmt.Errorf("retrieve: %w", step.WithUserMessage(errors.New("dial "+secret), "the knowledge base is unavailable"))
		}, "the knowledge base is unavailable"},
		{"userf", func() error { return step.Userf("%d documents are too many", 7) }, "7 documents are too many"},
		{"panic", func() error { panic("index out of range at " + secret) }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := step.New(func(ctx step.Context, in *In) (*Out, error) { return nil, tc.fn() }, step.Name("s"))
			h := agenttest.New(t, partial(t, "Fails", s))
			res := h.Start(&In{})
			exc, ok := res.Terminal().(*event.ExceptionEvent)
			if !ok {
				t.Fatalf("terminal %v, want an ExceptionEvent", res.Terminal())
			}
			want := tc.want
			if want == "" {
				want = "the agent failed; reference " + exc.EventID
			}
			agenttest.Equal(t, exc.Message, want)
			for _, p := range res.Events() {
				data, err := event.Marshal(p.Event)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(data), "hunter2") {
					t.Errorf("published %s carries the secret: %s", event.Name(p.Event), data)
				}
			}
			xs := res.Executions()
			if len(xs) != 1 || xs[0].Err == nil || (tc.name != "userf" && !strings.Contains(xs[0].Err.Error(), "hunter2")) {
				t.Errorf("executions %+v: want the full error observed", xs)
			}
		})
	}
}
