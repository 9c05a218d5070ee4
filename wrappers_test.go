package agent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/store"
	"github.com/saap-go/agent/store/natskv"
	"github.com/saap-go/agent/store/storetest"
)

// meteredBus is a third-party Bus wrapper, as one for metrics would be: it
// embeds the interface and forwards the capabilities natsbus names.
type meteredBus struct {
	bus.Bus
	inner     *natsbus.Bus
	published atomic.Int64
}

func (m *meteredBus) PublishStream(ctx context.Context, msg *bus.Msg, id string) (bus.PubAck, error) {
	m.published.Add(1)
	return m.Bus.PublishStream(ctx, msg, id)
}
func (m *meteredBus) PublishNew(ctx context.Context, msg *bus.Msg, id string) (bus.PubAck, error) {
	m.published.Add(1)
	return m.Bus.PublishNew(ctx, msg, id)
}
func (m *meteredBus) JetStream() jetstream.JetStream { return m.inner.JetStream() }
func (m *meteredBus) Closed() <-chan struct{}        { return m.inner.Closed() }

// meteredStore is a third-party Store wrapper that forwards the optional
// capabilities the store package names.
type meteredStore struct {
	store.Store
	calls atomic.Int64
}

func (m *meteredStore) Claim(ctx context.Context, run store.RunKey, req store.ClaimRequest) (store.ClaimResult, error) {
	m.calls.Add(1)
	return m.Store.Claim(ctx, run, req)
}
func (m *meteredStore) PutStatus(ctx context.Context, run store.RunKey, thread string, value []byte) error {
	m.calls.Add(1)
	return m.Store.(store.Statuses).PutStatus(ctx, run, thread, value)
}
func (m *meteredStore) Status(ctx context.Context, run store.RunKey) ([]byte, bool, error) {
	return m.Store.(store.Statuses).Status(ctx, run)
}
func (m *meteredStore) ListStatus(ctx context.Context, class, thread, after string, limit int) ([]store.StatusEntry, error) {
	return m.Store.(store.Statuses).ListStatus(ctx, class, thread, after, limit)
}

// TestThirdPartyWrappersLoseNothing: behind a Bus and a Store wrapper the
// SDK does not know, the runner keeps its features: state in JetStream KV
// when no store is given, the run status index, and a paused run that
// survives a restart of its runner.
func TestThirdPartyWrappersLoseNothing(t *testing.T) {
	t.Setenv("REDIS_URL", "") // the runner's default store on this bus is what is tested
	s := embedded(t)
	c := client(t, s.URL())
	t.Run("store suite", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			st, err := natskv.New(context.Background(), c.JetStream(), natskv.Config{Bucket: "wrap_" + event.NewID(), TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return &meteredStore{Store: st}
		})
	})

	class := uniqueClass("Wrapped")
	w := watch(t, c, class)
	wb := &meteredBus{Bus: c, inner: c}
	kv, err := natskv.New(context.Background(), c.JetStream(), natskv.Config{Bucket: "wrap_" + event.NewID(), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ws := &meteredStore{Store: kv}

	// Without a store, the wrapped bus still gets the JetStream KV store.
	r := startRunner(t, &greeter{class: class}, agent.WithBus(wb), agent.Standalone(), quiet(t))
	if got := r.Info().Store; got != "jetstream-kv" {
		t.Errorf("store behind the wrapped bus: %q, want jetstream-kv", got)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}

	r = startRunner(t, &greeter{class: class}, agent.WithBus(wb), agent.WithStore(ws), agent.Standalone(), quiet(t))
	run, req := askedRun(t, c, w, class)
	// The status index works through the wrapper. It is written a short
	// delay after the run pauses, by design, and nothing signals it: poll.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(waitLong)
	for {
		rec, err := r.RunStatus(context.Background(), run.Run)
		if err == nil && rec.State == status.Waiting {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("run status through the wrapped store: %+v, %v", rec, err)
		}
	}
	// A restart of the runner: the paused run goes on when answered.
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	startRunner(t, &greeter{class: class}, agent.WithBus(wb), agent.WithStore(ws), agent.Standalone(), quiet(t))
	publish(t, c, run, &event.HumanInTheLoopInputResponseEvent{Response: "Ada", RequestEvent: req}, nil)
	evs := w.until(t, run.Run, "an end", func(evs []event.Event) bool { return findTerminal(evs) != nil })
	if _, ok := findTerminal(evs).(*event.StopEvent); !ok {
		t.Fatalf("after the restart the run ended with %s, want its StopEvent", names(evs))
	}
	if wb.published.Load() == 0 || ws.calls.Load() == 0 {
		t.Errorf("the wrappers saw %d publishes and %d store calls: the runner went around them", wb.published.Load(), ws.calls.Load())
	}
}
