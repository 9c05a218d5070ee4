package memory_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/saap-go/agent/llm/llmtest"
	"github.com/saap-go/agent/memory"
	"github.com/saap-go/agent/vector"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	ada   = memory.Principal{UserID: "ada", Orgs: []string{"acme"}}
	bob   = memory.Principal{UserID: "bob", Orgs: []string{"acme"}}
	eve   = memory.Principal{UserID: "eve", Orgs: []string{"globex"}}
	clock = func() time.Time { return time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC) }
)

func newService(t *testing.T, ix vector.Index, opts ...memory.Option) *memory.Service {
	t.Helper()
	s, err := memory.New(ix, llmtest.HashEmbedder{Dim: 128}, append([]memory.Option{memory.WithClock(clock), memory.WithThreshold(0.2)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func texts(items []memory.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Text)
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRestartKeepsMemories: memories stored in a directory are recalled by
// a new process (a new index on the same files), after a clean close and
// after a crash that left only the log.
func TestRestartKeepsMemories(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "memories")
	ix, err := vector.Open(dir)
	must(t, err)
	s := newService(t, ix)
	_, err = s.StoreUser(ctx, ada, []string{"Ada's favourite colour is teal", "Ada lives in Bern"}, memory.Origin{ThreadID: "t1"})
	must(t, err)
	must(t, ix.Close())

	ix, err = vector.Open(dir)
	must(t, err)
	s = newService(t, ix)
	got, err := s.Recall(ctx, ada, memory.Query{Text: "what is my favourite colour"})
	must(t, err)
	if len(got.User) == 0 || got.User[0].Text != "Ada's favourite colour is teal" || got.User[0].Origin.ThreadID != "t1" || !got.User[0].CreatedAt.Equal(clock()) {
		t.Fatalf("after restart: %+v", got.User)
	}
	// A write, then the process dies without Close: the log has it.
	_, err = s.StoreUser(ctx, ada, []string{"Ada drinks her coffee black"}, memory.Origin{})
	must(t, err)
	files, _ := os.ReadDir(dir)
	if len(files) < 2 {
		t.Fatalf("files on disk: %v", files)
	}
	// The process dies without Close (ix is dropped, no snapshot); a new
	// one opens the same directory.
	ix, err = vector.Open(dir)
	must(t, err)
	defer ix.Close()
	s = newService(t, ix)
	got, err = s.Recall(ctx, ada, memory.Query{Text: "how does Ada take her coffee"})
	must(t, err)
	if len(got.User) == 0 || got.User[0].Text != "Ada drinks her coffee black" {
		t.Fatalf("after crash: %v", texts(got.User))
	}
}

// TestCrossUser: no principal ever recalls another user's memories, nor an
// organisation's it does not act within, and none may store into or
// forget from a scope not its own.
func TestCrossUser(t *testing.T) {
	ctx := context.Background()
	ix := vector.NewMemory(vector.WithExactBelow(4)) // walk the graph, not only scans
	defer ix.Close()
	s := newService(t, ix, memory.WithThreshold(-1))
	_, err := s.StoreUser(ctx, ada, []string{"my password hint is the name of my cat", "my cat is called Turing"}, memory.Origin{})
	must(t, err)
	_, err = s.StoreUser(ctx, bob, []string{"my cat is called Pascal"}, memory.Origin{})
	must(t, err)
	_, err = s.StoreOrganization(ctx, ada, "acme", "faq", []string{"acme's office cat is called Byte"}, memory.Origin{})
	must(t, err)
	_, err = s.StoreOrganization(ctx, eve, "globex", "faq", []string{"globex's cat is secret"}, memory.Origin{})
	must(t, err)

	for _, tc := range []struct {
		who       memory.Principal
		user, org []string
	}{
		{ada, []string{"my cat is called Turing", "my password hint is the name of my cat"}, []string{"acme's office cat is called Byte"}},
		{bob, []string{"my cat is called Pascal"}, []string{"acme's office cat is called Byte"}},
		{eve, nil, []string{"globex's cat is secret"}},
		{memory.Principal{UserID: "mallory"}, nil, nil},
		{memory.Principal{}, nil, nil},
	} {
		got, err := s.Recall(ctx, tc.who, memory.Query{Text: "what is the cat called", Limit: 10})
		must(t, err)
		if u, o := texts(got.User), texts(got.Organization); !slices.Equal(u, tc.user) || !slices.Equal(o, tc.org) {
			t.Errorf("%s recalled user %q org %q, want %q %q", tc.who.UserID, u, o, tc.user, tc.org)
		}
		for _, it := range got.User {
			if it.Owner != tc.who.UserID || it.Scope != memory.ScopeUser {
				t.Errorf("%s got %+v", tc.who.UserID, it)
			}
		}
	}
	if _, err := s.StoreOrganization(ctx, eve, "acme", "faq", []string{"planted"}, memory.Origin{}); !errors.Is(err, memory.ErrForbidden) {
		t.Fatalf("eve stored into acme: %v", err)
	}
	adas, err := s.Recall(ctx, ada, memory.Query{Text: "cat"})
	must(t, err)
	if err := s.Forget(ctx, bob, adas.User[0]); !errors.Is(err, memory.ErrForbidden) {
		t.Fatalf("bob forgot ada's memory: %v", err)
	}
	// An item forged to look like bob's but carrying ada's id.
	forged := adas.User[0]
	forged.Owner = "bob"
	if err := s.Forget(ctx, bob, forged); !errors.Is(err, memory.ErrForbidden) {
		t.Fatalf("forged forget: %v", err)
	}
	must(t, s.Forget(ctx, ada, adas.User[0]))
	after, _ := s.Recall(ctx, ada, memory.Query{Text: "cat"})
	if len(after.User) != len(adas.User)-1 {
		t.Fatalf("after forget: %v", texts(after.User))
	}
}

func TestStoreIsIdempotentAndValidates(t *testing.T) {
	ctx := context.Background()
	ix := vector.NewMemory()
	defer ix.Close()
	s := newService(t, ix, memory.WithNamespaces("faq"))
	a, err := s.StoreUser(ctx, ada, []string{"likes tea", "  ", "likes tea"}, memory.Origin{})
	must(t, err)
	b, err := s.StoreUser(ctx, ada, []string{"likes tea"}, memory.Origin{})
	must(t, err)
	if len(a) != 2 || a[0] != a[1] || a[0] != b[0] || ix.Len() != 1 {
		t.Fatalf("ids %v %v, %d records", a, b, ix.Len())
	}
	if _, err := s.StoreUser(ctx, memory.Principal{}, []string{"x"}, memory.Origin{}); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("no user: %v", err)
	}
	if _, err := s.StoreUser(ctx, ada, []string{string(make([]byte, memory.MaxTextLen+1))}, memory.Origin{}); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("oversize: %v", err)
	}
	if _, err := s.StoreOrganization(ctx, ada, "acme", "hr", []string{"x"}, memory.Origin{}); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("namespace outside the allow-list: %v", err)
	}
	if _, err := s.Recall(ctx, ada, memory.Query{Text: "x", Namespaces: []string{"hr"}}); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("recall outside the allow-list: %v", err)
	}
	if _, err := memory.New(nil, llmtest.HashEmbedder{}); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("nil index: %v", err)
	}
}
