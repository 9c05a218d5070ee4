package engine_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"
	"github.com/saap-go/agent/topic"
)

// The invariants of a run whose record is its stream, each checked with
// replicas that share only the bus and the store. Each test names the
// guard whose removal makes it fail.

// countingBus counts the reads of stored messages the engine makes (a
// round trip each on NATS) and can fail a chosen control publish.
type countingBus struct {
	bus.Bus
	reads    atomic.Int32
	failPubs atomic.Int32 // fail the control publish numbered failAt (from 1) this many times
	failAt   int32
	pubs     atomic.Int32
}

func (c *countingBus) NextMsg(ctx context.Context, stream, filter string, seq uint64) (*bus.StoredMsg, error) {
	c.reads.Add(1)
	return c.Bus.NextMsg(ctx, stream, filter, seq)
}

func (c *countingBus) HasSubject(ctx context.Context, stream, subject string) (bool, error) {
	c.reads.Add(1)
	return c.Bus.HasSubject(ctx, stream, subject)
}

func (c *countingBus) PublishNew(ctx context.Context, m *bus.Msg, msgID string) (bus.PubAck, error) {
	if c.pubs.Add(1) == c.failAt && c.failPubs.Add(-1) >= 0 {
		return bus.PubAck{}, errors.New("bus: connection lost")
	}
	return c.Bus.PublishNew(ctx, m, msgID)
}

// stored returns the class's stored control events named name, in stream
// order.
func stored(t *testing.T, b bus.Bus, class, name string) []event.Event {
	t.Helper()
	msgs, err := bus.ReadAll(t.Context(), b, topic.StreamName(class), "agent."+class+".*.*.*.*.control_event."+name+".*")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]event.Event, 0, len(msgs))
	for _, m := range msgs {
		ev, err := event.Unmarshal(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// processFirst hands the first stored control event named name to eng, as
// a first delivery.
func processFirst(t *testing.T, eng *engine.Engine, b bus.Bus, class, name string) error {
	t.Helper()
	msgs, err := bus.ReadAll(t.Context(), b, topic.StreamName(class), "agent."+class+".*.*.*.*.control_event."+name+".*")
	if err != nil || len(msgs) == 0 {
		t.Fatalf("no %s in the stream (%v)", name, err)
	}
	m := msgs[0]
	tp, err := topic.ParseAgent(m.Subject)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := event.Unmarshal(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	return eng.Process(t.Context(), tp, ev, m.Seq)
}

func newReplicas(t *testing.T, w *step.Workflow, b bus.Bus, st store.Store, n int) []*engine.Engine {
	t.Helper()
	if err := b.EnsureStream(t.Context(), bus.AgentStream(w.Class())); err != nil {
		t.Fatal(err)
	}
	out := make([]*engine.Engine, n)
	for i := range out {
		eng, err := engine.New(w, b, st, engine.WithLogger(quiet), engine.Sequential())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(eng.Close)
		out[i] = eng
	}
	return out
}

// A step's output is stored once for ever, not only within the stream's
// duplicate window: a second replica that runs the step again for the same
// trigger long after the window publishes an output the stream refuses.
// Guard: the output's publish with Nats-Expected-Last-Subject-Sequence 0
// (PublishNew); with a plain de-duplicated publish the test fails.
func TestOutputStoredOnceBeyondTheWindow(t *testing.T) {
	clock := memory.NewManualClock(time.Unix(1_800_000_000, 0))
	b := memory.New(memory.Options{Clock: clock, Manual: true, Logger: quiet})
	defer b.Close()
	var runs atomic.Int32
	s1 := step.New(func(ctx step.Context, q *Question) (*In, error) { return &In{}, nil }, step.Name("s1"))
	s2 := step.New(func(ctx step.Context, in *In) (*Out, error) { runs.Add(1); return &Out{}, nil }, step.Name("s2"))
	w := partial(t, "Window", s1, s2)
	reps := newReplicas(t, w, b, memstore.New(), 2)
	startRun(t, b, "Window", &Question{}, nil)
	if err := processFirst(t, reps[0], b, "Window", "Question"); err != nil {
		t.Fatal(err)
	}
	if err := processFirst(t, reps[0], b, "Window", "In"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour) // far beyond the 2-minute window
	// The other replica has no history of the run: it runs s2 again.
	if err := processFirst(t, reps[1], b, "Window", "In"); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("s2 ran %d times, want 2 (the second replica must run it for the fence to be tested)", n)
	}
	if outs := stored(t, b, "Window", "Out"); len(outs) != 1 {
		t.Fatalf("the stream holds %d Out, want 1", len(outs))
	}
}

// A duplicate trigger of a step whose output the replica published does
// not run the step again, and costs no round trip: neither a store call nor
// a read of the stream. Guard: the replica's set of outputs it published
// (the published check in ranBefore); without it the redelivery reads the
// run's history to the stream's end.
func TestDuplicateTriggerCostsNoRoundTrip(t *testing.T) {
	mb := memory.New(memory.Options{Manual: true, Logger: quiet})
	defer mb.Close()
	b := &countingBus{Bus: mb}
	var runs atomic.Int32
	s1 := step.New(func(ctx step.Context, q *Question) (*In, error) { return &In{}, nil }, step.Name("s1"))
	s2 := step.New(func(ctx step.Context, in *In) (*Out, error) { runs.Add(1); return &Out{}, nil }, step.Name("s2"))
	w := partial(t, "Dup", s1, s2)
	st := newCountingStore()
	eng := newReplicas(t, w, b, st, 1)[0]
	startRun(t, b, "Dup", &Question{}, nil)
	if err := processFirst(t, eng, b, "Dup", "Question"); err != nil {
		t.Fatal(err)
	}
	if err := processFirst(t, eng, b, "Dup", "In"); err != nil {
		t.Fatal(err)
	}
	msgs, err := bus.ReadAll(t.Context(), mb, topic.StreamName("Dup"), "agent.Dup.*.*.*.*.control_event.In.*")
	if err != nil || len(msgs) != 1 {
		t.Fatalf("In in the stream: %d, %v", len(msgs), err)
	}
	reads, calls := b.reads.Load(), st.total()
	d := &redelivery{recorder: recorder{msg: msgs[0].Msg, delivered: 2}, seq: msgs[0].Seq}
	eng.Handle(t.Context(), d)
	if d.settled != "ack" {
		t.Fatalf("the duplicate was settled %s (%s), want ack", d.settled, d.reason)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("s2 ran %d times, want once", n)
	}
	if got := b.reads.Load() - reads; got != 0 {
		t.Errorf("the duplicate read the stream %d times, want none", got)
	}
	// The redelivery's crash-loop count is the one store write it makes
	// (and its removal); nothing of the step.
	got := st.total() - calls
	st.mu.Lock()
	defer st.mu.Unlock()
	if got > 2 || st.calls["Claim"] != 0 || st.calls["Record"] != 0 {
		t.Errorf("the duplicate made %d store calls (%v), want at most the crash-loop count's 2 and no claim", got, st.calls)
	}
}

// redelivery is a recorder at a stream sequence of choice.
type redelivery struct {
	recorder
	seq uint64
}

func (d *redelivery) Seq() uint64 { return d.seq }

// Pair is one execution's two outputs, tagged by the replica that made
// them.
type Pair struct {
	event.ControlEvent
	By int `json:"by"`
}

func init() { event.MustRegister[Pair]() }

// A step with two outputs never leaves the run with outputs of two
// executions: a replica whose publish failed after the first output, and a
// second replica that runs the step again with other outputs, leave the
// first execution's two in the stream. Guard: the record written before a
// multi-output step publishes (store Record; the later execution publishes
// the recorded outputs); treating the step as a single-output one, with
// the publish as its only fence, mixes them.
func TestSeveralOutputsNeverMix(t *testing.T) {
	mb := memory.New(memory.Options{Manual: true, Logger: quiet})
	defer mb.Close()
	flaky := &countingBus{Bus: mb, failAt: 2}
	flaky.failPubs.Store(1)
	var replica atomic.Int32
	s := step.New(func(ctx step.Context, q *Question) ([]event.Event, error) {
		by := int(replica.Load())
		return []event.Event{&Pair{By: by}, &Pair{By: by}}, nil
	}, step.Name("pair"), step.Emits((*Pair)(nil)))
	w := partial(t, "Pairs", s)
	st := memstore.New()
	a, err := engine.New(w, flaky, st, engine.WithLogger(quiet), engine.Sequential())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	other := newReplicas(t, w, mb, st, 1)[0]
	startRun(t, mb, "Pairs", &Question{}, nil)
	replica.Store(1)
	if err := processFirst(t, a, mb, "Pairs", "Question"); err == nil {
		t.Fatal("the first replica's handling did not fail with its publish")
	}
	if n := len(stored(t, mb, "Pairs", "Pair")); n != 1 {
		t.Fatalf("after the failed publish the stream holds %d Pair, want 1", n)
	}
	replica.Store(2)
	if err := processFirst(t, other, mb, "Pairs", "Question"); err != nil {
		t.Fatal(err)
	}
	pairs := stored(t, mb, "Pairs", "Pair")
	if len(pairs) != 2 {
		t.Fatalf("the stream holds %d Pair, want 2", len(pairs))
	}
	if a, b := pairs[0].(*Pair).By, pairs[1].(*Pair).By; a != b {
		t.Errorf("the run holds outputs of two executions (by %d and by %d)", a, b)
	}
}

// Nothing is published after a run's terminal event, on any replica: not
// by a step that a replica starts after the end, nor by one it was running
// when the end came. Guard: the terminal marker, read by a replica that
// does not know the run and followed through the marker watch by one that
// does (a late output is dropped); without them Out reaches the stream.
func TestNothingAfterTheTerminalOnAnyReplica(t *testing.T) {
	for _, inFlight := range []bool{false, true} {
		t.Run(map[bool]string{false: "started-after", true: "in-flight"}[inFlight], func(t *testing.T) {
			b := memory.New(memory.Options{Manual: true, Logger: quiet})
			defer b.Close()
			entered, release := make(chan struct{}), make(chan struct{})
			s1 := step.New(func(ctx step.Context, q *Question) (*In, error) { return &In{}, nil }, step.Name("s1"))
			s2 := step.New(func(ctx step.Context, in *In) (*Out, error) {
				if inFlight {
					close(entered)
					<-release
				}
				return &Out{}, nil
			}, step.Name("s2"))
			w := partial(t, "Late", s1, s2)
			reps := newReplicas(t, w, b, memstore.New(), 2)
			run := startRun(t, b, "Late", &Question{}, nil)
			if err := processFirst(t, reps[0], b, "Late", "Question"); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			if inFlight {
				// The second replica is running s2 when the end comes.
				wg.Go(func() {
					if err := processFirst(t, reps[1], b, "Late", "In"); err != nil {
						t.Error(err)
					}
				})
				<-entered
			}
			// The run is stopped from outside (a user's cancel), and the
			// first replica handles the stop.
			stop := &event.StopEvent{}
			event.Stamp(stop)
			if _, err := bus.PublishEvent(t.Context(), b, topic.Agent{Class: "Late", ID: "a", Thread: run, Display: run, Run: run}, stop, nil); err != nil {
				t.Fatal(err)
			}
			if err := processFirst(t, reps[0], b, "Late", "StopEvent"); err != nil {
				t.Fatal(err)
			}
			if inFlight {
				close(release)
				wg.Wait()
			} else if err := processFirst(t, reps[1], b, "Late", "In"); err != nil {
				t.Fatal(err)
			}
			if outs := stored(t, b, "Late", "Out"); len(outs) != 0 {
				t.Fatalf("the stream holds %d Out published after the run's StopEvent", len(outs))
			}
		})
	}
}
