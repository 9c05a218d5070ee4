package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/saap-go/agent/store"
)

// testStatus checks store.Statuses, for stores that implement it:
// records replace each other, survive DeleteRun, and list by class and by
// thread in run id order with paging.
func testStatus(t *testing.T, s store.Store, c string) {
	ss, ok := s.(store.Statuses)
	if !ok {
		t.Skipf("%T does not implement store.Statuses", s)
	}
	put := func(run, thread, value string) {
		t.Helper()
		if err := ss.PutStatus(ctx(t), store.RunKey{Class: c, Run: run}, thread, []byte(value)); err != nil {
			t.Fatalf("PutStatus(%s): %v", run, err)
		}
	}
	get := func(run string) (string, bool) {
		t.Helper()
		v, ok, err := ss.Status(ctx(t), store.RunKey{Class: c, Run: run})
		if err != nil {
			t.Fatalf("Status(%s): %v", run, err)
		}
		return string(v), ok
	}
	list := func(thread, after string, limit int) []string {
		t.Helper()
		es, err := ss.ListStatus(ctx(t), c, thread, after, limit)
		if err != nil {
			t.Fatalf("ListStatus(%q, %q, %d): %v", thread, after, limit, err)
		}
		var out []string
		for _, e := range es {
			v, _ := get(e.Run)
			if string(e.Value) != v {
				t.Errorf("ListStatus value of %s = %q, Status says %q", e.Run, e.Value, v)
			}
			out = append(out, e.Run)
		}
		return out
	}

	if _, ok := get("absent"); ok {
		t.Fatal("Status of an absent run reports a record")
	}
	put("r1", "t1", `{"status":"pending"}`)
	put("r1", "t1", `{"status":"running"}`)
	if v, ok := get("r1"); !ok || v != `{"status":"running"}` {
		t.Fatalf("Status(r1) = %q, %v; want the last record", v, ok)
	}
	// Odd run ids (dots, spaces, colons, braces) list back unchanged.
	runs := []string{"r2", "r.3", "r 4", "r:5{x}", "r6"}
	for i, r := range runs {
		put(r, fmt.Sprintf("t%d", i%2+1), fmt.Sprintf(`{"n":%d}`, i))
	}
	// Another class's runs never show.
	if err := ss.PutStatus(ctx(t), store.RunKey{Class: c + "Other", Run: "r0"}, "t1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	all := append([]string{"r1"}, runs...)
	slices.Sort(all)
	if got := list("", "", 0); !slices.Equal(got, all) {
		t.Fatalf("ListStatus(class) = %q, want %q", got, all)
	}
	// Paging: pages of two, each starting after the last of the previous.
	var paged []string
	after := ""
	for range 10 {
		page := list("", after, 2)
		if len(page) > 2 {
			t.Fatalf("a page of limit 2 has %d runs", len(page))
		}
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		after = page[len(page)-1]
	}
	if !slices.Equal(paged, all) {
		t.Fatalf("paged = %q, want %q", paged, all)
	}
	// By thread.
	var t1 []string
	for _, r := range all {
		if r == "r1" || r == "r2" || r == "r 4" || r == "r6" {
			t1 = append(t1, r)
		}
	}
	if got := list("t1", "", 0); !slices.Equal(got, t1) {
		t.Fatalf("ListStatus(thread t1) = %q, want %q", got, t1)
	}
	if got := list("t-none", "", 0); len(got) != 0 {
		t.Fatalf("ListStatus of an unknown thread = %q, want none", got)
	}
	// Records outlive the run's state.
	if err := s.DeleteRun(ctx(t), store.RunKey{Class: c, Run: "r1"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := get("r1"); !ok {
		t.Fatal("DeleteRun deleted the status record")
	}
	// Bad input is an error, never a panic.
	if err := ss.PutStatus(ctx(t), store.RunKey{Class: c, Run: "r9"}, "", []byte(`{}`)); err == nil {
		t.Error("PutStatus without a thread succeeded")
	}
	if _, err := ss.ListStatus(ctx(t), "", "", "", 0); err == nil {
		t.Error("ListStatus without a class succeeded")
	}
}
