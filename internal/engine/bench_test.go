package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/saap-go/agent/internal/engine"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

type benchEnv struct {
	b     *memory.Bus
	class string
}

func newBenchEnv(b *testing.B, w *step.Workflow) *benchEnv {
	mb := memory.New(memory.Options{Manual: true, Logger: quiet})
	b.Cleanup(func() { _ = mb.Close() })
	// Default heartbeat (one engine-wide timer); Sequential as the manual
	// bus delivers in one goroutine anyway.
	startEngines(b, mb, w, memstore.New(), 1, engine.Sequential())
	return &benchEnv{b: mb, class: w.Class()}
}

// start publishes a start event on a fresh run and runs it to the end.
func (e *benchEnv) start(b *testing.B, ev event.Event) {
	ctx := context.Background()
	run := event.NewID()
	event.Stamp(ev)
	data, err := event.Marshal(ev)
	if err != nil {
		b.Fatal(err)
	}
	subj, err := topic.Agent{Class: e.class, ID: "bench", Thread: run, Display: run, Run: run,
		Type: topic.Control, Name: event.Name(ev), EventID: ev.EventBase().EventID}.Subject()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.b.PublishStream(ctx, &bus.Msg{Subject: subj, Data: data}, ev.EventBase().EventID); err != nil {
		b.Fatal(err)
	}
	e.b.DeliverAll(ctx)
}

// linearWorkflow is Start→s1→In→s2→Out→s3→Stop, steps that do nothing.
func linearWorkflow(b *testing.B, class string) *step.Workflow {
	s1 := step.New(func(ctx step.Context, s *event.StartEvent) (*In, error) { return &In{}, nil }, step.Name("s1"))
	s2 := step.New(func(ctx step.Context, a *In) (*Out, error) { return &Out{}, nil }, step.Name("s2"))
	s3 := step.New(func(ctx step.Context, o *Out) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("s3"))
	w, err := step.NewWorkflow(class, s1, s2, s3)
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// BenchmarkLinearRun: a 3-step linear run (Start→A→B→Stop) on the manual
// in-memory bus, end to end: publish, deliver, decode, history, binding,
// claims, step calls, outputs, teardown. Reported per step.
func BenchmarkLinearRun(b *testing.B) {
	env := newBenchEnv(b, linearWorkflow(b, "BenchLinear"))
	b.ReportAllocs()
	for b.Loop() {
		env.start(b, &event.StartEvent{})
	}
	reportPerStep(b, 3)
}

// BenchmarkBaselineBusHop is the floor any bus-driven dispatcher pays per
// step: marshal an event, publish it to the stream, deliver it to a durable
// consumer, decode it and ack. The linear run does four such hops for three
// steps (Start, A, B, Stop).
func BenchmarkBaselineBusHop(b *testing.B) {
	ctx := context.Background()
	mb := memory.New(memory.Options{Manual: true, Logger: quiet})
	b.Cleanup(func() { _ = mb.Close() })
	if err := mb.EnsureStream(ctx, bus.AgentStream("BenchHop")); err != nil {
		b.Fatal(err)
	}
	if _, err := mb.Consume(ctx, bus.RunnerConsumer("BenchHop"), func(d bus.Delivery) {
		if _, err := event.Unmarshal(d.Msg().Data); err != nil {
			b.Error(err)
		}
		_ = d.Ack(ctx)
	}); err != nil {
		b.Fatal(err)
	}
	run := event.NewID()
	b.ReportAllocs()
	for b.Loop() {
		ev := event.Stamp(&In{})
		data, _ := event.Marshal(ev)
		subj, _ := topic.Agent{Class: "BenchHop", ID: "bench", Thread: run, Display: run, Run: run,
			Type: topic.Control, Name: "In", EventID: ev.EventBase().EventID}.Subject()
		if _, err := mb.PublishStream(ctx, &bus.Msg{Subject: subj, Data: data}, ev.EventBase().EventID); err != nil {
			b.Fatal(err)
		}
		mb.DeliverAll(ctx)
	}
}

func reportPerStep(b *testing.B, steps int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/step")
}

// BenchmarkFanInList: a start step publishes n R events and agg([]*R) runs on
// every arrival with the whole prefix: n executions binding lists of 1…n.
// Reported per arrival; the list it copies grows with n.
func BenchmarkFanInList(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint("arrivals=", n), func(b *testing.B) {
			start := step.New(func(ctx step.Context, s *event.StartEvent) ([]*In, error) {
				out := make([]*In, n)
				for i := range out {
					out[i] = &In{N: i}
				}
				return out, nil
			}, step.Name("start"))
			agg := step.New(func(ctx step.Context, ins []*In) error {
				if len(ins) == 0 {
					return fmt.Errorf("empty list")
				}
				return nil
			}, step.Name("agg"))
			w, err := step.NewPartialWorkflow(fmt.Sprint("BenchFanIn", n), start, agg)
			if err != nil {
				b.Fatal(err)
			}
			env := newBenchEnv(b, w)
			b.ReportAllocs()
			for b.Loop() {
				env.start(b, &event.StartEvent{})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/arrival")
		})
	}
}

// discardBus is a transport that accepts every publish and stores nothing:
// it isolates the engine's own cost from the bus and the decoder in
// BenchmarkEngineLinearRun. (Tests use the real in-memory bus.)
type discardBus struct {
	bus.Bus // nil: the engine uses only the methods below
	seq     uint64
}

func (d *discardBus) Publish(context.Context, *bus.Msg) error { return nil }
func (d *discardBus) MaxPayload() int                         { return 0 }
func (d *discardBus) PublishStream(context.Context, *bus.Msg, string) (bus.PubAck, error) {
	d.seq++
	return bus.PubAck{Stream: "s", Seq: d.seq}, nil
}
func (d *discardBus) NextMsg(context.Context, string, string, uint64) (*bus.StoredMsg, error) {
	return nil, bus.ErrNotFound
}

// BenchmarkEngineLinearRun: the same 3-step run fed straight into
// Engine.Process (events as values, consecutive sequences), publishing into a
// bus that drops everything: the engine's own cost per step (history,
// binding, claims, ids, step calls, output encoding, teardown), without
// transport and decoding.
func BenchmarkEngineLinearRun(b *testing.B) {
	db := &discardBus{}
	eng, err := engine.New(linearWorkflow(b, "BenchEngine"), db, memstore.New(), engine.Sequential(),
		engine.WithLogger(quiet))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var seq uint64
	b.ReportAllocs()
	for b.Loop() {
		run := event.NewID()
		t := topic.Agent{Class: "BenchEngine", ID: "bench", Thread: run, Display: run, Run: run, Type: topic.Control}
		for _, ev := range []event.Event{&event.StartEvent{}, &In{}, &Out{}, &event.StopEvent{}} {
			event.Stamp(ev)
			seq++
			t.Name, t.EventID = event.Name(ev), ev.EventBase().EventID
			if err := eng.Process(ctx, t, ev, seq); err != nil {
				b.Fatal(err)
			}
		}
	}
	reportPerStep(b, 3)
}
