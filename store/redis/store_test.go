package redis_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/store"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	redisstore "github.com/saap-go/agent/store/redis"
	"github.com/saap-go/agent/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// client connects to REDIS_URL or skips the test.
func client(t testing.TB) *redis.Client {
	t.Helper()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		t.Skip("REDIS_URL not set: skipping the Redis store tests")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("Redis at %s: %v", url, err)
	}
	return rdb
}

var prefixSeq atomic.Int64

// uniquePrefix returns a key prefix no other test (or run on the shared
// server) uses, and deletes its keys when the test ends.
func uniquePrefix(t testing.TB, rdb *redis.Client) string {
	t.Helper()
	p := fmt.Sprintf("saap_test:%d:%d:%d:", os.Getpid(), time.Now().UnixNano(), prefixSeq.Add(1))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := rdb.Scan(ctx, 0, p+"*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("cleaning up %s*: %v", p, err)
		}
	})
	return p
}

func newStore(t testing.TB, rdb *redis.Client, cfg redisstore.Config) *redisstore.Store {
	t.Helper()
	cfg.Prefix = uniquePrefix(t, rdb)
	s, err := redisstore.New(rdb, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	rdb := client(t)
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t, rdb, redisstore.Config{}) })
}

func TestTTLs(t *testing.T) {
	rdb := client(t)
	prefix := uniquePrefix(t, rdb)
	s, err := redisstore.New(rdb, redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	run := store.RunKey{Class: "C", Run: "r"}
	if _, err := s.Claim(ctx, run, store.ClaimRequest{Step: "s", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, run.RunContext(), "k", []byte(`1`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SetMarker(ctx, run, store.MarkerEnd, store.Completed); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(ctx, store.ThreadContext("C", "t"), "k", []byte(`1`)); err != nil {
		t.Fatal(err)
	}
	var withTTL, without int
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		ttl := rdb.TTL(ctx, iter.Val()).Val()
		switch {
		case ttl < 0:
			without++
			if want := "{thread:C:t}:ctx"; len(iter.Val()) < len(want) || iter.Val()[len(iter.Val())-len(want):] != want {
				t.Errorf("key %s has no TTL", iter.Val())
			}
		case ttl > 29*24*time.Hour && ttl <= redisstore.DefaultTTL:
			withTTL++
		default:
			t.Errorf("key %s has TTL %v, want 30 days", iter.Val(), ttl)
		}
	}
	if withTTL < 4 || without != 1 {
		t.Fatalf("%d keys with the 30-day TTL and %d without, want ≥ 4 (claims, counts, ctx, markers) and 1 (thread context)", withTTL, without)
	}
}

func TestOpen(t *testing.T) {
	url := os.Getenv("REDIS_URL")
	if url == "" {
		t.Skip("REDIS_URL not set: skipping the Redis store tests")
	}
	s, err := redisstore.Open(t.Context(), url, redisstore.Config{Prefix: fmt.Sprintf("saap_test:open:%d:", time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Count(t.Context(), store.RunKey{Class: "C", Run: "r"}, "s"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenReportsBadURLs(t *testing.T) {
	if _, err := redisstore.Open(t.Context(), "http://nope", redisstore.Config{}); err == nil {
		t.Fatal("Open with an http URL succeeded")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	// Port 1 on loopback: nothing listens there.
	if _, err := redisstore.Open(ctx, "redis://127.0.0.1:1", redisstore.Config{}); err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
}

func TestNewRejectsNilClient(t *testing.T) {
	if _, err := redisstore.New(nil, redisstore.Config{}); err == nil {
		t.Fatal("New(nil) succeeded")
	}
}
