package natskv

import (
	"errors"
	"testing"

	"github.com/saap-go/agent/store"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/bus/bustest"
)

// TestReservedSlotWithoutClaimIsPending simulates a crash between the two
// writes of a limited claim: the counter lists the key, the claim key was
// never created. The next Claim must report the execution as Pending (run it
// again) without taking a second slot.
func TestReservedSlotWithoutClaimIsPending(t *testing.T) {
	s := embeddedStore(t, Config{Bucket: "crash", Storage: jetstream.MemoryStorage})
	run := store.RunKey{Class: "C", Run: "r"}
	ok, err := s.casCounter(t.Context(), counterKey("C", "r", "s"), counterValue{N: 1, Keys: []string{"k"}}, 0)
	if err != nil || !ok {
		t.Fatalf("writing the reservation: %v, %v", ok, err)
	}
	r, err := s.Claim(t.Context(), run, store.ClaimRequest{Step: "s", Key: "k", Max: 1})
	if err != nil || r.Status != store.Pending || r.Count != 1 {
		t.Fatalf("Claim = %+v, %v; want Pending with count 1", r, err)
	}
	if err := s.Complete(t.Context(), run, "s", "k", store.Outcome{}); err != nil {
		t.Fatalf("Complete of the recovered claim: %v", err)
	}
	r, err = s.Claim(t.Context(), run, store.ClaimRequest{Step: "s", Key: "other", Max: 1})
	if err != nil || r.Status != store.Limited {
		t.Fatalf("Claim of another key = %+v, %v; want Limited", r, err)
	}
}

// The bucket's direct writes answer as the client's: Create of a live key
// is ErrKeyExists, of a deleted one succeeds, Update at a stale revision
// fails as the client's does, Put always lands.
func TestDirectWritesAnswerAsTheClient(t *testing.T) {
	s := embeddedStore(t, Config{Bucket: "direct", Storage: jetstream.FileStorage})
	kv := s.state.(*limited)
	if kv.js == nil {
		t.Fatal("the state bucket does not write directly")
	}
	ctx := t.Context()
	rev, err := kv.Create(ctx, "a.b", []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "a.b", []byte("2")); !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("Create of a live key: %v, want ErrKeyExists", err)
	}
	if _, err := kv.Update(ctx, "a.b", []byte("3"), rev+10); err == nil {
		t.Fatal("Update at a wrong revision succeeded")
	} else if _, cerr := kv.KeyValue.Update(ctx, "a.b", []byte("3"), rev+10); cerr == nil || err.Error() != cerr.Error() {
		t.Fatalf("Update at a wrong revision: %v; the client says %v", err, cerr)
	}
	rev2, err := kv.Update(ctx, "a.b", []byte("4"), rev)
	if err != nil || rev2 <= rev {
		t.Fatalf("Update at the revision: %d, %v", rev2, err)
	}
	if err := kv.Delete(ctx, "a.b"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "a.b", []byte("5")); err != nil {
		t.Fatalf("Create of a deleted key: %v", err)
	}
	if _, err := kv.Put(ctx, "a.b", []byte("6")); err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "a.b")
	if err != nil || string(e.Value()) != "6" {
		t.Fatalf("Get = %v, %v; want 6", e, err)
	}
	for _, bad := range []string{"a..b", "a.*", ".a", "a b"} {
		if _, err := kv.Put(ctx, bad, nil); !errors.Is(err, jetstream.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
}

// embeddedStore is a Store on a server of its own, stopped when t ends.
func embeddedStore(t *testing.T, cfg Config) *Store {
	t.Helper()
	s, err := New(t.Context(), bustest.NewNATS(t).JetStream(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readPubAck reads what the client's decoding reads: the sequence of an
// answer, the client's errors for the rest.
func TestReadPubAck(t *testing.T) {
	for _, tc := range []struct {
		in  string
		seq uint64
		err string
	}{
		{`{"stream":"KV_s","seq":12}`, 12, ""},
		{`{"stream":"KV_s", "domain":"d", "seq":7, "duplicate":true}`, 7, ""},
		{`{"stream":"KV_s","seq":18446744073709551615}`, 18446744073709551615, ""},
		{`{"stream":"KV_s","seq":1,"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"}}`, 0, "nats: nats: API error: code=400 err_code=10071 description=wrong last sequence: 3"},
		{`{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"},"stream":"KV_s","seq":0}`, 0, "nats: nats: API error: code=503 err_code=10077 description=maximum messages exceeded"},
		{`{"stream":"KV_s"}`, 0, ""},
		{`{"seq":3}`, 0, jetstream.ErrInvalidJSAck.Error()},
		{`{"stream":"KV_s","seq":-1}`, 0, jetstream.ErrInvalidJSAck.Error()},
		{`not json`, 0, jetstream.ErrInvalidJSAck.Error()},
		{``, 0, jetstream.ErrInvalidJSAck.Error()},
	} {
		seq, err := readPubAck([]byte(tc.in))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if seq != tc.seq || got != tc.err {
			t.Errorf("readPubAck(%s) = %d, %q; want %d, %q", tc.in, seq, got, tc.seq, tc.err)
		}
	}
	var apiErr *jetstream.APIError
	if _, err := readPubAck([]byte(`{"error":{"code":400,"err_code":10071,"description":"x"}}`)); !errors.As(err, &apiErr) || !conflict(err) {
		t.Errorf("a wrong-last-sequence answer is not a conflict: %v", err)
	}
}

// The values a seed is cached with on writing are those a reader decodes.
func TestEncodeSeedValuesAsDecoded(t *testing.T) {
	entries := []store.Entry{
		{Key: "agent_config", Value: []byte(`{"a":1}`)},
		{Key: "empty", Value: []byte{}},
		{Key: "twice", Value: []byte("first")},
		{Key: "ünïcode key", Value: []byte(`"x"`)},
		{Key: "twice", Value: []byte("second")},
	}
	raw, vals := encodeSeed(entries)
	want, err := decodeSeed(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != len(want) {
		t.Fatalf("%d values, decoding gives %d", len(vals), len(want))
	}
	for k, v := range want {
		if got, ok := vals[k]; !ok || string(got) != string(v) {
			t.Errorf("%q: %q, decoding gives %q", k, got, v)
		}
	}
	entries[0].Value[0] = 'X' // the caller's bytes are not the cached ones
	if string(vals["agent_config"]) != `{"a":1}` {
		t.Errorf("cached value follows the caller's slice: %q", vals["agent_config"])
	}
	vals["empty"] = append(vals["empty"], 'Z') // a cached value cannot grow into the next
	if again, _ := decodeSeed(raw); string(again["twice"]) != "second" {
		t.Errorf("appending to a cached value changed the seed: %q", again["twice"])
	}
}
