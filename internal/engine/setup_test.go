package engine_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// quiet is the logger of engines and buses whose logs a test does not read.
var quiet = slog.New(slog.DiscardHandler)

// startEngines creates the stream of w's class on b and n engines for w
// sharing store, each consuming the class's runner consumer: n replicas on
// its queue group. The engines log to quiet unless opts say otherwise. They
// are closed, and their consumers stopped, when the test ends.
func startEngines(t testing.TB, b bus.Bus, w *step.Workflow, st store.Store, n int, opts ...engine.Option) []bus.Consumer {
	t.Helper()
	ctx := context.Background()
	if err := b.EnsureStream(ctx, bus.AgentStream(w.Class())); err != nil {
		t.Fatal(err)
	}
	opts = append([]engine.Option{engine.WithLogger(quiet)}, opts...)
	consumers := make([]bus.Consumer, 0, n)
	for range n {
		eng, err := engine.New(w, b, st, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(eng.Close)
		c, err := b.Consume(ctx, bus.RunnerConsumer(w.Class()), func(d bus.Delivery) { eng.Handle(ctx, d) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Stop() })
		consumers = append(consumers, c)
	}
	return consumers
}

// startRun publishes ev, stamped, with headers h (may be nil) on a fresh
// run of class by agent "a", and returns the run id.
func startRun(t testing.TB, b bus.EventPublisher, class string, ev event.Event, h bus.Header) string {
	t.Helper()
	run := event.NewID()
	event.Stamp(ev)
	if _, err := bus.PublishEvent(context.Background(), b, topic.Agent{Class: class, ID: "a", Thread: run, Display: run, Run: run}, ev, h); err != nil {
		t.Fatal(err)
	}
	return run
}
