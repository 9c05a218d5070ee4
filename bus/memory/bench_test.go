package memory_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/internal/cputime"
)

func measure(b *testing.B) func() {
	start := cputime.Now()
	return func() {
		b.StopTimer()
		b.ReportMetric(float64(cputime.Now()-start)/float64(b.N), "cpu-ns/op")
	}
}

var payload = []byte(`{"event_id":"65f1c0de0000000000000001","created_at":1,"_event_name":"ChunkEvent","_parent_event_names":["DisplayEvent","BaseEvent"],"content":"Hello"}`)

// BenchmarkPublishConsume: per message, a stream publish with a msg id, a
// durable delivery and its ack, on a Manual bus (no goroutine hand-off).
func BenchmarkPublishConsume(b *testing.B) {
	ctx := context.Background()
	bb := memory.New(memory.Options{Manual: true})
	defer bb.Close()
	_ = bb.EnsureStream(ctx, bus.StreamConfig{Name: "s", Subjects: []string{"s.>"}, MaxMsgs: 10000})
	c, _ := bb.Consume(ctx, bus.ConsumerConfig{Stream: "s", Durable: "d"}, func(d bus.Delivery) { _ = d.Ack(ctx) })
	defer c.Stop()
	b.ReportAllocs()
	b.ResetTimer()
	defer measure(b)()
	for i := range b.N {
		if _, err := bb.PublishStream(ctx, &bus.Msg{Subject: "s.x", Data: payload}, strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
		if !bb.Deliver(ctx) {
			b.Fatal("nothing delivered")
		}
	}
}

// BenchmarkPublishSubscribe: per message, a core publish and its delivery
// on an automatic bus (a goroutine hand-off, as on NATS).
func BenchmarkPublishSubscribe(b *testing.B) {
	ctx := context.Background()
	bb := memory.New(memory.Options{})
	defer bb.Close()
	done := make(chan struct{}, 1)
	n := 0
	_, _ = bb.Subscribe(ctx, "c.>", "", func(*bus.Msg) {
		n++
		if n == b.N {
			done <- struct{}{}
		}
	})
	b.ReportAllocs()
	b.ResetTimer()
	defer measure(b)()
	for range b.N {
		if err := bb.Publish(ctx, &bus.Msg{Subject: "c.x", Data: payload}); err != nil {
			b.Fatal(err)
		}
	}
	<-done
}
