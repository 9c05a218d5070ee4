package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// lossyBus fails the first stream publishes of events named name, as a
// server that is unreachable for a moment.
type lossyBus struct {
	bus.Bus
	name  string
	fails atomic.Int32
	// stored, if set, hears of each publish of the named event the
	// stream acknowledged.
	stored chan struct{}
}

var errLost = errors.New("nats: timeout")

func (b *lossyBus) PublishStream(ctx context.Context, m *bus.Msg, id string) (bus.PubAck, error) {
	if strings.Contains(m.Subject, ".control_event."+b.name+".") && b.fails.Add(-1) >= 0 {
		return bus.PubAck{}, errLost
	}
	ack, err := b.Bus.PublishStream(ctx, m, id)
	if err == nil && b.stored != nil && strings.Contains(m.Subject, ".control_event."+b.name+".") {
		b.stored <- struct{}{}
	}
	return ack, err
}

func (b *lossyBus) PublishNew(ctx context.Context, m *bus.Msg, id string) (bus.PubAck, error) {
	if strings.Contains(m.Subject, ".control_event."+b.name+".") && b.fails.Add(-1) >= 0 {
		return bus.PubAck{}, errLost
	}
	ack, err := b.Bus.PublishNew(ctx, m, id)
	if err == nil && b.stored != nil && strings.Contains(m.Subject, ".control_event."+b.name+".") {
		b.stored <- struct{}{}
	}
	return ack, err
}

// countSubjects counts the stored messages of stream per event name.
func countSubjects(t *testing.T, b bus.Bus, stream string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for seq := uint64(1); ; {
		m, err := b.NextMsg(t.Context(), stream, "", seq)
		if errors.Is(err, bus.ErrNotFound) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		a, err := topic.ParseAgent(m.Subject)
		if err != nil {
			t.Fatal(err)
		}
		n[a.Name]++
		seq = m.Seq + 1
	}
}

// outcomes records the outcomes the engine completes claims with.
type outcomes struct {
	*memstore.Store
	mu  sync.Mutex
	all []store.Outcome
}

func (s *outcomes) Complete(ctx context.Context, run store.RunKey, stepName, key string, o store.Outcome) error {
	s.mu.Lock()
	s.all = append(s.all, o)
	s.mu.Unlock()
	return s.Store.Complete(ctx, run, stepName, key, o)
}

func (s *outcomes) last() store.Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.all) == 0 {
		return store.Outcome{Failed: true, Message: "none"}
	}
	return s.all[len(s.all)-1]
}

// twoOutputs returns a step that counts its calls and returns an Out and an
// Out2.
func twoOutputs(calls *atomic.Int32) *step.Step {
	return step.New(func(ctx step.Context, q *Question) ([]event.Event, error) {
		calls.Add(1)
		return []event.Event{&Out{}, &Out2{}}, nil
	}, step.Name("s"), step.Emits(&Out{}, &Out2{}))
}

// A step is never run again because its outputs could not be published:
// they are kept with the claim, and the redelivery publishes them.
func TestKeptOutputsArePublishedWithoutRerun(t *testing.T) {
	clock := memory.NewManualClock(time.Unix(1700000000, 0))
	mb := memory.New(memory.Options{Manual: true, Clock: clock, Logger: quiet})
	t.Cleanup(func() { _ = mb.Close() })
	b := &lossyBus{Bus: mb, name: "Out2"}
	b.fails.Store(1)
	var calls atomic.Int32
	w := partial(t, "Kept", twoOutputs(&calls))
	st := &outcomes{Store: memstore.New()}
	startEngines(t, b, w, st, 1)
	ctx := t.Context()
	run := startRun(t, mb, "Kept", &Question{}, nil)
	mb.DeliverAll(ctx) // Out is published, Out2 fails: Nak'ed
	stream := topic.StreamName("Kept")
	if got := countSubjects(t, mb, stream); got["Out"] != 1 || got["Out2"] != 0 {
		t.Fatalf("after the failed publish: %v", got)
	}
	clock.Advance(time.Second) // the Nak delay
	mb.DeliverAll(ctx)
	if n := calls.Load(); n != 1 {
		t.Fatalf("the step ran %d times, want once", n)
	}
	if got := countSubjects(t, mb, stream); got["Out"] != 1 || got["Out2"] != 1 {
		t.Fatalf("after the redelivery: %v, want each output once", got)
	}
	// Published: the claim keeps no outputs any more.
	if last := st.last(); len(last.Outputs) != 0 || last.Failed {
		t.Fatalf("last outcome recorded %+v, want success without kept outputs", last)
	}
	if n, err := st.Count(ctx, store.RunKey{Class: "Kept", Run: run}, "s"); err != nil || n != 1 {
		t.Fatalf("counter %d, %v; want 1", n, err)
	}
	if mb.Pending() != 0 {
		t.Fatalf("%d deliveries still pending", mb.Pending())
	}
}

// A kept output is not published again when the stream already holds it,
// even after its duplicate window has passed (a long crash between
// publishing and recording the claim's completion).
func TestKeptOutputsNoDuplicateAfterTheWindow(t *testing.T) {
	nb := bustest.NewNATS(t)
	class := "KeptNATS" + bustest.Unique()
	stream := topic.StreamName(class)
	ctx := t.Context()
	// The duplicate window is far shorter than the first Nak delay (1 s).
	if err := nb.EnsureStream(ctx, bus.StreamConfig{Name: stream, Subjects: []string{topic.StreamSubject(class)},
		Storage: bus.MemoryStorage, Duplicates: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	// The stream's acknowledgement of Out2, not a subscriber's copy, tells
	// that it is stored: a subscriber may see it first.
	b := &lossyBus{Bus: nb, name: "Out2", stored: make(chan struct{}, 1)}
	b.fails.Store(1)
	var calls atomic.Int32
	startEngines(t, b, partial(t, class, twoOutputs(&calls)), memstore.New(), 1)

	var mu sync.Mutex
	got := map[string]int{}
	out2 := make(chan struct{}, 1)
	sub, err := nb.Subscribe(ctx, topic.StreamSubject(class), "", func(m *bus.Msg) {
		a, err := topic.ParseAgent(m.Subject)
		if err != nil || a.Type != topic.Control {
			return
		}
		mu.Lock()
		got[a.Name]++
		mu.Unlock()
		if a.Name == "Out2" {
			out2 <- struct{}{}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	startRun(t, nb, class, &Question{}, nil)
	// Out2 stored, and seen by the subscriber, which saw Out before it.
	for _, c := range []chan struct{}{b.stored, out2} {
		select {
		case <-c:
		case <-time.After(30 * time.Second):
			t.Fatal("Out2 was never published")
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the step ran %d times, want once", n)
	}
	// Out is checked, and Out2 published, in order: the counts are final.
	if c := countSubjects(t, nb, stream); c["Out"] != 1 || c["Out2"] != 1 {
		t.Fatalf("stream holds %v, want each output once", c)
	}
	mu.Lock()
	defer mu.Unlock()
	if got["Out"] != 1 {
		t.Fatalf("Out sent %d times, want once", got["Out"])
	}
}

// The outputs of a step are checked before they are kept or published: one
// over the server's max payload fails the step (and, stop on error, ends
// the run), and is never retried.
func TestOversizeOutputFailsTheStep(t *testing.T) {
	clock := memory.NewManualClock(time.Unix(1700000000, 0))
	mb := memory.New(memory.Options{Manual: true, Clock: clock, Logger: quiet, MaxPayload: 4096})
	t.Cleanup(func() { _ = mb.Close() })
	var calls atomic.Int32
	s := step.New(func(ctx step.Context, q *Question) (*Big, error) {
		calls.Add(1)
		return &Big{Text: strings.Repeat("x", 8192)}, nil
	}, step.Name("s"))
	startEngines(t, mb, partial(t, "Oversize", s), memstore.New(), 1)
	ctx := t.Context()
	startRun(t, mb, "Oversize", &Question{}, nil)
	mb.DeliverAll(ctx)
	clock.Advance(time.Hour)
	mb.DeliverAll(ctx)
	if n := calls.Load(); n != 1 {
		t.Fatalf("the step ran %d times, want once", n)
	}
	c := countSubjects(t, mb, topic.StreamName("Oversize"))
	if c["Big"] != 0 || c["ExceptionEvent"] != 1 {
		t.Fatalf("stream holds %v, want no Big and one ExceptionEvent", c)
	}
	m, err := mb.NextMsg(ctx, topic.StreamName("Oversize"), "agent.Oversize.*.*.*.*.control_event.ExceptionEvent.*", 1)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := event.Unmarshal(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	// The user reads what failed; the server's settings stay with the
	// operator (log and dead letter).
	if msg := ev.(*event.ExceptionEvent).Message; msg != "step s: output Big cannot be published: it is too large" {
		t.Fatalf("exception %q, want what failed without the infrastructure's words", msg)
	}
	// The trigger is dead-lettered with the reason: the failure is visible
	// where operators look, not only in the run.
	dl, err := mb.NextMsg(ctx, bus.DefaultDeadLetters().Stream, "", 1)
	if err != nil {
		t.Fatalf("no dead letter: %v", err)
	}
	if r := dl.Header.Get(bus.HeaderDeadLetterReason); !strings.Contains(r, "cannot be published") || !strings.Contains(r, "max_payload of 4096") || !strings.Contains(dl.Header.Get(bus.HeaderDeadLetterSubject), "control_event.Question.") {
		t.Fatalf("dead letter %q of %q, want the trigger with the reason", r, dl.Header.Get(bus.HeaderDeadLetterSubject))
	}
}

// Big is an output that can be made larger than a message.
type Big struct {
	event.ControlEvent
	Text string `json:"text"`
}

func init() { event.MustRegister[Big]() }
