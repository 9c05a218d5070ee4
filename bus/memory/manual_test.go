package memory_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func manual(t *testing.T) (*memory.Bus, *memory.ManualClock) {
	t.Helper()
	clk := memory.NewManualClock(time.Unix(1_700_000_000, 0))
	b := memory.New(memory.Options{Clock: clk, Manual: true})
	t.Cleanup(func() { _ = b.Close() })
	return b, clk
}

func TestManualDeliversInPublishOrder(t *testing.T) {
	ctx := context.Background()
	b, _ := manual(t)
	if err := b.EnsureStream(ctx, bus.StreamConfig{Name: "s", Subjects: []string{"s.>"}, Duplicates: time.Minute}); err != nil {
		t.Fatal(err)
	}
	var got []string
	if _, err := b.Subscribe(ctx, "s.>", "", func(m *bus.Msg) { got = append(got, "core "+m.Subject) }); err != nil {
		t.Fatal(err)
	}
	c, err := b.Consume(ctx, bus.ConsumerConfig{Stream: "s", Durable: "d"}, func(d bus.Delivery) {
		got = append(got, fmt.Sprintf("durable %s #%d", d.Msg().Subject, d.Seq()))
		if err := d.Ack(ctx); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for _, s := range []string{"s.a", "s.b"} {
		if _, err := b.PublishStream(ctx, &bus.Msg{Subject: s, Data: []byte("x")}, s); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 0 {
		t.Fatalf("delivered before Deliver: %v", got)
	}
	if !b.Deliver(ctx) || len(got) != 1 || got[0] != "core s.a" {
		t.Fatalf("first Deliver: %v", got)
	}
	if n := b.DeliverAll(ctx); n != 3 {
		t.Fatalf("DeliverAll = %d, want 3 (%v)", n, got)
	}
	want := []string{"core s.a", "durable s.a #1", "core s.b", "durable s.b #2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if b.Deliver(ctx) {
		t.Fatal("Deliver true with nothing pending")
	}
}

func TestManualReentrantPublish(t *testing.T) {
	ctx := context.Background()
	b, _ := manual(t)
	var got []string
	_, err := b.Subscribe(ctx, "a.*", "", func(m *bus.Msg) {
		got = append(got, m.Subject)
		if m.Subject == "a.1" {
			// publishing from a handler must queue, not deadlock
			if err := b.Publish(ctx, &bus.Msg{Subject: "a.3"}); err != nil {
				t.Error(err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Publish(ctx, &bus.Msg{Subject: "a.1"})
	_ = b.Publish(ctx, &bus.Msg{Subject: "a.2"})
	if n := b.DeliverAll(ctx); n != 3 {
		t.Fatalf("DeliverAll = %d", n)
	}
	if fmt.Sprint(got) != "[a.1 a.2 a.3]" {
		t.Fatalf("got %v", got)
	}
}

func TestManualRedeliveryOnAdvance(t *testing.T) {
	ctx := context.Background()
	b, clk := manual(t)
	_ = b.EnsureStream(ctx, bus.StreamConfig{Name: "s", Subjects: []string{"s.>"}})
	var counts []uint64
	var last bus.Delivery
	c, err := b.Consume(ctx, bus.ConsumerConfig{Stream: "s", Durable: "d", AckWait: 10 * time.Second, MaxDeliver: 2},
		func(d bus.Delivery) { counts = append(counts, d.NumDelivered()); last = d })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	_, _ = b.PublishStream(ctx, &bus.Msg{Subject: "s.x"}, "")
	b.DeliverAll(ctx)
	clk.Advance(9 * time.Second)
	if b.Deliver(ctx) {
		t.Fatal("redelivered before AckWait")
	}
	if err := last.InProgress(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(9 * time.Second)
	if b.Deliver(ctx) {
		t.Fatal("InProgress did not restart AckWait")
	}
	clk.Advance(time.Second)
	if !b.Deliver(ctx) {
		t.Fatal("no redelivery after AckWait")
	}
	clk.Advance(time.Minute)
	if b.Deliver(ctx) {
		t.Fatal("delivered beyond MaxDeliver")
	}
	if fmt.Sprint(counts) != "[1 2]" {
		t.Fatalf("delivery counts %v", counts)
	}
}

func TestManualRequestAnswersInline(t *testing.T) {
	ctx := context.Background()
	b, _ := manual(t)
	_, err := b.Subscribe(ctx, "rpc.>", "", func(m *bus.Msg) {
		if err := bus.Respond(ctx, b, m, append([]byte("re:"), m.Data...), nil); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Request(ctx, &bus.Msg{Subject: "rpc.x", Data: []byte("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Data) != "re:hi" {
		t.Fatalf("reply %q", r.Data)
	}
	if _, err := b.Request(ctx, &bus.Msg{Subject: "nobody.home"}); !errors.Is(err, bus.ErrNoResponders) {
		t.Fatalf("err = %v, want ErrNoResponders", err)
	}
}

func TestStopRequeuesToOtherMember(t *testing.T) {
	ctx := context.Background()
	b, _ := manual(t)
	_ = b.EnsureStream(ctx, bus.StreamConfig{Name: "s", Subjects: []string{"s.>"}})
	var by []string
	h := func(name string) func(bus.Delivery) {
		return func(d bus.Delivery) { by = append(by, name); _ = d.Ack(ctx) }
	}
	c1, _ := b.Consume(ctx, bus.ConsumerConfig{Stream: "s", Durable: "d"}, h("one"))
	c2, _ := b.Consume(ctx, bus.ConsumerConfig{Stream: "s", Durable: "d"}, h("two"))
	defer c2.Stop()
	for i := 0; i < 4; i++ {
		_, _ = b.PublishStream(ctx, &bus.Msg{Subject: "s.x"}, "")
	}
	_ = c1.Stop()
	if n := b.DeliverAll(ctx); n != 4 {
		t.Fatalf("DeliverAll = %d", n)
	}
	if fmt.Sprint(by) != "[two two two two]" {
		t.Fatalf("deliveries by %v", by)
	}
}

func ExampleBus_Deliver() {
	ctx := context.Background()
	b := memory.New(memory.Options{Manual: true})
	defer b.Close()
	_, _ = b.Subscribe(ctx, "greet.*", "", func(m *bus.Msg) { fmt.Println("got", m.Subject) })
	_ = b.Publish(ctx, &bus.Msg{Subject: "greet.world"})
	fmt.Println("before Deliver")
	b.Deliver(ctx)
	// Output:
	// before Deliver
	// got greet.world
}

func TestRealClockRedeliversAndCloses(t *testing.T) {
	ctx := context.Background()
	b := memory.New(memory.Options{}) // wall clock, goroutine deliveries
	_ = b.EnsureStream(ctx, bus.StreamConfig{Name: "s", Subjects: []string{"s.>"}})
	got := make(chan uint64, 10)
	c, err := b.Consume(ctx, bus.ConsumerConfig{Stream: "s", Durable: "d", AckWait: 20 * time.Millisecond},
		func(d bus.Delivery) {
			got <- d.NumDelivered()
			if d.NumDelivered() == 2 {
				_ = d.Ack(ctx)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = b.PublishStream(ctx, &bus.Msg{Subject: "s.x"}, "")
	for want := uint64(1); want <= 2; want++ {
		select {
		case n := <-got:
			if n != want {
				t.Fatalf("delivery count %d, want %d", n, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no delivery %d", want)
		}
	}
	_ = c.Stop()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, &bus.Msg{Subject: "s.x"}); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("Publish after Close: %v", err)
	}
}

// TestPublisherBuffersAreCopied: the bus keeps one private copy of a
// published message, so a publisher may reuse its data and header at once;
// deliveries and NextMsg see what was published.
func TestPublisherBuffersAreCopied(t *testing.T) {
	ctx := context.Background()
	b, _ := manual(t)
	if err := b.EnsureStream(ctx, bus.StreamConfig{Name: "s", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	var core, durable []string
	if _, err := b.Subscribe(ctx, "s.>", "", func(m *bus.Msg) { core = append(core, string(m.Data)+" "+m.Header.Get("K")) }); err != nil {
		t.Fatal(err)
	}
	c, err := b.Consume(ctx, bus.ConsumerConfig{Stream: "s", Durable: "d"}, func(d bus.Delivery) {
		durable = append(durable, string(d.Msg().Data)+" "+d.Msg().Header.Get("K")+" "+d.Msg().Header.Get("Nats-Msg-Id"))
		_ = d.Ack(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	data, h := []byte("one"), bus.Header{"K": {"v1"}}
	if _, err := b.PublishStream(ctx, &bus.Msg{Subject: "s.a", Header: h, Data: data}, "id-1"); err != nil {
		t.Fatal(err)
	}
	copy(data, "two")
	h["K"][0] = "v2"
	if len(h) != 1 {
		t.Fatalf("PublishStream changed the caller's header: %v", h)
	}
	b.DeliverAll(ctx)
	if fmt.Sprint(core) != "[one v1]" || fmt.Sprint(durable) != "[one v1 id-1]" {
		t.Fatalf("core %q, durable %q; want what was published", core, durable)
	}
	m, err := b.NextMsg(ctx, "s", "", 1)
	if err != nil || string(m.Data) != "one" || m.Header.Get("K") != "v1" {
		t.Fatalf("NextMsg = %+v, %v", m, err)
	}
}

// TestOneTimerPerConsumer: however many messages are outstanding, a
// consumer holds one timer, and their ack waits still expire in order.
func TestOneTimerPerConsumer(t *testing.T) {
	ctx := context.Background()
	b, clk := manual(t)
	if err := b.EnsureStream(ctx, bus.StreamConfig{Name: "s", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	var got []string
	c, err := b.Consume(ctx, bus.ConsumerConfig{Stream: "s", Durable: "d", AckWait: time.Second}, func(d bus.Delivery) {
		got = append(got, fmt.Sprintf("%d#%d", d.Seq(), d.NumDelivered()))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for i := range 100 {
		if _, err := b.PublishStream(ctx, &bus.Msg{Subject: "s.a", Data: []byte("x")}, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		if n := b.DeliverAll(ctx); n != 1 {
			t.Fatalf("delivered %d, want 1", n)
		}
		clk.Advance(time.Millisecond) // staggered ack waits
	}
	if n := clk.Timers(); n != 1 {
		t.Fatalf("%d timers for 100 outstanding messages, want 1", n)
	}
	got = nil
	clk.Advance(time.Second)
	b.DeliverAll(ctx)
	if len(got) != 100 || got[0] != "1#2" || got[99] != "100#2" {
		t.Fatalf("redeliveries %v, want 1#2 … 100#2 in order", got)
	}
}
