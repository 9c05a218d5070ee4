package engine_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/engine"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// The engine on JetStream: two replicas share the runner consumer and a
// store; each run's events are spread over both, so histories are loaded
// from the stream with NextMsg; output ids are de-duplicated by the
// stream. Runs against an embedded nats-server, and against NATS_URL
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
	b, err := natsbus.Connect(natsbus.Config{URL: url, Logger: quiet})
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
	consumers := startEngines(t, b, w, memstore.New(), 2, engine.WithCacheSize(1))
	defer func() { _ = b.DeleteStream(context.Background(), topic.StreamName(class)) }()
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
		startRun(t, b, class, &Question{Text: "?"}, nil)
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
