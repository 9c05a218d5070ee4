package bustest_test

import (
	"testing"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
)

// TestHelpers checks that each helper gives a working bus: a round trip
// through a stream.
func TestHelpers(t *testing.T) {
	for name, get := range map[string]func(testing.TB) bus.Bus{
		"memory":   func(t testing.TB) bus.Bus { return bustest.NewMemory(t) },
		"nats":     func(t testing.TB) bus.Bus { return bustest.NewNATS(t) },
		"external": func(t testing.TB) bus.Bus { return bustest.NewExternalNATS(t) },
	} {
		t.Run(name, func(t *testing.T) {
			b := get(t)
			ctx := t.Context()
			id := bustest.Unique()
			cfg := bus.StreamConfig{Name: "helper_" + id, Subjects: []string{"helper." + id + ".>"}, Storage: bus.MemoryStorage}
			if err := b.EnsureStream(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			defer b.DeleteStream(ctx, cfg.Name)
			ack, err := b.PublishStream(ctx, &bus.Msg{Subject: "helper." + id + ".x", Data: []byte("hi")}, "")
			if err != nil {
				t.Fatal(err)
			}
			m, err := b.NextMsg(ctx, cfg.Name, "", ack.Seq)
			if err != nil || string(m.Data) != "hi" {
				t.Fatalf("read back %v, %v", m, err)
			}
		})
	}
}
