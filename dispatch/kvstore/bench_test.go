package kvstore_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/dispatch"
	"github.com/saap-go/agent/dispatch/kvstore"
)

// BenchmarkStore measures the store operations of a step execution on the
// KV store, on the embedded server and, with NATS_URL, on the external one.
// The baseline of each server, same run, is RoundTrip: one raw KV get of an
// existing key. Time per operation divided by it is the number of round
// trips an operation costs, which is what the store's design controls (the
// absolute times follow the machine's load). MemoryStore figures show the
// in-process floor.
func BenchmarkStore(b *testing.B) {
	b.Run("memory", func(b *testing.B) { benchOps(b, dispatch.NewMemoryStore()) })
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
			s, err := kvstore.New(b.Context(), js, cfg)
			if err != nil {
				b.Fatal(err)
			}
			raw, err := js.KeyValue(b.Context(), cfg.Bucket)
			if err != nil {
				b.Fatal(err)
			}
			b.Run("RoundTrip", func(b *testing.B) { benchRoundTrip(b, raw) })
			benchOps(b, s)
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

// benchOps runs the operations of one step execution against s.
func benchOps(b *testing.B, s dispatch.Store) {
	b.Run("ClaimComplete", func(b *testing.B) {
		run := dispatch.RunKey{Class: "Bench", Run: "claims"}
		for i := 0; b.Loop(); i++ {
			key := strconv.Itoa(i)
			if _, err := s.Claim(b.Context(), run, dispatch.ClaimRequest{Step: "s", Key: key}); err != nil {
				b.Fatal(err)
			}
			if err := s.Complete(b.Context(), run, "s", key, dispatch.Outcome{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ClaimLimited", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			// A fresh run per 10 claims, as a step with max_executions 10.
			run := dispatch.RunKey{Class: "Bench", Run: "limited" + strconv.Itoa(i/10)}
			if _, err := s.Claim(b.Context(), run, dispatch.ClaimRequest{Step: "s", Key: strconv.Itoa(i), Max: 10}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ContextSetGet", func(b *testing.B) {
		sc := dispatch.RunKey{Class: "Bench", Run: "ctx"}.RunContext()
		val := []byte(`{"loop_count":3,"note":"a typical small JSON value"}`)
		for b.Loop() {
			if err := s.Set(b.Context(), sc, "k", val); err != nil {
				b.Fatal(err)
			}
			if _, _, err := s.Get(b.Context(), sc, "k"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Incr", func(b *testing.B) {
		sc := dispatch.ThreadContext("Bench", "t")
		for b.Loop() {
			if _, err := s.Incr(b.Context(), sc, "n", 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
