package natsbus_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/internal/cputime"
	"github.com/saap-go/agent/internal/natsserver"
)

// The benchmarks compare the bus with raw nats.go doing the same work on
// the same embedded server in the same run (BENCHMARKS.md, "bus:
// transports"). Run: go test -run '^$' -bench . ./bus/natsbus/

var payload = []byte(`{"event_id":"65f1c0de0000000000000001","created_at":1,"_event_name":"ChunkEvent","_parent_event_names":["DisplayEvent","BaseEvent"],"content":"Hello"}`)

func benchServer(b *testing.B) (*natsserver.Server, *nats.Conn, *natsbus.Bus) {
	b.Helper()
	s, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Shutdown)
	nc, err := nats.Connect(s.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	bb, err := natsbus.Connect(natsbus.Config{URL: s.URL(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bb.Close() })
	return s, nc, bb
}

// measure reports cpu-ns/op for the timed part of b.
func measure(b *testing.B) func() {
	start := cputime.Now()
	return func() {
		b.StopTimer()
		b.ReportMetric(float64(cputime.Now()-start)/float64(b.N), "cpu-ns/op")
	}
}

// counter lets a publisher wait until the consumer caught up.
type counter struct {
	n    atomic.Int64
	want int64
	tick chan struct{} // signalled every batch and at the end
	done chan struct{}
}

func newCounter(want int) *counter {
	return &counter{want: int64(want), tick: make(chan struct{}, 1), done: make(chan struct{})}
}

func (c *counter) inc() {
	n := c.n.Add(1)
	if n%batch == 0 || n == c.want {
		select {
		case c.tick <- struct{}{}:
		default:
		}
	}
	if n == c.want {
		close(c.done)
	}
}

func (c *counter) wait(b *testing.B) {
	select {
	case <-c.done:
	case <-time.After(2 * time.Minute):
		b.Fatalf("consumed %d of %d", c.n.Load(), c.want)
	}
}

// batch bounds core messages in flight, so that a subscriber never becomes
// a slow consumer: after each batch the publisher waits until all of it
// was received. Draining fully keeps the wake-up pattern of the two
// variants alike (with overlap, a publisher a few percent slower lets the
// subscriber park once per message, which costs more than the difference).
const batch = 1024

func (c *counter) pace(sent int) {
	if sent%batch != 0 {
		return
	}
	for c.n.Load() < int64(sent) {
		<-c.tick
	}
}

func BenchmarkCore(b *testing.B) {
	ctx := context.Background()
	b.Run("bus", func(b *testing.B) {
		_, _, bb := benchServer(b)
		c := newCounter(b.N)
		sub, err := bb.Subscribe(ctx, "core.>", "", func(*bus.Msg) { c.inc() })
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Unsubscribe()
		_ = bb.Conn().Flush()
		b.ReportAllocs()
		b.ResetTimer()
		defer measure(b)()
		for i := range b.N {
			if err := bb.Publish(ctx, &bus.Msg{Subject: "core.x", Data: payload}); err != nil {
				b.Fatal(err)
			}
			c.pace(i + 1)
		}
		c.wait(b)
	})
	b.Run("raw", func(b *testing.B) {
		_, nc, _ := benchServer(b)
		c := newCounter(b.N)
		sub, err := nc.Subscribe("core.>", func(*nats.Msg) { c.inc() })
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Unsubscribe()
		_ = nc.Flush()
		b.ReportAllocs()
		b.ResetTimer()
		defer measure(b)()
		for i := range b.N {
			if err := nc.PublishMsg(&nats.Msg{Subject: "core.x", Data: payload}); err != nil {
				b.Fatal(err)
			}
			c.pace(i + 1)
		}
		c.wait(b)
	})
}

// BenchmarkJetStream: per message, an async publish waited for its PubAck
// (with a msg id), a durable pull consumer's delivery and its ack.
func BenchmarkJetStream(b *testing.B) {
	ctx := context.Background()
	streamCfg := bus.StreamConfig{Name: "bench", Subjects: []string{"bench.>"}, Storage: bus.FileStorage, Duplicates: time.Minute}
	b.Run("bus", func(b *testing.B) {
		_, _, bb := benchServer(b)
		if err := bb.EnsureStream(ctx, streamCfg); err != nil {
			b.Fatal(err)
		}
		c := newCounter(b.N)
		cons, err := bb.Consume(ctx, bus.ConsumerConfig{Stream: "bench", Durable: "d"}, func(d bus.Delivery) {
			_ = d.Ack(ctx)
			c.inc()
		})
		if err != nil {
			b.Fatal(err)
		}
		defer cons.Stop()
		b.ReportAllocs()
		b.ResetTimer()
		defer measure(b)()
		for i := range b.N {
			if _, err := bb.PublishStream(ctx, &bus.Msg{Subject: "bench.x", Data: payload}, strconv.Itoa(i)); err != nil {
				b.Fatal(err)
			}
		}
		c.wait(b)
	})
	b.Run("raw", func(b *testing.B) {
		_, nc, _ := benchServer(b)
		js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(natsbus.DefaultMaxPending))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "bench", Subjects: []string{"bench.>"},
			Storage: jetstream.FileStorage, Duplicates: time.Minute}); err != nil {
			b.Fatal(err)
		}
		jc, err := js.CreateConsumer(ctx, "bench", jetstream.ConsumerConfig{Durable: "d", AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: 30 * time.Second, MaxDeliver: 5, MaxAckPending: 1000})
		if err != nil {
			b.Fatal(err)
		}
		c := newCounter(b.N)
		cc, err := jc.Consume(func(m jetstream.Msg) {
			_ = m.Ack()
			c.inc()
		})
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Stop()
		b.ReportAllocs()
		b.ResetTimer()
		defer measure(b)()
		for i := range b.N {
			fut, err := js.PublishMsgAsync(&nats.Msg{Subject: "bench.x", Data: payload}, jetstream.WithMsgID(strconv.Itoa(i)))
			if err != nil {
				b.Fatal(err)
			}
			select {
			case <-fut.Ok():
			case err := <-fut.Err():
				b.Fatal(err)
			}
		}
		c.wait(b)
	})
}
