package redisstore_test

import (
	"strconv"
	"testing"

	"github.com/saap-go/agent/dispatch"
	"github.com/saap-go/agent/dispatch/redisstore"
)

// BenchmarkStore measures the store operations of a step execution on
// Redis (REDIS_URL). The baseline, same run, is RoundTrip: one raw HGET.
// Time per operation divided by it is the number of round trips an
// operation costs, which the store's design controls (absolute times follow
// the machine's load). MemoryStore figures show the in-process floor.
func BenchmarkStore(b *testing.B) {
	b.Run("memory", func(b *testing.B) { benchOps(b, dispatch.NewMemoryStore()) })
	b.Run("redis", func(b *testing.B) {
		rdb := client(b)
		prefix := uniquePrefix(b, rdb)
		s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
		if err != nil {
			b.Fatal(err)
		}
		b.Run("RoundTrip", func(b *testing.B) {
			if err := rdb.HSet(b.Context(), prefix+"baseline", "k", "1").Err(); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := rdb.HGet(b.Context(), prefix+"baseline", "k").Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
		benchOps(b, s)
	})
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
