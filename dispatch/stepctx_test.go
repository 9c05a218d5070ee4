package dispatch_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/dispatch"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

func TestStepContext(t *testing.T) {
	var keys []string
	var runs []step.Run
	var stateKeys []string
	var cfg []any
	s := step.New(func(ctx step.Context, in *In) (*Out, error) {
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
		return &Out{}, err
	}, step.Name("s"))
	st := &flakyStore{MemoryStore: dispatch.NewMemoryStore(), failComplete: 2} // outputs not kept, outcome not recorded
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
