package event_test

import (
	"testing"

	"github.com/saap-go/agent/event"
)

type cacheProbe struct{ event.Base }

// TypeOf answers for a type registered after a lookup found it missing: the
// lookup cache holds for one registry only.
func TestTypeOfAfterRegistering(t *testing.T) {
	if _, done := event.Lookup("CacheProbeEvent"); done {
		t.Skip("registered by an earlier run of this test in the process (-count)")
	}
	if _, ok := event.TypeOf(&cacheProbe{}); ok {
		t.Fatal("an unregistered type was found")
	}
	if _, ok := event.TypeOf(&cacheProbe{}); ok { // now from the cache
		t.Fatal("an unregistered type was found")
	}
	if err := event.Register[cacheProbe](event.WithName("CacheProbeEvent")); err != nil {
		t.Fatal(err)
	}
	typ, ok := event.TypeOf(&cacheProbe{})
	if !ok || typ.Name != "CacheProbeEvent" {
		t.Fatalf("TypeOf after Register = %v, %v", typ, ok)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = event.TypeOf(&event.StopEvent{}) }); n != 0 {
		t.Fatalf("TypeOf allocates %v times", n)
	}
}
