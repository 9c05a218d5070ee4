package kvstore_test

import (
	"encoding/json"
	"testing"

	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/dispatch"
	"github.com/saap-go/agent/dispatch/kvstore"
)

// BenchmarkRunStatus measures a run-status query on the embedded server
// against its baseline, RoundTrip: one raw KV get of an existing key on
// the same server, same run. Read is dispatch.ReadStatus on the store (what
// Runner.RunStatus does); Bus is dispatch.RequestStatus, a NATS request
// answered by a replica's ServeStatus, which then reads the store (what
// the gateway does).
func BenchmarkRunStatus(b *testing.B) {
	url := embedded(b)
	js := connect(b, url)
	cfg := uniqueConfig(b, js)
	s, err := kvstore.New(b.Context(), js, cfg)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := js.KeyValue(b.Context(), cfg.Bucket)
	if err != nil {
		b.Fatal(err)
	}
	const class, run = "BenchStatus", "run1"
	rec, _ := json.Marshal(dispatch.RunStatus{Class: class, Run: run, AgentID: "a", Thread: "t1", State: dispatch.StateWaiting,
		Question: &dispatch.OpenQuestion{EventID: "q1", Event: "HumanInTheLoopInputRequestEvent"}})
	if err := s.PutStatus(b.Context(), dispatch.RunKey{Class: class, Run: run}, "t1", rec); err != nil {
		b.Fatal(err)
	}
	b.Run("RoundTrip", func(b *testing.B) { benchRoundTrip(b, raw) })
	b.Run("Read", func(b *testing.B) {
		for b.Loop() {
			if _, err := dispatch.ReadStatus(b.Context(), s, class, run); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Bus", func(b *testing.B) {
		nb, err := natsbus.Connect(natsbus.Config{URL: url})
		if err != nil {
			b.Fatal(err)
		}
		defer nb.Close()
		sub, err := dispatch.ServeStatus(b.Context(), nb, s, class, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = sub.Unsubscribe() }()
		for b.Loop() {
			if _, err := dispatch.RequestStatus(b.Context(), nb, class, run); err != nil {
				b.Fatal(err)
			}
		}
	})
}
