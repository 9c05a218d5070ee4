package gateway

import (
	"fmt"
	"testing"
	"time"
)

func TestLimitsBodyBudget(t *testing.T) {
	l := newLimits(Config{MaxInFlightBody: 100})
	r1, ok := l.reserveBody(60)
	if !ok {
		t.Fatal("first body refused")
	}
	if _, ok := l.reserveBody(60); ok {
		t.Fatal("second body over the budget accepted")
	}
	r2, ok := l.reserveBody(40)
	if !ok {
		t.Fatal("body within the budget refused")
	}
	r1()
	r2()
	if n := l.inFlight.Load(); n != 0 {
		t.Fatalf("in flight after release: %d", n)
	}
	// A single body larger than the budget still passes when nothing else is read.
	r3, ok := l.reserveBody(500)
	if !ok {
		t.Fatal("lone large body refused")
	}
	r3()
}

func TestLimitsRateAndRuns(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newLimits(Config{RateLimit: 1, RateBurst: 2, MaxRunsPerUser: 1})
	for i := range 2 {
		if ok, _ := l.allow("ada", now); !ok {
			t.Fatalf("request %d within the burst refused", i)
		}
	}
	ok, wait := l.allow("ada", now)
	if ok || wait != time.Second {
		t.Fatalf("over the burst: ok %v wait %s, want refused for 1s", ok, wait)
	}
	if ok, _ := l.allow("ada", now.Add(time.Second)); !ok {
		t.Fatal("refused after the bucket refilled a token")
	}
	// Many users: the map forgets the full buckets instead of growing.
	for i := range 5000 {
		l.allow(fmt.Sprint("user", i), now.Add(time.Duration(i)*time.Hour))
	}
	if n := len(l.users); n > 4097 {
		t.Errorf("%d limiters kept", n)
	}

	release, ok := l.startRun("ada")
	if !ok {
		t.Fatal("first run refused")
	}
	if _, ok := l.startRun("ada"); ok {
		t.Fatal("second concurrent run accepted")
	}
	if r, ok := l.startRun("bob"); !ok {
		t.Fatal("other user's run refused")
	} else {
		r()
	}
	release()
	release() // idempotent
	if r, ok := l.startRun("ada"); !ok {
		t.Fatal("run refused after release")
	} else {
		r()
	}
	if len(l.runs) != 0 {
		t.Errorf("runs left: %v", l.runs)
	}
}
