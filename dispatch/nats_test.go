package dispatch_test

import (
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/dispatch"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// The engine on JetStream: two replicas share the runner consumer and a
// store; each run's events are spread over both, so histories are loaded
// from the stream with NextMsg (D7); output ids are de-duplicated by the
// stream (D15). Runs against an embedded nats-server, and against NATS_URL
// when it is set.
func TestEngineOnNATS(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		s, err := natsserver.Start(natsserver.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown()
		testEngineOnNATS(t, s.URL())
	})
	t.Run("external", func(t *testing.T) {
		url := os.Getenv("NATS_URL")
		if url == "" {
			t.Skip("NATS_URL is not set")
		}
		testEngineOnNATS(t, url)
	})
}

func testEngineOnNATS(t *testing.T, url string) {
	ctx := t.Context()
	log := slog.New(slog.DiscardHandler)
	b, err := natsbus.Connect(natsbus.Config{URL: url, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	class := fmt.Sprintf("DispatchNATS%d", time.Now().UnixNano())
	split := step.New(func(ctx step.Context, q *Question) ([]*Work, error) {
		return []*Work{{Part: 1}, {Part: 2}, {Part: 3}}, nil
	}, step.Name("split"))
	join := step.New(func(ctx step.Context, ws []*Work) (*Answer, error) {
		return &Answer{Text: fmt.Sprint(len(ws))}, nil
	}, step.Name("join"), step.Precondition(func(ctx step.Context, ws []*Work) (bool, error) { return len(ws) == 3, nil }))
	w, err := step.NewWorkflow(class, split, join)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureStream(ctx, bus.AgentStream(class)); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.DeleteStream(t.Context(), topic.StreamName(class)) }()

	store := dispatch.NewMemoryStore()
	var consumers []bus.Consumer
	for range 2 {
		eng, err := dispatch.New(w, b, store, dispatch.WithLogger(log), dispatch.WithCacheSize(1))
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		c, err := b.Consume(ctx, bus.RunnerConsumer(class), func(d bus.Delivery) { eng.Handle(ctx, d) })
		if err != nil {
			t.Fatal(err)
		}
		consumers = append(consumers, c)
	}
	answers := make(chan string, 16)
	pattern, _ := topic.ClassControl(class)
	sub, err := b.Subscribe(ctx, pattern, "", func(m *bus.Msg) {
		if e, err := event.Unmarshal(m.Data); err == nil {
			if a, ok := e.(*Answer); ok {
				answers <- a.Text
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	const runs = 4
	for range runs {
		run := event.NewID()
		q := event.Stamp(&Question{Text: "?"})
		if _, err := bus.PublishEvent(ctx, b, topic.Agent{Class: class, ID: "a", Thread: run, Display: run, Run: run}, q, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range runs {
		select {
		case got := <-answers:
			if got != "3" {
				t.Fatalf("answer %q, want 3", got)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("runs did not finish on NATS")
		}
	}
	for _, c := range consumers {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}
	select {
	case got := <-answers:
		t.Fatalf("an extra answer %q: a run ended twice", got)
	default:
	}
}
