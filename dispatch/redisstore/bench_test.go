package redisstore_test

import (
	"strconv"
	"testing"

	"github.com/saap-go/agent/dispatch"
	"github.com/saap-go/agent/dispatch/redisstore"
)

// BenchmarkStore measures the store operations of one step execution on
// the in-memory store (the baseline) and on Redis (REDIS_URL). Report
// ratios against memory.
func BenchmarkStore(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) dispatch.Store
	}{
		{"memory", func(*testing.B) dispatch.Store { return dispatch.NewMemoryStore() }},
		{"redis", func(b *testing.B) dispatch.Store { return newStore(b, client(b), redisstore.Config{}) }},
	}
	for _, st := range stores {
		b.Run("ClaimComplete/"+st.name, func(b *testing.B) {
			s := st.open(b)
			run := dispatch.RunKey{Class: "Bench", Run: "r"}
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
		b.Run("ClaimLimited/"+st.name, func(b *testing.B) {
			s := st.open(b)
			for i := 0; b.Loop(); i++ {
				run := dispatch.RunKey{Class: "Bench", Run: strconv.Itoa(i / 10)}
				if _, err := s.Claim(b.Context(), run, dispatch.ClaimRequest{Step: "s", Key: strconv.Itoa(i), Max: 10}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("ContextSetGet/"+st.name, func(b *testing.B) {
			s := st.open(b)
			sc := dispatch.RunKey{Class: "Bench", Run: "r"}.RunContext()
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
		b.Run("Incr/"+st.name, func(b *testing.B) {
			s := st.open(b)
			sc := dispatch.ThreadContext("Bench", "t")
			for b.Loop() {
				if _, err := s.Incr(b.Context(), sc, "n", 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
