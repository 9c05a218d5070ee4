package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/retry"
	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"

	"go.uber.org/goleak"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type (
	In struct {
		event.ControlEvent
		N int `json:"n,omitempty"`
	}
	Out  struct{ event.ControlEvent }
	Out2 struct{ event.ControlEvent }
)

func init() {
	event.MustRegister[In]()
	event.MustRegister[Out]()
	event.MustRegister[Out2]()
}

func partial(t *testing.T, class string, steps ...*step.Step) *step.Workflow {
	t.Helper()
	w, err := step.NewPartialWorkflow(class, steps...)
	if err != nil {
		t.Fatalf("NewPartialWorkflow: %v", err)
	}
	return w
}

// flakyStore fails chosen operations a number of times.
type flakyStore struct {
	*memstore.Store
	mu           sync.Mutex
	failComplete int
	failClaim    int
	failSetMany  int
}

var errFlaky = errors.New("store unavailable")

// take uses up one of the failures *n holds, and reports whether there was
// one.
func (s *flakyStore) take(n *int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *n > 0 {
		*n--
		return true
	}
	return false
}

func (s *flakyStore) SetMany(ctx context.Context, sc store.Scope, entries []store.Entry) error {
	if s.take(&s.failSetMany) {
		return errFlaky
	}
	return s.Store.SetMany(ctx, sc, entries)
}

func (s *flakyStore) Claim(ctx context.Context, run store.RunKey, req store.ClaimRequest) (store.ClaimResult, error) {
	if s.take(&s.failClaim) {
		return store.ClaimResult{}, errFlaky
	}
	return s.Store.Claim(ctx, run, req)
}

// Record is a claim and a completion: it fails while failClaim, then
// failComplete, lasts.
func (s *flakyStore) Record(ctx context.Context, run store.RunKey, stepName, key string, o store.Outcome) (store.ClaimResult, error) {
	if s.take(&s.failClaim) || s.take(&s.failComplete) {
		return store.ClaimResult{}, errFlaky
	}
	return s.Store.Record(ctx, run, stepName, key, o)
}

func (s *flakyStore) Complete(ctx context.Context, run store.RunKey, stepName, key string, o store.Outcome) error {
	if s.take(&s.failComplete) {
		return errFlaky
	}
	return s.Store.Complete(ctx, run, stepName, key, o)
}

// streamCount counts the stored control messages of a run named name.
func streamCount(t *testing.T, h *agenttest.Harness, res *agenttest.Result, name string) int {
	t.Helper()
	class := res.Topic().Class
	filter, err := topic.AgentPattern{Class: class, Run: res.RunID(), Type: topic.Control, Name: name}.Subject()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for seq := uint64(1); ; {
		m, err := h.Bus().NextMsg(t.Context(), topic.StreamName(class), filter, seq)
		if errors.Is(err, bus.ErrNotFound) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		seq = m.Seq + 1
	}
}

// An execution that was claimed but not completed runs
// again on redelivery, as the same execution, and re-publishes the same ids.
func TestInterruptedExecutionRerunsWithSameIDs(t *testing.T) {
	calls := 0
	s := step.New(func(ctx step.Context, in *In) ([]*Out, error) {
		calls++
		return []*Out{{}, {}}, nil
	}, step.Name("s"), step.MaxExecutions(1))
	st := &flakyStore{Store: memstore.New(), failComplete: 2} // outputs not kept, outcome not recorded
	h := agenttest.New(t, partial(t, "Rerun", s), agenttest.WithStore(st))
	res := h.Start(&In{}) // the outcome cannot be recorded: the trigger is Nak'ed
	first := res.IDs("Out")
	if len(first) != 2 {
		t.Fatalf("first attempt published %d Out, want 2", len(first))
	}
	h.Redeliver(res, res.IDs("In")[0])
	agenttest.Equal(t, calls, 2)
	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
		{Step: "s", Inputs: res.IDs("In")},
		{Step: "s", Inputs: res.IDs("In"), Rerun: true},
	})
	agenttest.Equal(t, res.IDs("Out"), first) // the same ids again
	agenttest.Equal(t, streamCount(t, h, res, "Out"), 2)
	n, err := st.Count(t.Context(), res.RunKey(), "s")
	if err != nil || n != 1 {
		t.Fatalf("counter = %d, %v; want 1: a re-run takes no new slot", n, err)
	}
	// Completed now: a third delivery does nothing.
	h.Redeliver(res, res.IDs("In")[0])
	agenttest.Equal(t, calls, 2)
}

// A transient store failure Naks the delivery with a backoff; the redelivery
// completes the work. On the first delivery a step returning a list runs
// before its one store write (the record): when that fails nothing is published, and the
// redelivery, which claims first, runs it again.
func TestTransientStoreFailureNaks(t *testing.T) {
	calls := 0
	s := step.New(func(ctx step.Context, in *In) ([]*Out, error) { calls++; return []*Out{{}}, nil }, step.Name("s"))
	st := &flakyStore{Store: memstore.New(), failClaim: 1}
	h := agenttest.New(t, partial(t, "Nak", s), agenttest.WithStore(st))
	res := h.Start(&In{})
	agenttest.Equal(t, calls, 1)
	agenttest.Equal(t, res.Count("Out"), 0)
	if h.Bus().Pending() != 0 {
		t.Fatalf("%d deliveries pending before the Nak delay passed", h.Bus().Pending())
	}
	h.Advance(time.Second) // the first Nak delay
	agenttest.Equal(t, calls, 2)
	agenttest.Equal(t, res.Count("Out"), 1)
}

// platformConfig resolves an empty configuration as the configuration RPC
// would: not Static, so the start stores it.
type platformConfig struct{}

func (platformConfig) Resolve(context.Context, step.Run) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}
func (platformConfig) Decode(json.RawMessage) (any, error) { return nil, nil }

// A start's run-context write (here its configuration, which a resolver
// that is not Static makes it store) goes on while the first step runs (the store
// is not in process): the step's reads of the run context wait for it, and
// when it fails nothing of the step is recorded or published. The
// redelivery writes it again and the run goes on, its output published once.
func TestSeedWriteFailureRedelivers(t *testing.T) {
	var seen []string
	s := step.New(func(ctx step.Context, m *event.UserMessageEvent) (*Out, error) {
		var msgs []json.RawMessage
		ok, err := ctx.RunState().Get(ctx, "messages", &msgs)
		if err != nil {
			return nil, err
		}
		seen = append(seen, fmt.Sprintf("%v/%d", ok, len(msgs)))
		return &Out{}, nil
	}, step.Name("s"))
	st := &flakyStore{Store: memstore.New(), failSetMany: 1}
	h := agenttest.New(t, partial(t, "Seed", s), agenttest.WithStore(st), agenttest.WithConfigResolver(platformConfig{}))
	res := h.Start(&event.UserMessageEvent{Messages: []event.ChatMessage{event.Text(event.RoleUser, "hi")}})
	agenttest.Equal(t, res.Count("Out"), 0)
	h.Advance(time.Second) // the first Nak delay
	agenttest.Equal(t, res.Count("Out"), 1)
	// The first execution's read failed with the write; the second saw it.
	agenttest.Equal(t, seen, []string{"true/1"})
}

// recorder is a Delivery that records how it was settled.
type recorder struct {
	msg       bus.Msg
	settled   string
	reason    string
	delivered uint64 // 0: the first delivery
}

func (d *recorder) Msg() *bus.Msg             { return &d.msg }
func (d *recorder) Seq() uint64               { return 1 }
func (d *recorder) NumDelivered() uint64      { return max(d.delivered, 1) }
func (d *recorder) Ack(context.Context) error { d.settled = "ack"; return nil }
func (d *recorder) Nak(time.Duration) error   { d.settled = "nak"; return nil }
func (d *recorder) InProgress() error         { return nil }
func (d *recorder) Term(r string) error       { d.settled, d.reason = "term", r; return nil }
func (d *recorder) DeadLetter(_ context.Context, r string) error {
	d.settled, d.reason = "deadletter", r
	return nil
}

func TestHandleDeadLettersBadMessages(t *testing.T) {
	s := step.New(func(ctx step.Context, in *In) (*Out, error) { return &Out{}, nil }, step.Name("s"))
	h := agenttest.New(t, partial(t, "Poison", s))
	good, _ := event.Marshal(&In{ControlEvent: event.ControlEvent{Base: event.Base{EventID: "e1", CreatedAt: 1}}})
	for _, tc := range []struct {
		name, subject string
		data          []byte
		reason        string
	}{
		{"unparsable subject", "agent.Poison.x", good, "subject does not parse"},
		{"foreign class", "agent.Other.a.t.d.r.control_event.In.e1", good, "not a control event of agent class Poison"},
		{"display subject", "agent.Poison.a.t.d.r.display_event.In.e1", good, "not a control event of agent class Poison"},
		{"undecodable payload", "agent.Poison.a.t.d.r.control_event.In.e1", []byte(`{"_event_name":`), "does not decode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &recorder{msg: bus.Msg{Subject: tc.subject, Data: tc.data}}
			h.Handle(t.Context(), d)
			if d.settled != "deadletter" || !strings.Contains(d.reason, tc.reason) {
				t.Fatalf("settled %s (%q), want a dead letter mentioning %q", d.settled, d.reason, tc.reason)
			}
		})
	}
}

func TestMissingConfigEndsTheRun(t *testing.T) {
	s := step.New(func(ctx step.Context, in *In) (*Out, error) { return &Out{}, nil }, step.Name("s"))
	h := agenttest.New(t, partial(t, "NoConfig", s))
	res := h.NewRun()
	h.Send(res, &In{})
	exc, ok := res.Terminal().(*event.ExceptionEvent)
	if !ok || !strings.Contains(exc.Message, engine.ConfigMissing+" for event In and topic agent.NoConfig.") {
		t.Fatalf("terminal = %#v, want an ExceptionEvent saying %q", res.Terminal(), engine.ConfigMissing)
	}
	agenttest.Equal(t, res.Steps(), []string(nil))
	agenttest.Equal(t, res.Ended(), store.Crashed)
	// A late event of the ended run is skipped silently.
	h.Send(res, &In{})
	agenttest.Equal(t, res.Count("ExceptionEvent"), 1)
}

// A failing precondition is a failing step, and the other candidates are
// still evaluated.
func TestFailingPrecondition(t *testing.T) {
	build := func(t *testing.T, opts ...step.Option) (*agenttest.Harness, *int) {
		otherChecks := 0
		a := step.New(func(ctx step.Context, in *In) (*Out, error) { return &Out{}, nil }, append([]step.Option{step.Name("a"),
			step.Precondition(func(ctx step.Context, in *In) (bool, error) { panic("boom") })}, opts...)...)
		b := step.New(func(ctx step.Context, in *In) (*Out2, error) { return &Out2{}, nil }, step.Name("b"),
			step.Precondition(func(ctx step.Context, in *In) (bool, error) { otherChecks++; return true, nil }))
		return agenttest.New(t, partial(t, "Pre", a, b)), &otherChecks
	}
	t.Run("stop on error", func(t *testing.T) {
		h, checks := build(t)
		res := h.Start(&In{})
		agenttest.Equal(t, *checks, 1)
		exc, ok := res.Terminal().(*event.ExceptionEvent)
		// The panic's text is logged, never published.
		if !ok || strings.Contains(exc.Message, "boom") || !strings.Contains(exc.Message, exc.EventID) {
			t.Fatalf("terminal = %#v, want an ExceptionEvent with a reference and without the panic value", res.Terminal())
		}
		xs := res.Executions()
		if len(xs) != 1 || xs[0].Step != "a" || xs[0].Err == nil ||
			!strings.Contains(xs[0].Err.Error(), "precondition of step a") || !strings.Contains(xs[0].Err.Error(), "boom") {
			t.Fatalf("executions = %+v, want a's failed precondition only (b must not start after the ExceptionEvent)", xs)
		}
	})
	t.Run("continue on error", func(t *testing.T) {
		h, checks := build(t, step.ContinueOnError())
		res := h.Start(&In{})
		agenttest.Equal(t, *checks, 1)
		agenttest.Equal(t, res.Count("ExceptionEvent"), 0)
		agenttest.Equal(t, res.Count("Out2"), 1)
	})
}

func TestUndeclaredOutputIsAStepError(t *testing.T) {
	s := step.New(func(ctx step.Context, in *In) (event.Event, error) { return &Out2{}, nil },
		step.Name("s"), step.Emits(&Out{}))
	h := agenttest.New(t, partial(t, "Undeclared", s))
	res := h.Start(&In{})
	agenttest.Equal(t, res.Count("Out2"), 0)
	exc, ok := res.Terminal().(*event.ExceptionEvent)
	if xs := res.Executions(); !ok || !strings.Contains(exc.Message, exc.EventID) || len(xs) != 1 || xs[0].Err == nil || !strings.Contains(xs[0].Err.Error(), "does not declare") {
		t.Fatalf("terminal = %#v, executions %+v: want a failed execution about the undeclared output", res.Terminal(), res.Executions())
	}
}

func TestEmitDisplayEvents(t *testing.T) {
	var emitErr error
	calls := 0
	s := step.New(func(ctx step.Context, in *In) ([]*Out, error) {
		calls++
		for _, c := range []string{"a", "b"} {
			if err := ctx.Emit(&event.ChunkEvent{Content: c}); err != nil {
				return nil, err
			}
		}
		emitErr = ctx.Emit(&Out{})
		return []*Out{{}}, nil
	}, step.Name("s"))
	st := &flakyStore{Store: memstore.New(), failComplete: 2} // a list is recorded: its record fails, nothing is published
	h := agenttest.New(t, partial(t, "Emit", s), agenttest.WithStore(st))
	res := h.Start(&In{})
	if !errors.Is(emitErr, engine.ErrControlEmit) {
		t.Fatalf("Emit(control event) = %v, want ErrControlEmit", emitErr)
	}
	var contents []string
	for _, e := range res.Display() {
		if c, ok := e.(*event.ChunkEvent); ok {
			contents = append(contents, c.Content)
		}
	}
	agenttest.Equal(t, contents, []string{"a", "b"})
	agenttest.Equal(t, streamCount(t, h, res, "ChunkEvent"), 0) // core only
	ids := res.IDs("ChunkEvent")
	// A re-run of the same execution re-emits the same ids.
	h.Redeliver(res, res.IDs("In")[0])
	agenttest.Equal(t, calls, 2)
	agenttest.Equal(t, res.IDs("ChunkEvent"), ids)
	if n := len(res.Display()); n != 4 {
		t.Fatalf("%d display messages after the re-run, want 4 (two per run)", n)
	}
}

func TestHITLRequestTopicIsCompleted(t *testing.T) {
	s := step.New(func(ctx step.Context, in *In) (*event.HumanInTheLoopInputRequestEvent, error) {
		req := &event.HumanInTheLoopInputRequestEvent{}
		req.Question = "name?"
		req.HITLType = "input"
		req.Topic = &event.Topic{EventType: event.Str(string(topic.Control)), EventName: event.Str("HumanInTheLoopInputResponseEvent"), AgentID: event.Str("kept")}
		return req, nil
	}, step.Name("s"))
	h := agenttest.New(t, partial(t, "Hitl", s))
	res := h.Start(&In{})
	reqs := res.Get("HumanInTheLoopInputRequestEvent")
	if len(reqs) != 1 {
		t.Fatalf("%d requests published, want 1", len(reqs))
	}
	req := reqs[0].(*event.HumanInTheLoopInputRequestEvent)
	tp := res.Topic()
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	agenttest.Equal(t, []string{str(req.Topic.AgentClass), str(req.Topic.AgentID), str(req.Topic.ThreadID), str(req.Topic.DisplayID),
		str(req.Topic.RunID), str(req.Topic.EventType), str(req.Topic.EventName), str(req.Topic.EventID)},
		[]string{"Hitl", "kept", tp.Thread, tp.Display, tp.Run, "control_event", "HumanInTheLoopInputResponseEvent", req.EventID})
	// Published on both subjects: control (stream) first, then display.
	agenttest.Equal(t, streamCount(t, h, res, "HumanInTheLoopInputRequestEvent"), 1)
	if res.Terminal() != nil {
		t.Fatalf("the run ended (%s) instead of waiting for the answer", event.Name(res.Terminal()))
	}
}

type failingResolver struct{ resolveErr, decodeErr error }

func (r failingResolver) Resolve(context.Context, step.Run) (json.RawMessage, error) {
	return json.RawMessage(`{"secret":"v"}`), r.resolveErr
}
func (r failingResolver) Decode(json.RawMessage) (any, error) { return nil, r.decodeErr }

// A configuration that cannot be fetched or is invalid ends the run with an
// ExceptionEvent carrying the resolver's message, before any step runs.
func TestConfigFailuresEndTheRun(t *testing.T) {
	for name, r := range map[string]failingResolver{
		"resolve": {resolveErr: errors.New("profile service down")},
		"decode":  {decodeErr: errors.New("configuration is invalid: field n")},
	} {
		t.Run(name, func(t *testing.T) {
			ran := false
			s := step.New(func(ctx step.Context, q *event.StartEvent) (*Out, error) { ran = true; return &Out{}, nil }, step.Name("s"))
			h := agenttest.New(t, partial(t, "BadConfig", s), agenttest.WithConfigResolver(r))
			res := h.Start(&event.StartEvent{})
			exc, ok := res.Terminal().(*event.ExceptionEvent)
			want := r.resolveErr
			if want == nil {
				want = r.decodeErr
			}
			if !ok || exc.Message != want.Error() {
				t.Fatalf("terminal = %#v, want an ExceptionEvent %q", res.Terminal(), want)
			}
			if ran {
				t.Fatal("a step ran without a configuration")
			}
			agenttest.Equal(t, res.Ended(), store.Crashed)
		})
	}
}

// A retry policy the consumer cannot honour (more attempts than it
// delivers) is refused when the engine is made.
func TestNewRejectsRetryAboveMaxDeliver(t *testing.T) {
	w := partial(t, "Retrying", step.New(func(ctx step.Context, in *In) error { return nil }, step.Name("s"),
		step.Retry(retry.Policy{MaxAttempts: 10})))
	_, err := engine.New(w, &discardBus{}, memstore.New(), engine.WithMaxDeliver(5))
	if err == nil || !strings.Contains(err.Error(), "retries up to 10 attempts") {
		t.Fatalf("New: %v, want the policy refused", err)
	}
	if _, err := engine.New(w, &discardBus{}, memstore.New(), engine.WithMaxDeliver(11)); err != nil {
		t.Fatalf("New with room for the attempts: %v", err)
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	w := partial(t, "Ok", step.New(func(ctx step.Context, in *In) error { return nil }, step.Name("s")))
	b := &discardBus{}
	st := memstore.New()
	for name, tc := range map[string]struct {
		w    *step.Workflow
		b    bus.Bus
		s    store.Store
		want string
	}{
		"nil workflow": {nil, b, st, "workflow"},
		"nil bus":      {w, nil, st, "bus"},
		"nil store":    {w, b, nil, "store"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := engine.New(tc.w, tc.b, tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error naming the %s", err, tc.want)
			}
		})
	}
	// Process refuses a nil event instead of panicking.
	eng, err := engine.New(w, b, st)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Process(t.Context(), topic.Agent{Class: "Ok", Run: "r"}, nil, 1); err == nil {
		t.Fatal("Process(nil) succeeded")
	}
}

// The first step's record (a step returning a list keeps one) goes out
// beside the start's run-context write.
// When that write fails, nothing is published and the start is handed
// back; its redelivery writes the run context again, finds the record and
// publishes the kept outputs, without running the step a second time.
func TestFailedSeedWriteKeepsTheRecord(t *testing.T) {
	var runs atomic.Int32
	a := step.New(func(ctx step.Context, m *event.UserMessageEvent) ([]*Out, error) { runs.Add(1); return []*Out{{}}, nil }, step.Name("a"))
	st := &lateSeedStore{Store: memstore.New(), recorded: make(chan struct{})}
	h := agenttest.New(t, partial(t, "SeedRecord", a), agenttest.WithStore(st), agenttest.WithConfigResolver(platformConfig{}))
	res := h.Start(&event.UserMessageEvent{Messages: []event.ChatMessage{event.Text(event.RoleUser, "hi")}})
	agenttest.Equal(t, res.Count("Out"), 0)
	agenttest.Equal(t, runs.Load(), int32(1))
	h.Redeliver(res, res.IDs("UserMessageEvent")[0])
	agenttest.Equal(t, res.Count("Out"), 1)
	agenttest.Equal(t, runs.Load(), int32(1))
	if _, ok, err := st.Get(t.Context(), res.RunKey().RunContext(), engine.KeyAgentConfig); err != nil || !ok {
		t.Fatalf("run context after the redelivery: found %v, %v", ok, err)
	}
}

// lateSeedStore fails the first run-context batch write once a record has
// landed, as a start write that was slower than the step does.
type lateSeedStore struct {
	*memstore.Store
	once     sync.Once
	recorded chan struct{}
	failed   atomic.Bool
}

// InProcess reports false: the engine treats the store as remote and
// overlaps its start write with the first step, as it would on NATS KV.
func (s *lateSeedStore) InProcess() bool { return false }

func (s *lateSeedStore) Record(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) (store.ClaimResult, error) {
	res, err := s.Store.Record(ctx, run, step, key, o)
	s.once.Do(func() { close(s.recorded) })
	return res, err
}

func (s *lateSeedStore) SetMany(ctx context.Context, sc store.Scope, entries []store.Entry) error {
	if s.failed.CompareAndSwap(false, true) {
		select {
		case <-s.recorded:
		case <-time.After(10 * time.Second): // the record waited for this write
		}
		return errFlaky
	}
	return s.Store.SetMany(ctx, sc, entries)
}

// A start whose run-context write failed is handed back, and its
// redelivery may be handled by another replica, which writes the run
// context again. This replica must then handle the run's later events: the
// failed write belongs to the handling that made it.
func TestFailedSeedWriteDoesNotStick(t *testing.T) {
	a := step.New(func(ctx step.Context, m *event.UserMessageEvent) (*Out, error) { return &Out{}, nil }, step.Name("a"))
	b := step.New(func(ctx step.Context, in *In) (*Out, error) { return &Out{}, nil }, step.Name("b"))
	st := &flakyStore{Store: memstore.New(), failSetMany: 1}
	h := agenttest.New(t, partial(t, "SeedStale", a, b), agenttest.WithStore(st), agenttest.WithConfigResolver(platformConfig{}))
	res := h.Start(&event.UserMessageEvent{Messages: []event.ChatMessage{event.Text(event.RoleUser, "hi")}})
	agenttest.Equal(t, res.Count("Out"), 0)
	// Another replica handles the redelivered start: the run context is
	// stored.
	run := store.RunKey{Class: "SeedStale", Run: res.Topic().Run}
	if err := st.Store.SetMany(t.Context(), run.RunContext(), []store.Entry{{Key: engine.KeyAgentConfig, Value: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	h.Send(res, &In{})
	agenttest.Equal(t, res.Count("Out"), 1)
}
