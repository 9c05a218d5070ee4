// Package storetest is the conformance suite for store.Store
// implementations. Every store (in-memory, NATS KV, Redis) must pass it:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return newMyStore(t) })
//	}
//
// newStore is called once per subtest and must return an empty store (or one
// whose keys cannot collide with other subtests: the suite uses fresh class
// names per subtest, so a shared backend works as long as the store does not
// enumerate foreign keys). Subtests run sequentially; some start goroutines
// to check atomicity and wait for them before returning.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/store"
)

// Run runs the conformance suite against stores made by newStore.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s store.Store, c string)
	}{
		{"ClaimLifecycle", testClaimLifecycle},
		{"ClaimFailedOutcome", testClaimFailedOutcome},
		{"KeptOutputs", testKeptOutputs},
		{"CompleteAbsent", testCompleteAbsent},
		{"MaxExecutions", testMaxExecutions},
		{"PendingTakesNoSlot", testPendingTakesNoSlot},
		{"ConcurrentClaimOneWinner", testConcurrentClaimOneWinner},
		{"ConcurrentClaimsRespectMax", testConcurrentClaimsRespectMax},
		{"RecordLifecycle", testRecordLifecycle},
		{"RecordCompletesPending", testRecordCompletesPending},
		{"ConcurrentRecordOneWinner", testConcurrentRecordOneWinner},
		{"Markers", testMarkers},
		{"ConcurrentMarkerOneWinner", testConcurrentMarkerOneWinner},
		{"Context", testContext},
		{"SetMany", testSetMany},
		{"Incr", testIncr},
		{"ConcurrentIncr", testConcurrentIncr},
		{"Namespaces", testNamespaces},
		{"DeleteRun", testDeleteRun},
		{"OddKeys", testOddKeys},
		{"InvalidInput", testInvalidInput},
		{"Status", testStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			// A class name unique to this subtest and process keeps runs of the
			// suite apart on a shared backend.
			c := fmt.Sprintf("Conf%s%d", tc.name, time.Now().UnixNano())
			tc.fn(t, s, c)
		})
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

func count(t *testing.T, s store.Store, run store.RunKey, step string) int64 {
	t.Helper()
	n, err := s.Count(ctx(t), run, step)
	if err != nil {
		t.Fatalf("Count(%s): %v", step, err)
	}
	return n
}

func incr(t *testing.T, s store.Store, sc store.Scope, key string, delta int64) int64 {
	t.Helper()
	n, err := s.Incr(ctx(t), sc, key, delta)
	if err != nil {
		t.Fatalf("Incr(%s, %d): %v", key, delta, err)
	}
	return n
}

func keys(t *testing.T, s store.Store, sc store.Scope) []string {
	t.Helper()
	k, err := s.Keys(ctx(t), sc)
	if err != nil {
		t.Fatalf("Keys: %v", err)
	}
	return k
}

func claim(t *testing.T, s store.Store, run store.RunKey, step, key string, max int64) store.ClaimResult {
	t.Helper()
	r, err := s.Claim(ctx(t), run, store.ClaimRequest{Step: step, Key: key, Max: max})
	if err != nil {
		t.Fatalf("Claim(%s, %s): %v", step, key, err)
	}
	return r
}

func wantClaim(t *testing.T, got store.ClaimResult, status store.ClaimStatus, count int64) {
	t.Helper()
	if got.Status != status || got.Count != count {
		t.Fatalf("Claim = {%v count %d}, want {%v count %d}", got.Status, got.Count, status, count)
	}
}

func testClaimLifecycle(t *testing.T, s store.Store, c string) {
	run := store.RunKey{Class: c, Run: "r1"}
	wantClaim(t, claim(t, s, run, "s", "k1", 0), store.Claimed, 1)
	wantClaim(t, claim(t, s, run, "s", "k1", 0), store.Pending, 1)
	if err := s.Complete(ctx(t), run, "s", "k1", store.Outcome{}); err != nil {
		t.Fatal(err)
	}
	got := claim(t, s, run, "s", "k1", 0)
	wantClaim(t, got, store.Done, 1)
	if !got.Outcome.Equal(store.Outcome{}) {
		t.Fatalf("Outcome = %+v, want success", got.Outcome)
	}
	// Another key of the same step is another execution.
	wantClaim(t, claim(t, s, run, "s", "k2", 0), store.Claimed, 2)
	// Another step has its own counter.
	wantClaim(t, claim(t, s, run, "t", "k1", 0), store.Claimed, 1)
	if n := count(t, s, run, "s"); n != 2 {
		t.Fatalf("Count(s) = %d, want 2", n)
	}
	if n := count(t, s, run, "absent"); n != 0 {
		t.Fatalf("Count(absent) = %d, want 0", n)
	}
}

func testClaimFailedOutcome(t *testing.T, s store.Store, c string) {
	run := store.RunKey{Class: c, Run: "r1"}
	claim(t, s, run, "s", "k", 0)
	want := store.Outcome{Failed: true, Message: "boom: ünïcode \"quoted\""}
	if err := s.Complete(ctx(t), run, "s", "k", want); err != nil {
		t.Fatal(err)
	}
	got := claim(t, s, run, "s", "k", 0)
	if got.Status != store.Done || !got.Outcome.Equal(want) {
		t.Fatalf("Claim = %+v, want Done with %+v", got, want)
	}
}

// testKeptOutputs: the encoded outputs kept with a claim come back with
// it, byte for byte, until a second Complete drops them.
func testKeptOutputs(t *testing.T, s store.Store, c string) {
	run := store.RunKey{Class: c, Run: "r1"}
	claim(t, s, run, "s", "k", 0)
	big := `{"_event_name":"Out","text":"` + strings.Repeat("ü", 20000) + `","n":[1,2.5,null,true]}`
	kept := store.Outcome{Outputs: []json.RawMessage{
		json.RawMessage(`{"_event_name":"Out","event_id":"a","created_at":1}`),
		json.RawMessage(big),
	}}
	if err := s.Complete(ctx(t), run, "s", "k", kept); err != nil {
		t.Fatal(err)
	}
	got := claim(t, s, run, "s", "k", 0)
	if got.Status != store.Done || !got.Outcome.Equal(kept) {
		t.Fatalf("Claim = %v with %d outputs, want Done with the 2 kept outputs unchanged", got.Status, len(got.Outcome.Outputs))
	}
	failed := store.Outcome{Failed: true, Message: "boom", Outputs: []json.RawMessage{json.RawMessage(`{"_event_name":"ExceptionEvent"}`)}}
	if err := s.Complete(ctx(t), run, "s", "k", failed); err != nil {
		t.Fatal(err)
	}
	if got := claim(t, s, run, "s", "k", 0); !got.Outcome.Equal(failed) {
		t.Fatalf("Outcome = %+v, want %+v", got.Outcome, failed)
	}
	done := store.Outcome{Failed: true, Message: "boom"}
	if err := s.Complete(ctx(t), run, "s", "k", done); err != nil {
		t.Fatal(err)
	}
	if got := claim(t, s, run, "s", "k", 0); !got.Outcome.Equal(done) || got.Outcome.Outputs != nil {
		t.Fatalf("after the outputs were dropped: %+v", got.Outcome)
	}
	// The kept outputs are the claim's: DeleteRun removes them.
	if err := s.Complete(ctx(t), run, "s", "k", kept); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRun(ctx(t), run); err != nil {
		t.Fatal(err)
	}
	wantClaim(t, claim(t, s, run, "s", "k", 0), store.Claimed, 1)
}

func testCompleteAbsent(t *testing.T, s store.Store, c string) {
	run := store.RunKey{Class: c, Run: "r1"}
	err := s.Complete(ctx(t), run, "s", "nope", store.Outcome{})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Complete(absent) = %v, want ErrNotFound", err)
	}
	// Nothing was stored: the claim is still new.
	wantClaim(t, claim(t, s, run, "s", "nope", 0), store.Claimed, 1)
}

func testMaxExecutions(t *testing.T, s store.Store, c string) {
	run := store.RunKey{Class: c, Run: "r1"}
	wantClaim(t, claim(t, s, run, "s", "k1", 2), store.Claimed, 1)
	wantClaim(t, claim(t, s, run, "s", "k2", 2), store.Claimed, 2)
	wantClaim(t, claim(t, s, run, "s", "k3", 2), store.Limited, 2)
	// Existing claims are still reported at the limit.
	wantClaim(t, claim(t, s, run, "s", "k1", 2), store.Pending, 2)
	if err := s.Complete(ctx(t), run, "s", "k2", store.Outcome{}); err != nil {
		t.Fatal(err)
	}
	wantClaim(t, claim(t, s, run, "s", "k2", 2), store.Done, 2)
	// A limited request created nothing.
	if err := s.Complete(ctx(t), run, "s", "k3", store.Outcome{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Complete(limited) = %v, want ErrNotFound", err)
	}
	if n := count(t, s, run, "s"); n != 2 {
		t.Fatalf("Count = %d, want 2", n)
	}
}

func testPendingTakesNoSlot(t *testing.T, s store.Store, c string) {
	run := store.RunKey{Class: c, Run: "r1"}
	wantClaim(t, claim(t, s, run, "s", "k1", 1), store.Claimed, 1)
	for range 3 {
		wantClaim(t, claim(t, s, run, "s", "k1", 1), store.Pending, 1)
	}
	if n := count(t, s, run, "s"); n != 1 {
		t.Fatalf("Count = %d, want 1", n)
	}
}

const workers = 16

// parallel runs fn(i) for i in [0, workers) at once and waits.
func parallel(fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range workers {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

func testConcurrentClaimOneWinner(t *testing.T, s store.Store, c string) {
	for round := range 5 {
		run := store.RunKey{Class: c, Run: fmt.Sprintf("r%d", round)}
		var claimed, other atomic.Int64
		var errs sync.Map
		parallel(func(i int) {
			r, err := s.Claim(context.Background(), run, store.ClaimRequest{Step: "s", Key: "same", Max: 3})
			switch {
			case err != nil:
				errs.Store(i, err)
			case r.Status == store.Claimed:
				claimed.Add(1)
			case r.Status == store.Pending:
				other.Add(1)
			}
		})
		errs.Range(func(k, v any) bool { t.Errorf("worker %v: %v", k, v); return true })
		if claimed.Load() != 1 || other.Load() != workers-1 {
			t.Fatalf("round %d: %d Claimed and %d Pending, want 1 and %d", round, claimed.Load(), other.Load(), workers-1)
		}
		if n := count(t, s, run, "s"); n != 1 {
			t.Fatalf("round %d: Count = %d, want 1", round, n)
		}
	}
}

func record(t *testing.T, s store.Store, run store.RunKey, step, key string, o store.Outcome) store.ClaimResult {
	t.Helper()
	r, err := s.Record(ctx(t), run, step, key, o)
	if err != nil {
		t.Fatalf("Record(%s, %s): %v", step, key, err)
	}
	return r
}

// testRecordLifecycle: a claim and its completion written as one record,
// outputs kept in it, counted as one execution; a second Record changes
// nothing and returns the first outcome; DeleteRun removes it.
func testRecordLifecycle(t *testing.T, s store.Store, c string) {
	run := store.RunKey{Class: c, Run: "r1"}
	big := `{"_event_name":"Out","text":"` + strings.Repeat("ü", 20000) + `"}`
	first := store.Outcome{Outputs: []json.RawMessage{json.RawMessage(`{"_event_name":"Out","event_id":"a"}`), json.RawMessage(big)}}
	if r := record(t, s, run, "s", "k1", first); r.Status != store.Claimed {
		t.Fatalf("Record(new) = %v, want claimed", r.Status)
	}
	if n := count(t, s, run, "s"); n != 1 {
		t.Fatalf("Count after one Record = %d, want 1", n)
	}
	got := claim(t, s, run, "s", "k1", 0)
	if got.Status != store.Done || !got.Outcome.Equal(first) {
		t.Fatalf("Claim after Record = %v with %d outputs, want Done with the recorded outcome", got.Status, len(got.Outcome.Outputs))
	}
	second := store.Outcome{Failed: true, Message: "other"}
	r := record(t, s, run, "s", "k1", second)
	if r.Status != store.Done || !r.Outcome.Equal(first) {
		t.Fatalf("Record(done) = %v %+v, want Done with the first outcome", r.Status, r.Outcome.Message)
	}
	if n := count(t, s, run, "s"); n != 1 {
		t.Fatalf("Count after a repeated Record = %d, want 1", n)
	}
	// Another key is another execution; other steps keep their own counts.
	record(t, s, run, "s", "k2", store.Outcome{Failed: true, Message: "boom"})
	if r := claim(t, s, run, "s", "k3", 0); r.Status != store.Claimed {
		t.Fatalf("Claim(k3) = %v, want claimed", r.Status)
	}
	if n := count(t, s, run, "s"); n != 3 {
		t.Fatalf("Count after Records and a Claim = %d, want 3", n)
	}
	if n := count(t, s, run, "t"); n != 0 {
		t.Fatalf("Count(t) = %d, want 0", n)
	}
	if err := s.DeleteRun(ctx(t), run); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, run, "s"); n != 0 {
		t.Fatalf("Count after DeleteRun = %d, want 0", n)
	}
	if r := record(t, s, run, "s", "k1", second); r.Status != store.Claimed {
		t.Fatalf("Record after DeleteRun = %v, want claimed", r.Status)
	}
}

// testRecordCompletesPending: Record on a claim Claim left pending (an
// interrupted execution) completes it and takes no new slot.
func testRecordCompletesPending(t *testing.T, s store.Store, c string) {
	run := store.RunKey{Class: c, Run: "r1"}
	wantClaim(t, claim(t, s, run, "s", "k", 0), store.Claimed, 1)
	o := store.Outcome{Outputs: []json.RawMessage{json.RawMessage(`{"_event_name":"Out"}`)}}
	if r := record(t, s, run, "s", "k", o); r.Status != store.Claimed {
		t.Fatalf("Record(pending) = %v, want claimed", r.Status)
	}
	if got := claim(t, s, run, "s", "k", 0); got.Status != store.Done || !got.Outcome.Equal(o) {
		t.Fatalf("Claim after Record = %v, want Done with the outcome", got.Status)
	}
	if n := count(t, s, run, "s"); n != 1 {
		t.Fatalf("Count = %d, want 1: completing a pending claim takes no slot", n)
	}
}

func testConcurrentRecordOneWinner(t *testing.T, s store.Store, c string) {
	for round := range 5 {
		run := store.RunKey{Class: c, Run: fmt.Sprintf("r%d", round)}
		var claimed, done atomic.Int64
		var winner atomic.Value
		var errs sync.Map
		outs := make([]store.Outcome, workers)
		for i := range outs {
			outs[i] = store.Outcome{Message: strconv.Itoa(i)}
		}
		parallel(func(i int) {
			r, err := s.Record(context.Background(), run, "s", "same", outs[i])
			switch {
			case err != nil:
				errs.Store(i, err)
			case r.Status == store.Claimed:
				claimed.Add(1)
				winner.Store(outs[i].Message)
			case r.Status == store.Done:
				done.Add(1)
			}
		})
		errs.Range(func(k, v any) bool { t.Errorf("worker %v: %v", k, v); return true })
		if claimed.Load() != 1 || done.Load() != workers-1 {
			t.Fatalf("round %d: %d Claimed and %d Done, want 1 and %d", round, claimed.Load(), done.Load(), workers-1)
		}
		if got := claim(t, s, run, "s", "same", 0); got.Outcome.Message != winner.Load() {
			t.Fatalf("round %d: stored outcome %q, want the winner's %q", round, got.Outcome.Message, winner.Load())
		}
		if n := count(t, s, run, "s"); n != 1 {
			t.Fatalf("round %d: Count = %d, want 1", round, n)
		}
	}
}

func testConcurrentClaimsRespectMax(t *testing.T, s store.Store, c string) {
	run := store.RunKey{Class: c, Run: "r1"}
	const max = 5
	var claimed, limited atomic.Int64
	var errs sync.Map
	parallel(func(i int) {
		r, err := s.Claim(context.Background(), run, store.ClaimRequest{Step: "s", Key: fmt.Sprintf("k%d", i), Max: max})
		switch {
		case err != nil:
			errs.Store(i, err)
		case r.Status == store.Claimed:
			claimed.Add(1)
		case r.Status == store.Limited:
			limited.Add(1)
		}
	})
	errs.Range(func(k, v any) bool { t.Errorf("worker %v: %v", k, v); return true })
	if claimed.Load() != max || limited.Load() != workers-max {
		t.Fatalf("%d Claimed and %d Limited, want %d and %d", claimed.Load(), limited.Load(), max, workers-max)
	}
	if n := count(t, s, run, "s"); n != max {
		t.Fatalf("Count = %d, want %d", n, max)
	}
}

func testMarkers(t *testing.T, s store.Store, c string) {
	run := store.RunKey{Class: c, Run: "r1"}
	if _, ok := must2(t)(s.Marker(ctx(t), run, store.MarkerEnd)); ok {
		t.Fatal("marker set before SetMarker")
	}
	v, created, err := s.SetMarker(ctx(t), run, store.MarkerEnd, store.Completed)
	if err != nil || !created || v != store.Completed {
		t.Fatalf("SetMarker = %q, %v, %v; want %q, true, nil", v, created, err, store.Completed)
	}
	v, created, err = s.SetMarker(ctx(t), run, store.MarkerEnd, store.Crashed)
	if err != nil || created || v != store.Completed {
		t.Fatalf("second SetMarker = %q, %v, %v; want %q, false, nil (first value kept)", v, created, err, store.Completed)
	}
	got, ok := must2(t)(s.Marker(ctx(t), run, store.MarkerEnd))
	if !ok || got != store.Completed {
		t.Fatalf("Marker = %q, %v; want %q, true", got, ok, store.Completed)
	}
	// Markers survive DeleteRun (the reference's "markers survive delete all").
	if err := s.Set(ctx(t), run.RunContext(), "k", []byte(`1`)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRun(ctx(t), run); err != nil {
		t.Fatal(err)
	}
	if got, ok := must2(t)(s.Marker(ctx(t), run, store.MarkerEnd)); !ok || got != store.Completed {
		t.Fatalf("after DeleteRun: Marker = %q, %v; want %q, true", got, ok, store.Completed)
	}
	// Markers are per run and per name.
	if _, ok := must2(t)(s.Marker(ctx(t), store.RunKey{Class: c, Run: "r2"}, store.MarkerEnd)); ok {
		t.Fatal("marker leaked to another run")
	}
	if _, ok := must2(t)(s.Marker(ctx(t), run, store.MarkerTerminal)); ok {
		t.Fatal("marker leaked to another name")
	}
}

func must2(t *testing.T) func(string, bool, error) (string, bool) {
	return func(v string, ok bool, err error) (string, bool) {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v, ok
	}
}

func testConcurrentMarkerOneWinner(t *testing.T, s store.Store, c string) {
	run := store.RunKey{Class: c, Run: "r1"}
	var created atomic.Int64
	values := make([]string, workers)
	var errs sync.Map
	parallel(func(i int) {
		v, ok, err := s.SetMarker(context.Background(), run, store.MarkerEnd, fmt.Sprintf("v%d", i))
		if err != nil {
			errs.Store(i, err)
		}
		if ok {
			created.Add(1)
		}
		values[i] = v
	})
	errs.Range(func(k, v any) bool { t.Errorf("worker %v: %v", k, v); return true })
	if created.Load() != 1 {
		t.Fatalf("%d SetMarker calls created the marker, want exactly 1", created.Load())
	}
	for i, v := range values {
		if v != values[0] {
			t.Fatalf("worker %d saw %q, worker 0 saw %q: all must see the winner's value", i, v, values[0])
		}
	}
}

func testContext(t *testing.T, s store.Store, c string) {
	for _, sc := range []store.Scope{
		store.RunKey{Class: c, Run: "r1"}.RunContext(),
		store.ThreadContext(c, "t1"),
	} {
		t.Run(sc.Kind.String(), func(t *testing.T) {
			if keys := keys(t, s, sc); len(keys) != 0 {
				t.Fatalf("Keys of a new scope = %q, want none", keys)
			}
			if _, ok, err := s.Get(ctx(t), sc, "a"); err != nil || ok {
				t.Fatalf("Get(absent) = %v, %v; want false, nil", ok, err)
			}
			val := []byte(`{"x":[1,2,"ü"]}`)
			for _, k := range []string{"b", "a", "c"} {
				if err := s.Set(ctx(t), sc, k, val); err != nil {
					t.Fatal(err)
				}
			}
			got, ok, err := s.Get(ctx(t), sc, "a")
			if err != nil || !ok || string(got) != string(val) {
				t.Fatalf("Get = %q, %v, %v; want %q, true, nil", got, ok, err, val)
			}
			got[0] = 'X' // callers own returned values
			if again, _, _ := s.Get(ctx(t), sc, "a"); string(again) != string(val) {
				t.Fatalf("modifying a returned value changed the store: %q", again)
			}
			if err := s.Set(ctx(t), sc, "a", []byte(`2`)); err != nil {
				t.Fatal(err)
			}
			if got, _, _ := s.Get(ctx(t), sc, "a"); string(got) != `2` {
				t.Fatalf("after overwrite Get = %q, want 2", got)
			}
			if keys := keys(t, s, sc); !slices.Equal(keys, []string{"a", "b", "c"}) {
				t.Fatalf("Keys = %q, want [a b c] (sorted)", keys)
			}
			if err := s.Delete(ctx(t), sc, "b"); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx(t), sc, "b"); err != nil {
				t.Fatalf("deleting an absent key: %v", err)
			}
			if keys := keys(t, s, sc); !slices.Equal(keys, []string{"a", "c"}) {
				t.Fatalf("Keys after Delete = %q, want [a c]", keys)
			}
		})
	}
}

// testSetMany checks store.Contexts, for stores that have it: every
// entry lands under its key (odd keys included), overwriting, and DeleteRun
// removes them like any run-context key.
func testSetMany(t *testing.T, s store.Store, c string) {
	b, ok := s.(store.Contexts)
	if !ok {
		t.Skip("the store does not implement store.Contexts")
	}
	run := store.RunKey{Class: c, Run: "r1"}
	for _, sc := range []store.Scope{run.RunContext(), store.ThreadContext(c, "t1")} {
		t.Run(sc.Kind.String(), func(t *testing.T) {
			if err := s.Set(ctx(t), sc, "a", []byte(`0`)); err != nil {
				t.Fatal(err)
			}
			entries := []store.Entry{{Key: "a", Value: []byte(`1`)}, {Key: "b.c d", Value: []byte(`"ü"`)}, {Key: "_x", Value: []byte(`{"y":[2]}`)}}
			if err := b.SetMany(ctx(t), sc, entries); err != nil {
				t.Fatal(err)
			}
			for _, en := range entries {
				got, ok, err := s.Get(ctx(t), sc, en.Key)
				if err != nil || !ok || string(got) != string(en.Value) {
					t.Fatalf("Get(%q) = %q, %v, %v; want %q", en.Key, got, ok, err, en.Value)
				}
			}
			if keys := keys(t, s, sc); !slices.Equal(keys, []string{"_x", "a", "b.c d"}) {
				t.Fatalf("Keys = %q", keys)
			}
			if err := b.SetMany(ctx(t), sc, []store.Entry{{Key: "", Value: []byte(`1`)}}); err == nil {
				t.Fatal("SetMany with an empty key: no error")
			}
			// Every later write wins over the batch: a Set, a Delete, an
			// Incr and a second batch.
			if err := s.Set(ctx(t), sc, "a", []byte(`5`)); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx(t), sc, "_x"); err != nil {
				t.Fatal(err)
			}
			if n := incr(t, s, sc, "a", 2); n != 7 {
				t.Fatalf("Incr of a batch key set to 5 since: %d, want 7", n)
			}
			if err := b.SetMany(ctx(t), sc, []store.Entry{{Key: "b.c d", Value: []byte(`2`)}, {Key: "e", Value: []byte(`3`)}}); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"a": `7`, "b.c d": `2`, "e": `3`}
			for k, v := range want {
				if got, ok, err := s.Get(ctx(t), sc, k); err != nil || !ok || string(got) != v {
					t.Fatalf("Get(%q) after later writes = %q, %v, %v; want %q", k, got, ok, err, v)
				}
			}
			if _, ok, err := s.Get(ctx(t), sc, "_x"); err != nil || ok {
				t.Fatalf("Get of a batch key deleted since: found %v, %v", ok, err)
			}
			if keys := keys(t, s, sc); !slices.Equal(keys, []string{"a", "b.c d", "e"}) {
				t.Fatalf("Keys after later writes = %q", keys)
			}
		})
	}
	// A batch key incremented before any other write.
	fresh := store.RunKey{Class: c, Run: "r2"}.RunContext()
	if err := b.SetMany(ctx(t), fresh, []store.Entry{{Key: "n", Value: []byte(`1`)}, {Key: "m", Value: []byte(`"x"`)}}); err != nil {
		t.Fatal(err)
	}
	if n := incr(t, s, fresh, "n", 1); n != 2 {
		t.Fatalf("Incr of a batch key at 1: %d, want 2", n)
	}
	if err := s.DeleteRun(ctx(t), store.RunKey{Class: c, Run: "r2"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRun(ctx(t), run); err != nil {
		t.Fatal(err)
	}
	if keys := keys(t, s, run.RunContext()); len(keys) != 0 {
		t.Fatalf("run context keys after DeleteRun = %q, want none", keys)
	}
}

func testIncr(t *testing.T, s store.Store, c string) {
	sc := store.ThreadContext(c, "t1")
	if n := incr(t, s, sc, "n", 1); n != 1 {
		t.Fatalf("Incr(absent, 1) = %d, want 1", n)
	}
	if n := incr(t, s, sc, "n", 41); n != 42 {
		t.Fatalf("Incr(1, 41) = %d, want 42", n)
	}
	if n := incr(t, s, sc, "n", -50); n != -8 {
		t.Fatalf("Incr(42, -50) = %d, want -8", n)
	}
	// The stored value is a JSON number.
	raw, ok, err := s.Get(ctx(t), sc, "n")
	if err != nil || !ok {
		t.Fatalf("Get after Incr = %v, %v", ok, err)
	}
	var v int64
	if err := json.Unmarshal(raw, &v); err != nil || v != -8 {
		t.Fatalf("stored value %q decodes to %d, %v; want -8", raw, v, err)
	}
	// A value set as JSON integer can be incremented.
	if err := s.Set(ctx(t), sc, "m", []byte(`10`)); err != nil {
		t.Fatal(err)
	}
	if n := incr(t, s, sc, "m", 5); n != 15 {
		t.Fatalf("Incr(10, 5) = %d, want 15", n)
	}
	if err := s.Set(ctx(t), sc, "s", []byte(`"text"`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Incr(ctx(t), sc, "s", 1); !errors.Is(err, store.ErrNotInteger) {
		t.Fatalf("Incr(non-integer) = %v, want ErrNotInteger", err)
	}
	if got, _, _ := s.Get(ctx(t), sc, "s"); string(got) != `"text"` {
		t.Fatalf("a failed Incr changed the value to %q", got)
	}
}

func testConcurrentIncr(t *testing.T, s store.Store, c string) {
	for _, sc := range []store.Scope{
		store.RunKey{Class: c, Run: "r1"}.RunContext(),
		store.ThreadContext(c, "t1"),
	} {
		const per = 10
		seen := make([][]int64, workers)
		var errs sync.Map
		parallel(func(i int) {
			for range per {
				n, err := s.Incr(context.Background(), sc, "n", 1)
				if err != nil {
					errs.Store(i, err)
					return
				}
				seen[i] = append(seen[i], n)
			}
		})
		errs.Range(func(k, v any) bool { t.Errorf("worker %v: %v", k, v); return true })
		all := slices.Concat(seen...)
		slices.Sort(all)
		for i, n := range all {
			if n != int64(i+1) {
				t.Fatalf("%s: increments returned %v; want each of 1..%d exactly once", sc.Kind, all, workers*per)
			}
		}
		if len(all) != workers*per {
			t.Fatalf("%s: %d increments returned, want %d", sc.Kind, len(all), workers*per)
		}
	}
}

func testNamespaces(t *testing.T, s store.Store, c string) {
	// Same run id, two classes, and a thread whose id equals the run id.
	a := store.RunKey{Class: c + "A", Run: "shared"}
	b := store.RunKey{Class: c + "B", Run: "shared"}
	th := store.ThreadContext(a.Class, "shared")
	for _, sc := range []store.Scope{a.RunContext(), b.RunContext(), th} {
		if err := s.Set(ctx(t), sc, "who", []byte(`"`+sc.Class+sc.Kind.String()+`"`)); err != nil {
			t.Fatal(err)
		}
	}
	claim(t, s, a, "s", "k", 0)
	wantClaim(t, claim(t, s, b, "s", "k", 0), store.Claimed, 1)
	if _, _, err := s.SetMarker(ctx(t), a, store.MarkerEnd, store.Completed); err != nil {
		t.Fatal(err)
	}
	if _, ok := must2(t)(s.Marker(ctx(t), b, store.MarkerEnd)); ok {
		t.Fatal("a marker of class A is visible in class B")
	}
	if err := s.DeleteRun(ctx(t), a); err != nil {
		t.Fatal(err)
	}
	// A's run state is gone; B's run and A's thread are untouched.
	if keys := keys(t, s, a.RunContext()); len(keys) != 0 {
		t.Fatalf("run context of A after DeleteRun: %q", keys)
	}
	for _, sc := range []store.Scope{b.RunContext(), th} {
		got, ok, err := s.Get(ctx(t), sc, "who")
		if want := `"` + sc.Class + sc.Kind.String() + `"`; err != nil || !ok || string(got) != want {
			t.Fatalf("%s scope of %s: Get = %q, %v, %v; want %s", sc.Kind, sc.Class, got, ok, err, want)
		}
	}
	wantClaim(t, claim(t, s, b, "s", "k", 0), store.Pending, 1)
	if n := count(t, s, b, "s"); n != 1 {
		t.Fatalf("Count of B = %d, want 1", n)
	}
	// Thread scopes of two classes are apart too.
	if _, ok, _ := s.Get(ctx(t), store.ThreadContext(b.Class, "shared"), "who"); ok {
		t.Fatal("thread context of class A is visible in class B")
	}
}

func testDeleteRun(t *testing.T, s store.Store, c string) {
	run := store.RunKey{Class: c, Run: "r1"}
	other := store.RunKey{Class: c, Run: "r2"}
	for _, r := range []store.RunKey{run, other} {
		claim(t, s, r, "s", "k1", 0)
		claim(t, s, r, "s", "k2", 0)
		if err := s.Complete(ctx(t), r, "s", "k1", store.Outcome{}); err != nil {
			t.Fatal(err)
		}
		if err := s.Set(ctx(t), r.RunContext(), "x", []byte(`1`)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Incr(ctx(t), r.RunContext(), "n", 3); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteRun(ctx(t), run); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRun(ctx(t), run); err != nil {
		t.Fatalf("second DeleteRun: %v", err)
	}
	if err := s.DeleteRun(ctx(t), store.RunKey{Class: c, Run: "never"}); err != nil {
		t.Fatalf("DeleteRun of an unknown run: %v", err)
	}
	if n := count(t, s, run, "s"); n != 0 {
		t.Fatalf("Count after DeleteRun = %d, want 0", n)
	}
	if keys := keys(t, s, run.RunContext()); len(keys) != 0 {
		t.Fatalf("run context after DeleteRun = %q, want empty", keys)
	}
	wantClaim(t, claim(t, s, run, "s", "k1", 0), store.Claimed, 1)
	// The other run is untouched.
	wantClaim(t, claim(t, s, other, "s", "k1", 0), store.Done, 2)
	wantClaim(t, claim(t, s, other, "s", "k2", 0), store.Pending, 2)
	if keys := keys(t, s, other.RunContext()); !slices.Equal(keys, []string{"n", "x"}) {
		t.Fatalf("other run's context = %q, want [n x]", keys)
	}
}

func testOddKeys(t *testing.T, s store.Store, c string) {
	odd := []string{"a.b", "a b", "a/b", "a:b", "ü-日本", "*", ">", "a\\b", "x=y", "_agent_config", "%2F", strings.Repeat("k", 200)}
	run := store.RunKey{Class: c + "_ö", Run: "run:ü-1"}
	for _, sc := range []store.Scope{run.RunContext(), store.ThreadContext(run.Class, "thread-ü:1")} {
		for i, k := range odd {
			if err := s.Set(ctx(t), sc, k, fmt.Appendf(nil, "%d", i)); err != nil {
				t.Fatalf("Set(%q): %v", k, err)
			}
		}
		for i, k := range odd {
			got, ok, err := s.Get(ctx(t), sc, k)
			if err != nil || !ok || string(got) != fmt.Sprint(i) {
				t.Fatalf("Get(%q) = %q, %v, %v; want %d", k, got, ok, err, i)
			}
		}
		want := slices.Sorted(slices.Values(odd))
		if keys := keys(t, s, sc); !slices.Equal(keys, want) {
			t.Fatalf("Keys = %q, want %q", keys, want)
		}
	}
	for _, step := range []string{"step.with.dots", "step with space", "ß"} {
		for i, key := range odd {
			wantClaim(t, claim(t, s, run, step, key, 0), store.Claimed, int64(i+1))
		}
	}
	if _, created, err := s.SetMarker(ctx(t), run, "odd.marker name", "v"); err != nil || !created {
		t.Fatalf("SetMarker with an odd name = %v, %v", created, err)
	}
}

func testInvalidInput(t *testing.T, s store.Store, c string) {
	bad := []store.RunKey{{Class: "", Run: "r"}, {Class: c, Run: ""}}
	for _, run := range bad {
		if _, err := s.Claim(ctx(t), run, store.ClaimRequest{Step: "s", Key: "k"}); err == nil {
			t.Errorf("Claim(%+v) succeeded, want an error", run)
		}
		if _, _, err := s.SetMarker(ctx(t), run, store.MarkerEnd, "x"); err == nil {
			t.Errorf("SetMarker(%+v) succeeded, want an error", run)
		}
		if err := s.Set(ctx(t), run.RunContext(), "k", []byte(`1`)); err == nil {
			t.Errorf("Set in %+v succeeded, want an error", run)
		}
	}
	run := store.RunKey{Class: c, Run: "r"}
	if _, err := s.Claim(ctx(t), run, store.ClaimRequest{Step: "", Key: "k"}); err == nil {
		t.Error("Claim with an empty step succeeded, want an error")
	}
	if _, err := s.Claim(ctx(t), run, store.ClaimRequest{Step: "s", Key: ""}); err == nil {
		t.Error("Claim with an empty key succeeded, want an error")
	}
	if _, err := s.Record(ctx(t), run, "s", "", store.Outcome{}); err == nil {
		t.Error("Record with an empty key succeeded, want an error")
	}
	if _, err := s.Record(ctx(t), store.RunKey{Class: c}, "s", "k", store.Outcome{}); err == nil {
		t.Error("Record without a run id succeeded, want an error")
	}
	if err := s.Set(ctx(t), run.RunContext(), "", []byte(`1`)); err == nil {
		t.Error("Set with an empty key succeeded, want an error")
	}
	if _, err := s.Incr(ctx(t), run.RunContext(), "", 1); err == nil {
		t.Error("Incr with an empty key succeeded, want an error")
	}
	if _, err := s.Keys(ctx(t), store.Scope{Class: c, ID: "x"}); err == nil {
		t.Error("Keys of a scope without a kind succeeded, want an error")
	}
}

// Bench runs the store operations of one step execution against s as
// sub-benchmarks (ClaimComplete, Record, ClaimLimited, ContextSetGet, Incr), so
// every store reports the same figures against its own round-trip
// baseline.
func Bench(b *testing.B, s store.Store) {
	b.Run("ClaimComplete", func(b *testing.B) {
		run := store.RunKey{Class: "Bench", Run: "claims"}
		for i := 0; b.Loop(); i++ {
			key := strconv.Itoa(i)
			if _, err := s.Claim(b.Context(), run, store.ClaimRequest{Step: "s", Key: key}); err != nil {
				b.Fatal(err)
			}
			if err := s.Complete(b.Context(), run, "s", key, store.Outcome{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Record", func(b *testing.B) {
		run := store.RunKey{Class: "Bench", Run: "records"}
		for i := 0; b.Loop(); i++ {
			if _, err := s.Record(b.Context(), run, "s", strconv.Itoa(i), store.Outcome{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ClaimLimited", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			// A fresh run per 10 claims, as a step with max_executions 10.
			run := store.RunKey{Class: "Bench", Run: "limited" + strconv.Itoa(i/10)}
			if _, err := s.Claim(b.Context(), run, store.ClaimRequest{Step: "s", Key: strconv.Itoa(i), Max: 10}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ContextSetGet", func(b *testing.B) {
		sc := store.RunKey{Class: "Bench", Run: "ctx"}.RunContext()
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
		sc := store.ThreadContext("Bench", "t")
		for b.Loop() {
			if _, err := s.Incr(b.Context(), sc, "n", 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
