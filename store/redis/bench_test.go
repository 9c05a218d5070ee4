package redis_test

import (
	"testing"

	memstore "github.com/saap-go/agent/store/memory"

	redisstore "github.com/saap-go/agent/store/redis"
	"github.com/saap-go/agent/store/storetest"
)

// BenchmarkStore measures the store operations of a step execution on
// Redis (REDIS_URL). The baseline, same run, is RoundTrip: one raw HGET.
// Time per operation divided by it is the number of round trips an
// operation costs, which the store's design controls (absolute times follow
// the machine's load). MemoryStore figures show the in-process floor.
func BenchmarkStore(b *testing.B) {
	b.Run("memory", func(b *testing.B) { storetest.Bench(b, memstore.New()) })
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
		storetest.Bench(b, s)
	})
}
