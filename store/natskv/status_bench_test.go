package natskv_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/store/natskv"
)

// BenchmarkRunStatus measures a run-status query on the embedded server
// against its baseline, one raw KV get of an existing key on the same
// server, in the same loop: status-read is status.Read on the store
// (what Runner.RunStatus does); status-bus is status.Request, a
// NATS request answered by a replica's ServeStatus, which then reads the
// store (what the gateway does).
func BenchmarkRunStatus(b *testing.B) {
	url := embedded(b)
	js := connect(b, url)
	cfg := uniqueConfig(b, js)
	s, err := natskv.New(b.Context(), js, cfg)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := js.KeyValue(b.Context(), cfg.Bucket)
	if err != nil {
		b.Fatal(err)
	}
	const class, run = "BenchStatus", "run1"
	rec, _ := json.Marshal(status.Record{Class: class, Run: run, AgentID: "a", Thread: "t1", State: status.Waiting,
		Question: &status.Question{EventID: "q1", Event: "HumanInTheLoopInputRequestEvent"}})
	if err := s.PutStatus(b.Context(), store.RunKey{Class: class, Run: run}, "t1", rec); err != nil {
		b.Fatal(err)
	}
	nb, err := natsbus.Connect(natsbus.Config{URL: url})
	if err != nil {
		b.Fatal(err)
	}
	defer nb.Close()
	sub, err := status.Serve(b.Context(), nb, s, class, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if _, err := raw.Put(b.Context(), "baseline", []byte(`1`)); err != nil {
		b.Fatal(err)
	}
	// The three queries alternate within one loop, so that the load of a
	// shared machine weighs on them alike; each is timed on its own.
	ops := [3]func() error{
		func() error { _, err := raw.Get(b.Context(), "baseline"); return err },
		func() error { _, err := status.Read(b.Context(), s, class, run); return err },
		func() error { _, err := status.Request(b.Context(), nb, class, run); return err },
	}
	var took [3]time.Duration
	n := 0
	for b.Loop() {
		for k := range ops {
			i := (k + n) % len(ops)
			t0 := time.Now()
			if err := ops[i](); err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(t0)
		}
		n++
	}
	b.ReportMetric(float64(took[0].Nanoseconds())/float64(n), "ns/raw-get")
	b.ReportMetric(float64(took[1].Nanoseconds())/float64(n), "ns/status-read")
	b.ReportMetric(float64(took[2].Nanoseconds())/float64(n), "ns/status-bus")
	b.ReportMetric(float64(took[1])/float64(took[0]), "read-ratio")
	b.ReportMetric(float64(took[2])/float64(took[0]), "bus-ratio")
}
