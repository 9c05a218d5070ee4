package natskv_test

import (
	"os"
	"testing"

	memstore "github.com/saap-go/agent/store/memory"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/store/natskv"
	"github.com/saap-go/agent/store/storetest"
)

// BenchmarkStore measures the store operations of a step execution on the
// KV store, on the embedded server and, with NATS_URL, on the external one.
// The baseline of each server, same run, is RoundTrip: one raw KV get of an
// existing key. Time per operation divided by it is the number of round
// trips an operation costs, which is what the store's design controls (the
// absolute times follow the machine's load). MemoryStore figures show the
// in-process floor.
func BenchmarkStore(b *testing.B) {
	b.Run("memory", func(b *testing.B) { storetest.Bench(b, memstore.New()) })
	servers := []struct{ name, url string }{{"kv-embedded", ""}}
	if url := os.Getenv("NATS_URL"); url != "" {
		servers = append(servers, struct{ name, url string }{"kv-external", url})
	}
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			url := srv.url
			if url == "" {
				url = embedded(b)
			}
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
			b.Run("RoundTrip", func(b *testing.B) { benchRoundTrip(b, raw) })
			storetest.Bench(b, s)
		})
	}
}

func benchRoundTrip(b *testing.B, kv jetstream.KeyValue) {
	if _, err := kv.Put(b.Context(), "baseline", []byte(`1`)); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := kv.Get(b.Context(), "baseline"); err != nil {
			b.Fatal(err)
		}
	}
}
