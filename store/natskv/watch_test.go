package natskv_test

import (
	"testing"
	"time"

	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/store/natskv"
)

// A marker watch tells of every run whose marker of that name is set in
// the class, odd run ids included, and of nothing else; after Stop it is
// no longer live and tells nothing.
func TestWatchMarker(t *testing.T) {
	js := connect(t, embedded(t))
	s, err := natskv.New(t.Context(), js, uniqueConfig(t, js))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	w, err := s.WatchMarker(t.Context(), "Cls", store.MarkerTerminal, func(run string) { got <- run })
	if err != nil {
		t.Fatal(err)
	}
	if !w.Live() {
		t.Fatal("a new watch is not live")
	}
	set := func(class, run, name string) {
		t.Helper()
		if _, _, err := s.SetMarker(t.Context(), store.RunKey{Class: class, Run: run}, name, "x"); err != nil {
			t.Fatal(err)
		}
	}
	set("Other", "r0", store.MarkerTerminal) // another class
	set("Cls", "r0", store.MarkerEnd)        // another marker
	set("Cls", "r.1 ü", store.MarkerTerminal)
	set("Cls", "r2", store.MarkerTerminal)
	set("Cls", "r2", store.MarkerTerminal) // already set: may be told again
	for _, want := range []string{"r.1 ü", "r2"} {
		select {
		case run := <-got:
			if run != want {
				t.Fatalf("watch told of %q, want %q", run, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("watch did not tell of %q", want)
		}
	}
	w.Stop()
	if w.Live() {
		t.Fatal("a stopped watch is live")
	}
	// A second watch learns of r3; by then the stopped one would have too.
	later := make(chan string, 10)
	w2, err := s.WatchMarker(t.Context(), "Cls", store.MarkerTerminal, func(run string) { later <- run })
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	set("Cls", "r3", store.MarkerTerminal)
	select {
	case run := <-later:
		if run != "r3" {
			t.Fatalf("second watch told of %q, want r3", run)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("second watch did not tell of r3")
	}
	close(got)
	for run := range got {
		if run != "r2" {
			t.Fatalf("watch told of %q after it was stopped", run)
		}
	}
}
