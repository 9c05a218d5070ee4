package runloop

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
)

// A stopping runner hands back the events it is given. At an event's last
// delivery a nak would end it (no delivery comes after MaxDeliver), so the
// runner dead-letters it instead; below the limit, or without one, it naks.
func TestHandBackDeadLettersTheLastDelivery(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name       string
		maxDeliver int
		letters    int    // dead letters of the event
		last       uint64 // the event's last delivery
	}{
		{"limit reached", 2, 1, 2},
		{"no limit", -1, 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			mb := memory.New(memory.Options{Manual: true, Logger: quiet})
			defer func() { _ = mb.Close() }()
			if err := mb.EnsureStream(ctx, bus.StreamConfig{Name: "s", Subjects: []string{"s.>"}}); err != nil {
				t.Fatal(err)
			}
			var letters []*bus.Msg
			if _, err := mb.Subscribe(ctx, bus.DefaultDeadLetters().Subject("s.>"), "", func(m *bus.Msg) { letters = append(letters, m) }); err != nil {
				t.Fatal(err)
			}
			srv := New(t.Context(), nil, 1, quiet, tc.maxDeliver)
			srv.Refuse() // stopping: every event is handed back
			var last uint64
			cfg := bus.ConsumerConfig{Stream: "s", Durable: "runner", MaxDeliver: tc.maxDeliver}
			if _, err := mb.Consume(ctx, cfg, func(d bus.Delivery) {
				last = d.NumDelivered()
				switch d.NumDelivered() {
				case 1:
					_ = d.Nak(0) // a first try that failed
				case 2:
					srv.Deliver(d)
				default:
					_ = d.Ack(ctx)
				}
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := mb.PublishStream(ctx, &bus.Msg{Subject: "s.x", Data: []byte("e")}, "e1"); err != nil {
				t.Fatal(err)
			}
			mb.DeliverAll(ctx)
			if last != tc.last || len(letters) != tc.letters {
				t.Fatalf("last delivery %d, %d dead letters; want %d and %d", last, len(letters), tc.last, tc.letters)
			}
			if tc.letters > 0 {
				if r := letters[0].Header.Get(bus.HeaderDeadLetterReason); !strings.Contains(r, "last delivery (2 of MaxDeliver 2)") {
					t.Errorf("dead letter reason %q", r)
				}
			}
		})
	}
}
