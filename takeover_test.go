package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// A class moves from the reference's Python runner to a Go runner. The
// Python runner consumed with a push consumer named agent_runner_<Class>
// (queue subscription, durable = deliver group, deliver all, explicit ack)
// and acknowledged some events before it stopped. The Go runner takes over
// from the acknowledgement floor: it handles exactly the events the Python
// runner left unacknowledged, replays none it handled and skips none.
func TestTakeOverReferencePushConsumer(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("Moved")
	ctx := context.Background()
	if err := c.EnsureStream(ctx, bus.AgentStream(class)); err != nil {
		t.Fatal(err)
	}

	// The reference runner's consumer, created the way the Python client
	// creates it for js.subscribe(subject, queue=..., durable=...).
	py, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer py.Close()
	pyjs, err := py.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	durable := "agent_runner_" + class
	filter, _ := topic.ClassControl(class)
	got := make(chan *nats.Msg, 16)
	if _, err := pyjs.QueueSubscribe(filter, durable, func(m *nats.Msg) { got <- m },
		nats.Durable(durable), nats.BindStream(topic.StreamName(class)), nats.ManualAck(),
		nats.AckExplicit(), nats.DeliverAll(), nats.AckWait(30*time.Second), nats.MaxDeliver(5)); err != nil {
		t.Fatal(err)
	}
	if pc, err := c.JetStream().PushConsumer(ctx, topic.StreamName(class), durable); err != nil || pc.CachedInfo().Config.DeliverGroup != durable {
		t.Fatalf("no push consumer %s: %v", durable, err)
	}

	// Five runs start; the Python runner handles (acknowledges) the first
	// three and stops before it settles the other two.
	var runs []topic.Agent
	for range 5 {
		run := newRun(class, "wiki")
		runs = append(runs, run)
		publish(t, c, run, userMessage("hi"), nil)
	}
	var firstUnacked uint64
	for i := range 5 {
		select {
		case m := <-got:
			md, err := m.Metadata()
			if err != nil {
				t.Fatal(err)
			}
			if i == 3 {
				firstUnacked = md.Sequence.Stream
			}
			if i < 3 {
				if err := m.AckSync(); err != nil {
					t.Fatal(err)
				}
			}
		case <-time.After(waitLong):
			t.Fatalf("the push consumer delivered %d of 5 events", i)
		}
	}
	py.Close() // the Python runner is gone; its consumer stays

	w := watch(t, c, class)
	startRunner(t, &linear{class: class}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))

	for _, run := range runs[3:] {
		if term := w.terminal(t, run.Run); !event.IsStop(term) {
			t.Fatalf("unacknowledged run ended with %s, want StopEvent", event.Name(term))
		}
	}
	// Once the consumer has delivered and settled everything, a handled
	// run would have its step outputs in the stream.
	waitAcked(t, c.JetStream(), class)
	for i, run := range runs[:3] {
		if evs := controlEvents(t, c, class, run.Run); len(evs) != 1 {
			t.Errorf("run %d, acknowledged by the Python runner, was handled again: %s", i, names(evs))
		}
	}

	info, err := c.JetStream().Consumer(ctx, topic.StreamName(class), durable)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.CachedInfo().Config
	if cfg.DeliverSubject != "" || cfg.DeliverPolicy != jetstream.DeliverByStartSequencePolicy || cfg.OptStartSeq > firstUnacked {
		t.Errorf("consumer after take-over: deliver subject %q, policy %v, start seq %d; want a pull consumer from seq %d at the latest",
			cfg.DeliverSubject, cfg.DeliverPolicy, cfg.OptStartSeq, firstUnacked)
	}
}
