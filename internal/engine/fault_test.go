package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// downStore fails every Claim and Record with err (a store that is down,
// or one whose data cannot be used); claims counts both.
type downStore struct {
	*memstore.Store
	err    error
	claims int
}

func (s *downStore) Claim(context.Context, store.RunKey, store.ClaimRequest) (store.ClaimResult, error) {
	s.claims++
	return store.ClaimResult{}, s.err
}

func (s *downStore) Record(context.Context, store.RunKey, string, string, store.Outcome) (store.ClaimResult, error) {
	s.claims++
	return store.ClaimResult{}, s.err
}

// deadLetters returns the dead letters stored on h's bus.
func deadLetters(t *testing.T, h *agenttest.Harness) []*bus.StoredMsg {
	t.Helper()
	dl := bus.DefaultDeadLetters()
	var out []*bus.StoredMsg
	for seq := uint64(1); ; {
		m, err := h.Bus().NextMsg(t.Context(), dl.Stream, "", seq)
		if errors.Is(err, bus.ErrNotFound) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
		seq = m.Seq + 1
	}
}

func TestIsPermanent(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("redis: connection refused"), false},
		{context.DeadlineExceeded, false},
		{engine.Permanent(errors.New("bad")), true},
		{bus.Permanent(errors.New("bad")), true},
		{&bus.PayloadError{Subject: "a", Size: 2, Max: 1}, true},
		{&topic.LengthError{Len: 5000, Max: topic.MaxSubjectLen}, true},
		{&topic.TokenError{Token: "run_id", Value: "a.b", Pos: 1, Char: '.'}, true},
	} {
		if got := engine.IsPermanent(tc.err); got != tc.want {
			t.Errorf("IsPermanent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if engine.Permanent(nil) != nil {
		t.Error("Permanent(nil) != nil")
	}
}

// A transient failure (here of the store, which a step returning a list
// writes its record to) is retried with backoff until the outage budget is
// spent; then the run ends with an ExceptionEvent and the trigger is
// dead-lettered, never dropped in silence.
func TestOutageBudgetEndsTheRun(t *testing.T) {
	s := step.New(func(ctx step.Context, in *In) ([]*Out, error) { return []*Out{{}}, nil }, step.Name("s"))
	st := &downStore{Store: memstore.New(), err: errFlaky}
	// Delays 1 s, 2 s, then 4 s would pass the 5 s budget: three tries.
	h := agenttest.New(t, partial(t, "Outage", s), agenttest.WithStore(st),
		agenttest.WithOutageBudget(5*time.Second))
	res := h.Start(&In{})
	agenttest.Equal(t, st.claims, 1)
	agenttest.Equal(t, res.Count("ExceptionEvent"), 0)
	h.Advance(time.Second)
	agenttest.Equal(t, st.claims, 2)
	agenttest.Equal(t, res.Count("ExceptionEvent"), 0)
	h.Advance(2 * time.Second)
	agenttest.Equal(t, st.claims, 3)
	if res.Count("ExceptionEvent") != 1 {
		t.Fatalf("after the budget: %v, want one ExceptionEvent", res.Names())
	}
	msg := res.Get("ExceptionEvent")[0].(*event.ExceptionEvent).Message
	// The store's error stays in the log and the dead letter; the user
	// gets a reference to it.
	if !strings.Contains(msg, "gave up") || strings.Contains(msg, errFlaky.Error()) {
		t.Errorf("exception message %q must say the agent gave up, without the store's error", msg)
	}
	letters := deadLetters(t, h)
	if len(letters) != 1 || !strings.Contains(letters[0].Header.Get(bus.HeaderDeadLetterReason), errFlaky.Error()) ||
		!strings.Contains(letters[0].Header.Get(bus.HeaderDeadLetterReason), "3 deliveries") {
		t.Fatalf("dead letters %+v, want the trigger with the reason", letters)
	}
	if h.Advance(time.Hour); st.claims != 3 {
		t.Fatalf("the event came back after it was given up (%d claims)", st.claims)
	}
}

// MaxDeliver given to the engine is honoured before the budget: the event
// is tried MaxDeliver-1 times, and the try before the server's last
// delivery gives up itself instead of leaving it to the server.
func TestMaxDeliverGivesUpBeforeTheLastDelivery(t *testing.T) {
	s := step.New(func(ctx step.Context, in *In) ([]*Out, error) { return []*Out{{}}, nil }, step.Name("s"))
	st := &downStore{Store: memstore.New(), err: errFlaky}
	h := agenttest.New(t, partial(t, "MaxDel", s), agenttest.WithStore(st),
		agenttest.WithMaxDeliver(3))
	res := h.Start(&In{})
	agenttest.Equal(t, res.Count("ExceptionEvent"), 0)
	h.Advance(time.Second)
	agenttest.Equal(t, st.claims, 2)
	agenttest.Equal(t, res.Count("ExceptionEvent"), 1)
	agenttest.Equal(t, len(deadLetters(t, h)), 1)
}

// A process that dies while handling an event settles nothing. The
// server's last delivery is kept for that case: it ends the run without
// running the event again.
func TestCrashLoopGivesUpAtTheLastDelivery(t *testing.T) {
	runs := 0
	s := step.New(func(ctx step.Context, in *In) (*Out, error) { runs++; return &Out{}, nil }, step.Name("s"))
	h := agenttest.New(t, partial(t, "CrashLoop", s), agenttest.WithMaxDeliver(3))
	subject := "agent.CrashLoop.a.t.d.r1.control_event.In.e1"
	data, err := event.Marshal(event.Stamp(&In{}))
	if err != nil {
		t.Fatal(err)
	}
	d := &recorder{msg: bus.Msg{Subject: subject, Data: data}, delivered: 3}
	h.Handle(t.Context(), d)
	h.Settle()
	if runs != 0 || d.settled != "deadletter" || !strings.Contains(d.reason, "delivered 3 times") {
		t.Fatalf("runs %d, settled %s (%q): want no run and a dead letter", runs, d.settled, d.reason)
	}
}

// A permanent failure is not retried: the first delivery ends the run and
// dead-letters the trigger.
func TestPermanentFailureEndsTheRunAtOnce(t *testing.T) {
	s := step.New(func(ctx step.Context, in *In) ([]*Out, error) { return []*Out{{}}, nil }, step.Name("s"))
	st := &downStore{Store: memstore.New(), err: engine.Permanent(errors.New("claim holds malformed data"))}
	h := agenttest.New(t, partial(t, "Perm", s), agenttest.WithStore(st))
	res := h.Start(&In{})
	agenttest.Equal(t, st.claims, 1)
	agenttest.Equal(t, res.Count("ExceptionEvent"), 1)
	letters := deadLetters(t, h)
	if len(letters) != 1 || !strings.Contains(letters[0].Header.Get(bus.HeaderDeadLetterReason), "malformed data") {
		t.Fatalf("dead letters %+v", letters)
	}
	// The ExceptionEvent tears the run down; nothing comes back.
	h.Advance(time.Hour)
	agenttest.Equal(t, st.claims, 1)
	agenttest.Equal(t, res.Ended(), store.Crashed)
}

// failingLetters is a delivery whose dead letter cannot be stored.
type failingLetters struct {
	recorder
	n uint64
}

func (d *failingLetters) NumDelivered() uint64 { return d.n }
func (d *failingLetters) DeadLetter(context.Context, string) error {
	return errors.New("dead-letter stream unavailable")
}

// A delivery beyond the last try (its handling never settled it, or its
// dead letter failed) is given up before it is handled; a dead letter that
// cannot be stored leaves the event to redelivery instead of dropping it.
func TestGiveUpBeforeHandlingAndFailedDeadLetter(t *testing.T) {
	calls := 0
	s := step.New(func(ctx step.Context, in *In) (*Out, error) { calls++; return &Out{}, nil }, step.Name("s"))
	h := agenttest.New(t, partial(t, "Loop", s), agenttest.WithMaxDeliver(3))
	data, _ := event.Marshal(&In{ControlEvent: event.ControlEvent{Base: event.Base{EventID: "e1", CreatedAt: 1}}})
	subject := "agent.Loop.a.t.d.r.control_event.In.e1"
	d := &recorder{msg: bus.Msg{Subject: subject, Data: data}}
	late := &failingLetters{recorder: *d, n: 4}
	h.Handle(t.Context(), late)
	agenttest.Equal(t, calls, 0)
	if late.settled != "nak" {
		t.Fatalf("settled %q, want a nak after the dead letter failed", late.settled)
	}
}

// On JetStream: a store outage shorter than the budget is ridden out with
// more deliveries than the reference's MaxDeliver 5; one longer than the
// budget ends the run with an ExceptionEvent and a dead letter.
func TestOutageOnNATS(t *testing.T) {
	nb := bustest.NewNATS(t)
	ctx := t.Context()
	for _, tc := range []struct {
		name   string
		fails  int
		budget time.Duration
	}{
		{"ridden-out", 7, time.Minute},
		{"given-up", 1 << 30, 35 * time.Millisecond}, // 10+20 ms, then 40 ms would pass it: three tries
	} {
		t.Run(tc.name, func(t *testing.T) {
			class := "Outage" + bustest.Unique()
			var calls atomic.Int32
			s := step.New(func(ctx step.Context, q *Question) ([]*Out, error) { calls.Add(1); return []*Out{{}}, nil }, step.Name("s"))
			st := &failingClaims{Store: memstore.New()}
			st.left.Store(int64(tc.fails))
			eng, err := engine.New(partial(t, class, s), nb, st, engine.WithLogger(quiet), engine.WithOutageBudget(tc.budget),
				engine.WithBackoff(func(n uint64) time.Duration { return 10 * time.Millisecond << (n - 1) }))
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			if err := nb.EnsureStream(ctx, bus.AgentStream(class)); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = nb.DeleteStream(context.Background(), topic.StreamName(class)) }()
			terminal := make(chan string, 4)
			sub, err := nb.Subscribe(ctx, topic.StreamSubject(class), "", func(m *bus.Msg) {
				if a, err := topic.ParseAgent(m.Subject); err == nil && (a.Name == "Out" || a.Name == "ExceptionEvent") {
					terminal <- a.Name
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = sub.Unsubscribe() }()
			letters := make(chan *bus.Msg, 1)
			dl, err := nb.Subscribe(ctx, bus.DefaultDeadLetters().Subject("agent."+class+".>"), "", func(m *bus.Msg) { letters <- m })
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = dl.Unsubscribe() }()
			cc := bus.RunnerConsumer(class)
			cc.MaxDeliver = -1
			c, err := nb.Consume(ctx, cc, func(d bus.Delivery) { eng.Handle(ctx, d) })
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Stop() }()
			startRun(t, nb, class, &Question{}, nil)
			var got string
			select {
			case got = <-terminal:
			case <-time.After(30 * time.Second):
				t.Fatal("neither an output nor an ExceptionEvent")
			}
			// The first delivery runs the step (its outputs are a list)
			// before its one store write (the record), which fails:
			// nothing is published. Redeliveries
			// claim first, so the step runs again only once a claim
			// succeeds.
			if tc.fails < 100 {
				if got != "Out" || calls.Load() != 2 {
					t.Fatalf("got %s after %d calls, want Out after 2 (the first unrecorded)", got, calls.Load())
				}
				return
			}
			if got != "ExceptionEvent" || calls.Load() != 1 {
				t.Fatalf("got %s after %d calls, want an ExceptionEvent after the one unrecorded call", got, calls.Load())
			}
			select {
			case m := <-letters:
				if !strings.Contains(m.Header.Get(bus.HeaderDeadLetterReason), errFlaky.Error()) ||
					m.Header.Get(bus.HeaderDeadLetterDeliveries) != "3" {
					t.Fatalf("dead letter headers %v", m.Header)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no dead letter")
			}
		})
	}
}

// failingClaims fails Claim until left runs out.
type failingClaims struct {
	*memstore.Store
	left atomic.Int64
}

func (s *failingClaims) Claim(ctx context.Context, run store.RunKey, req store.ClaimRequest) (store.ClaimResult, error) {
	if s.left.Add(-1) >= 0 {
		return store.ClaimResult{}, errFlaky
	}
	return s.Store.Claim(ctx, run, req)
}

// Record is a claim too: it fails while left lasts.
func (s *failingClaims) Record(ctx context.Context, run store.RunKey, stepName, key string, o store.Outcome) (store.ClaimResult, error) {
	if s.left.Add(-1) >= 0 {
		return store.ClaimResult{}, errFlaky
	}
	return s.Store.Record(ctx, run, stepName, key, o)
}

// An undecodable payload of a run's control event ends the run (it cannot
// go on without the event) and is dead-lettered.
func TestUndecodableEventEndsTheRun(t *testing.T) {
	s := step.New(func(ctx step.Context, in *In) (*Out, error) { return &Out{}, nil }, step.Name("s"))
	h := agenttest.New(t, partial(t, "Undecodable", s))
	subject := "agent.Undecodable.a.t.d.r1.control_event.In.e1"
	d := &recorder{msg: bus.Msg{Subject: subject, Data: []byte(`{"_event_name":`)}}
	h.Handle(t.Context(), d)
	h.Settle()
	m, err := h.Bus().NextMsg(t.Context(), topic.StreamName("Undecodable"), "agent.Undecodable.a.t.d.r1.control_event.ExceptionEvent.*", 1)
	if err != nil {
		t.Fatalf("no ExceptionEvent for the run: %v", err)
	}
	ev, err := event.Unmarshal(m.Data)
	if err != nil || !strings.Contains(ev.(*event.ExceptionEvent).Message, "does not decode") {
		t.Fatalf("exception %v, %v", ev, err)
	}
	if d.settled != "deadletter" || !strings.Contains(d.reason, "does not decode") {
		t.Fatalf("settled %s (%q), want a dead letter", d.settled, d.reason)
	}
}

func TestNewRefusesClassTooLongForJetStream(t *testing.T) {
	s := step.New(func(ctx step.Context, in *In) (*Out, error) { return &Out{}, nil }, step.Name("s"))
	w := partial(t, strings.Repeat("C", 300), s)
	if _, err := engine.New(w, bustest.NewMemory(t), memstore.New()); err == nil || !strings.Contains(err.Error(), "255") {
		t.Fatalf("New: %v, want an error naming JetStream's name limit", err)
	}
}

// Handling cut short by its context (shutdown) hands the event back at
// once and never gives it up, even at the last delivery.
func TestCancelledHandlingIsHandedBack(t *testing.T) {
	s := step.New(func(ctx step.Context, in *In) (*Out, error) { return &Out{}, nil }, step.Name("s"))
	st := &downStore{Store: memstore.New(), err: context.Canceled}
	h := agenttest.New(t, partial(t, "Cut", s), agenttest.WithStore(st), agenttest.WithMaxDeliver(1))
	data, _ := event.Marshal(&In{ControlEvent: event.ControlEvent{Base: event.Base{EventID: "e1", CreatedAt: 1}}})
	d := &recorder{msg: bus.Msg{Subject: "agent.Cut.a.t.d.r.control_event.In.e1", Data: data}}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	h.Handle(ctx, d)
	if d.settled != "nak" {
		t.Fatalf("settled %q, want a nak", d.settled)
	}
	if letters := deadLetters(t, h); len(letters) != 0 {
		t.Fatalf("dead-lettered on shutdown: %v", letters)
	}
}

// A trigger whose ids leave no room for the run's ExceptionEvent subject is
// dead-lettered before any step runs: the run could not even be ended.
func TestTooLongIDsRefusedBeforeAnyStep(t *testing.T) {
	runs := 0
	s := step.New(func(ctx step.Context, in *In) (*Out, error) { runs++; return &Out{}, nil }, step.Name("s"))
	h := agenttest.New(t, partial(t, "LongIDs", s))
	thread := strings.Repeat("t", topic.MaxSubjectLen-60)
	subject := "agent.LongIDs.a." + thread + ".d.r1.control_event.In.e1"
	data, err := event.Marshal(event.Stamp(&In{}))
	if err != nil {
		t.Fatal(err)
	}
	d := &recorder{msg: bus.Msg{Subject: subject, Data: data}}
	h.Handle(t.Context(), d)
	h.Settle()
	if runs != 0 || d.settled != "deadletter" || !strings.Contains(d.reason, "too long") {
		t.Fatalf("runs %d, settled %s (%q): want no run and a dead letter", runs, d.settled, d.reason)
	}
}

// Handlings of a redelivered event that began and never ended (the process
// died in them) are counted in the run's state; past the limit the event
// is given up before it runs again, while an event whose redelivery ends
// normally clears its count.
func TestCrashLoopGivenUpByItsCutShortHandlings(t *testing.T) {
	runs := 0
	s := step.New(func(ctx step.Context, in *In) (*Out, error) { runs++; return &Out{}, nil }, step.Name("s"))
	st := memstore.New()
	h := agenttest.New(t, partial(t, "Cut2", s), agenttest.WithStore(st))
	run := store.RunKey{Class: "Cut2", Run: "r1"}.RunContext()
	data, err := event.Marshal(event.Stamp(&In{}))
	if err != nil {
		t.Fatal(err)
	}
	deliver := func(id string, n uint64) *recorder {
		d := &recorder{msg: bus.Msg{Subject: "agent.Cut2.a.t.d.r1.control_event.In." + id, Data: data}, delivered: n}
		h.Handle(t.Context(), d)
		h.Settle()
		return d
	}
	// Three handlings of e1 were cut short.
	for range engine.DefaultCrashLoopLimit {
		if _, err := st.Incr(t.Context(), run, "_attempt.e1", 1); err != nil {
			t.Fatal(err)
		}
	}
	if d := deliver("e1", 4); runs != 0 || d.settled != "deadletter" || !strings.Contains(d.reason, "cut short 3 times") {
		t.Fatalf("runs %d, settled %s (%q): want the crash loop given up", runs, d.settled, d.reason)
	}
	// A redelivery that ends clears its count.
	h2 := agenttest.New(t, partial(t, "Cut3", s), agenttest.WithStore(st))
	d := &recorder{msg: bus.Msg{Subject: "agent.Cut3.a.t.d.r2.control_event.In.e2", Data: data}, delivered: 2}
	h2.Handle(t.Context(), d)
	h2.Settle()
	if _, ok, _ := st.Get(t.Context(), store.RunKey{Class: "Cut3", Run: "r2"}.RunContext(), "_attempt.e2"); ok || d.settled == "deadletter" {
		t.Fatalf("settled %s; the ended handling's count must be gone", d.settled)
	}
}
