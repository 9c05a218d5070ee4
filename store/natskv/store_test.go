package natskv_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/store"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/store/natskv"
	"github.com/saap-go/agent/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// embedded starts an in-process nats-server for the test.
func embedded(t testing.TB) string {
	t.Helper()
	s, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s.URL()
}

// external returns NATS_URL or skips.
func external(t testing.TB) string {
	t.Helper()
	url := os.Getenv("NATS_URL")
	if url == "" {
		t.Skip("NATS_URL not set: skipping the external NATS suite")
	}
	return url
}

func connect(t testing.TB, url string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

var bucketSeq atomic.Int64

// uniqueConfig names buckets no other test (or test run on a shared
// server) uses, and removes them when the test ends.
func uniqueConfig(t testing.TB, js jetstream.JetStream) natskv.Config {
	t.Helper()
	cfg := natskv.Config{
		Bucket:  fmt.Sprintf("saap_test_%d_%d_%d", os.Getpid(), time.Now().UnixNano(), bucketSeq.Add(1)),
		Storage: jetstream.MemoryStorage,
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, b := range []string{cfg.Bucket, cfg.Bucket + natskv.ThreadBucketSuffix} {
			if err := js.DeleteKeyValue(ctx, b); err != nil {
				t.Errorf("removing bucket %s: %v", b, err)
			}
		}
	})
	return cfg
}

func newStore(t testing.TB, js jetstream.JetStream) *natskv.Store {
	t.Helper()
	s, err := natskv.New(t.Context(), js, uniqueConfig(t, js))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformanceEmbedded(t *testing.T) {
	js := connect(t, embedded(t))
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t, js) })
}

func TestConformanceExternal(t *testing.T) {
	js := connect(t, external(t))
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t, js) })
}

func TestBucketSettings(t *testing.T) {
	js := connect(t, embedded(t))
	cfg := uniqueConfig(t, js)
	cfg.Storage = jetstream.FileStorage
	if _, err := natskv.New(t.Context(), js, cfg); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bucket string
		ttl    time.Duration
	}{
		{cfg.Bucket, natskv.DefaultTTL},
		{cfg.Bucket + natskv.ThreadBucketSuffix, 0},
	} {
		kv, err := js.KeyValue(t.Context(), tc.bucket)
		if err != nil {
			t.Fatalf("bucket %s: %v", tc.bucket, err)
		}
		st, err := kv.Status(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.TTL() != tc.ttl || st.History() != 1 {
			t.Errorf("bucket %s: TTL %v history %d, want TTL %v history 1", tc.bucket, st.TTL(), st.History(), tc.ttl)
		}
		if info := st.(*jetstream.KeyValueBucketStatus).StreamInfo(); info.Config.Storage != jetstream.FileStorage {
			t.Errorf("bucket %s: storage %v, want file", tc.bucket, info.Config.Storage)
		}
	}
}

func TestNewReusesExistingBuckets(t *testing.T) {
	js := connect(t, embedded(t))
	cfg := uniqueConfig(t, js)
	a, err := natskv.New(t.Context(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	run := store.RunKey{Class: "C", Run: "r"}
	if _, _, err := a.SetMarker(t.Context(), run, store.MarkerEnd, store.Completed); err != nil {
		t.Fatal(err)
	}
	// A second replica with other settings opens the same buckets as they are.
	cfg.TTL = time.Hour
	b, err := natskv.New(t.Context(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := b.Marker(t.Context(), run, store.MarkerEnd); err != nil || !ok || v != store.Completed {
		t.Fatalf("second store sees marker %q, %v, %v", v, ok, err)
	}
}

func TestNewRejectsNilJetStream(t *testing.T) {
	if _, err := natskv.New(t.Context(), nil, natskv.Config{}); err == nil {
		t.Fatal("New(nil) succeeded")
	}
}

// TestStateSurvivesServerRestart checks the point of the KV store: claims,
// markers and contexts on file storage outlive the server process.
func TestStateSurvivesServerRestart(t *testing.T) {
	dir := t.TempDir()
	srv, err := natsserver.Start(natsserver.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	cfg := natskv.Config{Bucket: "restart_state"}
	s, err := natskv.New(t.Context(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	run := store.RunKey{Class: "C", Run: "r"}
	if _, err := s.Claim(t.Context(), run, store.ClaimRequest{Step: "s", Key: "k", Max: 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(t.Context(), store.ThreadContext("C", "t"), "k", []byte(`"v"`)); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	srv.Shutdown()

	srv, err = natsserver.Start(natsserver.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err = nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ = jetstream.New(nc)
	s, err = natskv.New(t.Context(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Claim(t.Context(), run, store.ClaimRequest{Step: "s", Key: "k", Max: 2})
	if err != nil || r.Status != store.Pending || r.Count != 1 {
		t.Fatalf("after restart Claim = %+v, %v; want Pending with count 1", r, err)
	}
	if v, ok, err := s.Get(t.Context(), store.ThreadContext("C", "t"), "k"); err != nil || !ok || string(v) != `"v"` {
		t.Fatalf("after restart thread context = %q, %v, %v", v, ok, err)
	}
}

// A run's first batch is one seed key: another process, which never saw
// it written, reads its entries, and of an entry written since and the
// seed the later wins there too.
func TestSeedSeenByAnotherProcess(t *testing.T) {
	url := embedded(t)
	js := connect(t, url)
	cfg := uniqueConfig(t, js)
	a, err := natskv.New(t.Context(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := natskv.New(t.Context(), connect(t, url), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc := store.RunKey{Class: "Cls", Run: "r1"}.RunContext()
	if err := a.SetMany(t.Context(), sc, []store.Entry{{Key: "x", Value: []byte(`1`)}, {Key: "y", Value: []byte(`2`)}, {Key: "z", Value: []byte(`3`)}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(t.Context(), sc, "y"); err != nil {
		t.Fatal(err)
	}
	if err := a.Set(t.Context(), sc, "z", []byte(`4`)); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"x": `1`, "z": `4`} {
		if got, ok, err := b.Get(t.Context(), sc, k); err != nil || !ok || string(got) != want {
			t.Fatalf("other process: Get(%q) = %q, %v, %v; want %q", k, got, ok, err, want)
		}
	}
	if _, ok, err := b.Get(t.Context(), sc, "y"); err != nil || ok {
		t.Fatalf("other process: Get of a seeded key deleted since: found %v, %v", ok, err)
	}
	keys, err := b.Keys(t.Context(), sc)
	if err != nil || fmt.Sprint(keys) != "[x z]" {
		t.Fatalf("other process: Keys = %q, %v; want [x z]", keys, err)
	}
	if n, err := b.Incr(t.Context(), sc, "x", 5); err != nil || n != 6 {
		t.Fatalf("other process: Incr of a seeded key = %d, %v; want 6", n, err)
	}
	if got, _, err := a.Get(t.Context(), sc, "x"); err != nil || string(got) != "6" {
		t.Fatalf("writer: Get after the other's Incr = %q, %v; want 6", got, err)
	}
}
