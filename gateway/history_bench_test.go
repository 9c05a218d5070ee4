package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/internal/cputime"
)

// BenchmarkHistoryFill measures filling a start event from a 200-turn
// thread (400 entries, a question and an answer per turn) against a raw
// JetStream read of the same subject in the same run (raw-read: an ordered
// consumer fetching the 400 messages, nothing decoded). fill is what the
// gateway does for reconstruct_history: look up the thread's end, read it
// with an ephemeral consumer, delete that, decode every entry's chat
// message and encode the messages list of the start event. cpu-ns/op is
// the process's CPU (client and embedded server) per read, steadier than
// the wall time on a shared machine.
func BenchmarkHistoryFill(b *testing.B) {
	const turns = 200
	bs := bustest.NewNATS(b)
	ctx := context.Background()
	cfg := gateway.HistoryConfig{Stream: "SAAP_HISTORY_BENCH", Subject: "saap.history"}
	hist, err := gateway.NewJetStreamHistory(ctx, bs.JetStream(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	thread := event.NewID()
	for i := range turns {
		for _, m := range []struct{ role, text string }{
			{event.RoleUser, fmt.Sprintf("question %d: %s", i, strings.Repeat("how does this work? ", 4))},
			{event.RoleAssistant, fmt.Sprintf("answer %d: %s", i, strings.Repeat("it works like this. ", 12))},
		} {
			raw, err := event.MarshalValue(event.Text(m.role, m.text))
			if err != nil {
				b.Fatal(err)
			}
			if err := hist.Append(ctx, thread, gateway.HistoryEntry{ID: event.NewID(), Message: raw, CreatedAt: 1}); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Other threads in the stream, as in production.
	for range 200 {
		raw, _ := event.MarshalValue(event.Text(event.RoleUser, "elsewhere"))
		if err := hist.Append(ctx, event.NewID(), gateway.HistoryEntry{ID: event.NewID(), Message: raw, CreatedAt: 1}); err != nil {
			b.Fatal(err)
		}
	}
	gw, err := gateway.New(gateway.Config{Bus: bs, Auth: gateway.Anonymous(alice), History: hist})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("raw-read", func(b *testing.B) {
		s, err := bs.JetStream().Stream(ctx, cfg.Stream)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		start := cputime.Now()
		for b.Loop() {
			cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{"saap.history." + thread},
				InactiveThreshold: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for n < 2*turns {
				msgs, err := cons.Fetch(2*turns - n)
				if err != nil {
					b.Fatal(err)
				}
				for range msgs.Messages() {
					n++
				}
			}
		}
		b.ReportMetric(float64(cputime.Now()-start)/float64(b.N), "cpu-ns/op")
	})
	b.Run("fill", func(b *testing.B) {
		b.ReportAllocs()
		start := cputime.Now()
		for b.Loop() {
			body := map[string]json.RawMessage{"messages": json.RawMessage(`[{"role":"user","content":"next"}]`)}
			if ok, err := gw.FillMessages(ctx, thread, body); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
		b.ReportMetric(float64(cputime.Now()-start)/float64(b.N), "cpu-ns/op")
	})
}
