//go:build unix

package semantic_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/saap-go/agent/internal/cputime"
	"github.com/saap-go/agent/internal/engine"
	memstore "github.com/saap-go/agent/store/memory"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/semantic"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

type benchIn struct{ event.ControlEvent }
type benchOut struct{ event.ControlEvent }

func init() {
	event.MustRegister[benchIn]()
	event.MustRegister[benchOut]()
}

// discardExporter drops every span: tracing on, nowhere to send.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkTracedRun: a 3-step run (Start→s1→In→s2→Out→s3→Stop) on the
// manual in-memory bus, end to end, Sequential, MemoryStore, with:
//
//	none      no interceptor: no tracing code on the path
//	off       the tracing interceptor with no-op tracer and meter providers
//	on        SDK tracer provider, batching to an exporter that drops spans
//	on+meter  the same, and an SDK meter provider (never collected)
//
// Reported per run, in wall time and in the process's CPU time; compare
// with "none".
func BenchmarkTracedRun(b *testing.B) {
	variants := []struct {
		name string
		opts func(b *testing.B) []engine.Option
	}{
		{"none", func(*testing.B) []engine.Option { return nil }},
		{"off", func(*testing.B) []engine.Option {
			return []engine.Option{engine.WithInterceptors(semantic.New(semantic.WithTracerProvider(tracenoop.NewTracerProvider()),
				semantic.WithMeterProvider(metricnoop.NewMeterProvider())))}
		}},
		{"on", func(b *testing.B) []engine.Option {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			return []engine.Option{engine.WithInterceptors(semantic.New(semantic.WithTracerProvider(tp), semantic.WithMeterProvider(metricnoop.NewMeterProvider())))}
		}},
		{"on+meter", func(b *testing.B) []engine.Option {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
			return []engine.Option{engine.WithInterceptors(semantic.New(semantic.WithTracerProvider(tp), semantic.WithMeterProvider(mp)))}
		}},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			run := benchRunner(b, v.opts(b))
			b.ReportAllocs()
			cpu0 := cputime.Now()
			for b.Loop() {
				run()
			}
			// CPU time of the whole process (GC and exporter goroutines
			// included): steadier than wall time on a shared machine.
			b.ReportMetric(float64((cputime.Now()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// benchRunner returns a function that runs one 3-step run to its end.
func benchRunner(b testing.TB, opts []engine.Option) func() {
	ctx := context.Background()
	class := "BenchTraced"
	s1 := step.New(func(ctx step.Context, s *event.StartEvent) (*benchIn, error) { return &benchIn{}, nil }, step.Name("s1"))
	s2 := step.New(func(ctx step.Context, a *benchIn) (*benchOut, error) { return &benchOut{}, nil }, step.Name("s2"))
	s3 := step.New(func(ctx step.Context, o *benchOut) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("s3"))
	w, err := step.NewWorkflow(class, s1, s2, s3)
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mb := memory.New(memory.Options{Manual: true, Logger: quiet})
	b.Cleanup(func() { _ = mb.Close() })
	if err := mb.EnsureStream(ctx, bus.AgentStream(class)); err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New(w, mb, memstore.New(), append([]engine.Option{engine.WithLogger(quiet), engine.Sequential()}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(eng.Close)
	c, err := mb.Consume(ctx, bus.RunnerConsumer(class), func(d bus.Delivery) { eng.Handle(ctx, d) })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Stop() })
	return func() {
		run := event.NewID()
		ev := event.Stamp(&event.StartEvent{})
		data, err := event.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		subj, err := topic.Agent{Class: class, ID: "bench", Thread: run, Display: run, Run: run,
			Type: topic.Control, Name: event.Name(ev), EventID: ev.EventBase().EventID}.Subject()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := mb.PublishStream(ctx, &bus.Msg{Subject: subj, Data: data}, ev.EventBase().EventID); err != nil {
			b.Fatal(err)
		}
		mb.DeliverAll(ctx)
	}
}

// Off, the hooks cost no allocation: a run allocates what it does without
// them. (A GC that empties the engine's pools may add one; a hook that
// allocated would add one per delivery or step, seven per run.)
func TestTracingOffAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled objects at random")
	}
	none := benchRunner(t, nil)
	off := benchRunner(t, []engine.Option{engine.WithInterceptors(semantic.New(semantic.WithTracerProvider(tracenoop.NewTracerProvider()),
		semantic.WithMeterProvider(metricnoop.NewMeterProvider())))})
	none()
	off()
	a, b := testing.AllocsPerRun(50, none), testing.AllocsPerRun(50, off)
	if b > a+1 {
		t.Fatalf("a run allocates %.1f times with tracing off, %.1f without tracing", b, a)
	}
}
