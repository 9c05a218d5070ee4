package vector

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
)

func randVecs(n, dim int, seed uint64) [][]float32 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = v
	}
	return out
}

func records(vs [][]float32, meta func(i int) map[string]string) []Record {
	rs := make([]Record, len(vs))
	for i, v := range vs {
		rs[i] = Record{ID: fmt.Sprintf("r%06d", i), Vector: v, Text: fmt.Sprintf("text %d", i)}
		if meta != nil {
			rs[i].Metadata = meta(i)
		}
	}
	return rs
}

// exact is the brute-force answer the index is checked against.
func exact(rs []Record, q []float32, k int, f Filter) []string {
	qn, _ := normalize("q", q)
	type sc struct {
		id string
		s  float32
	}
	var all []sc
	for _, r := range rs {
		if !f.Matches(r.Metadata) {
			continue
		}
		v, _ := normalize("r", r.Vector)
		all = append(all, sc{r.ID, dot(qn, v)})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].s != all[j].s {
			return all[i].s > all[j].s
		}
		return all[i].id < all[j].id
	})
	var ids []string
	for i := 0; i < k && i < len(all); i++ {
		ids = append(ids, all[i].id)
	}
	return ids
}

func ids(ms []Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func TestValidation(t *testing.T) {
	ctx := context.Background()
	ix := NewMemory()
	defer ix.Close()
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		name string
		r    Record
		want error
	}{
		{"empty id", Record{Vector: []float32{1}}, ErrInvalid},
		{"long id", Record{ID: string(make([]byte, MaxIDLen+1)), Vector: []float32{1}}, ErrInvalid},
		{"empty vector", Record{ID: "a"}, ErrInvalid},
		{"nan", Record{ID: "a", Vector: []float32{1, nan}}, ErrInvalid},
		{"inf", Record{ID: "a", Vector: []float32{inf, 1}}, ErrInvalid},
		{"zero", Record{ID: "a", Vector: []float32{0, 0}}, ErrInvalid},
		{"nul key", Record{ID: "a", Vector: []float32{1, 0}, Metadata: map[string]string{"a\x00b": "c"}}, ErrInvalid},
	}
	for _, c := range cases {
		if err := ix.Upsert(ctx, c.r); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if err := ix.Upsert(ctx, Record{ID: "a", Vector: []float32{1, 0}}); err != nil {
		t.Fatal(err)
	}
	err := ix.Upsert(ctx, Record{ID: "b", Vector: []float32{1, 0, 0}})
	if !errors.Is(err, ErrDimension) {
		t.Fatalf("dimension: %v", err)
	}
	t.Log(err)
	if _, err := ix.Query(ctx, []float32{1, 0, 0}, 1, nil); !errors.Is(err, ErrDimension) {
		t.Fatalf("query dimension: %v", err)
	}
	if _, err := ix.Query(ctx, []float32{1, 0}, 0, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("k=0: %v", err)
	}
	if _, err := ix.Query(ctx, []float32{nan, 0}, 1, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("nan query: %v", err)
	}
	// One bad record rejects the batch.
	if err := ix.Upsert(ctx, Record{ID: "c", Vector: []float32{0, 1}}, Record{ID: "", Vector: []float32{1, 1}}); err == nil {
		t.Fatal("bad batch accepted")
	}
	if ix.Len() != 1 {
		t.Fatalf("Len = %d after a rejected batch", ix.Len())
	}
	if err := ix.Delete(ctx, ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("delete empty id: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ix.Query(cancelled, []float32{1, 0}, 1, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled query: %v", err)
	}
	ix.Close()
	if err := ix.Upsert(ctx, Record{ID: "z", Vector: []float32{1, 0}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	if _, err := Open(""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Open(\"\"): %v", err)
	}
}

func TestExactSmall(t *testing.T) {
	ctx := context.Background()
	ix := NewMemory()
	defer ix.Close()
	rs := records(randVecs(500, 16, 1), func(i int) map[string]string {
		return map[string]string{"user": fmt.Sprint(i % 5), "kind": fmt.Sprint(i % 2)}
	})
	if err := ix.Upsert(ctx, rs...); err != nil {
		t.Fatal(err)
	}
	for qi, q := range randVecs(20, 16, 2) {
		for _, f := range []Filter{nil, {"user": "3"}, {"user": "3", "kind": "1"}, {"user": "nobody"}} {
			got, err := ix.Query(ctx, q, 7, f)
			if err != nil {
				t.Fatal(err)
			}
			if want := exact(rs, q, 7, f); !slices.Equal(ids(got), want) {
				t.Fatalf("query %d filter %v: got %v, want %v", qi, f, ids(got), want)
			}
			for _, m := range got {
				if !f.Matches(m.Metadata) {
					t.Fatalf("match %s does not satisfy %v", m.ID, f)
				}
			}
		}
	}
}

func TestUpsertReplacesAndDelete(t *testing.T) {
	ctx := context.Background()
	ix := NewMemory()
	defer ix.Close()
	must(t, ix.Upsert(ctx, Record{ID: "a", Vector: []float32{1, 0}, Text: "old"}, Record{ID: "b", Vector: []float32{0, 1}}))
	must(t, ix.Upsert(ctx, Record{ID: "a", Vector: []float32{0, 1}, Text: "new"}))
	if ix.Len() != 2 {
		t.Fatalf("Len = %d", ix.Len())
	}
	got, err := ix.Query(ctx, []float32{0, 1}, 5, nil)
	must(t, err)
	if len(got) != 2 || got[0].Text != "new" && got[1].Text != "new" {
		t.Fatalf("got %+v", got)
	}
	if math.Abs(float64(got[0].Score)-1) > 1e-6 {
		t.Fatalf("score %v, want 1", got[0].Score)
	}
	must(t, ix.Delete(ctx, "a", "unknown"))
	got, err = ix.Query(ctx, []float32{0, 1}, 5, nil)
	must(t, err)
	if !slices.Equal(ids(got), []string{"b"}) {
		t.Fatalf("after delete: %v", ids(got))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// recall is the share of the exact top k the index finds.
func recall(t *testing.T, ix *Local, rs []Record, qs [][]float32, k int, f Filter) float64 {
	t.Helper()
	hit, total := 0, 0
	for _, q := range qs {
		got, err := ix.Query(context.Background(), q, k, f)
		must(t, err)
		want := exact(rs, q, k, f)
		total += len(want)
		for _, id := range ids(got) {
			if slices.Contains(want, id) {
				hit++
			}
		}
	}
	return float64(hit) / float64(total)
}

func TestGraphRecall(t *testing.T) {
	ctx := context.Background()
	ix := NewMemory(WithExactBelow(100))
	defer ix.Close()
	rs := records(randVecs(2000, 24, 3), func(i int) map[string]string {
		return map[string]string{"half": fmt.Sprint(i % 2), "rare": fmt.Sprint(i % 200)}
	})
	must(t, ix.Upsert(ctx, rs...))
	qs := randVecs(20, 24, 4)
	if r := recall(t, ix, rs, qs, 10, nil); r < 0.9 {
		t.Fatalf("recall@10 = %.3f, want ≥ 0.9", r)
	}
	if r := recall(t, ix, rs, qs, 10, Filter{"half": "1"}); r < 0.9 {
		t.Fatalf("filtered recall@10 = %.3f, want ≥ 0.9", r)
	}
	// A selective filter (10 records) is answered by the scan: exact.
	if r := recall(t, ix, rs, qs, 5, Filter{"rare": "7"}); r != 1 {
		t.Fatalf("selective filter recall = %.3f, want 1", r)
	}
	// Deleting most of the index rebuilds the graph and keeps answers right.
	var del []string
	for i := range 1500 {
		del = append(del, rs[i].ID)
	}
	must(t, ix.Delete(ctx, del...))
	if ix.disk != nil || ix.dead != 0 {
		t.Fatalf("no rebuild: %d dead", ix.dead)
	}
	if ix.Len() != 500 {
		t.Fatalf("Len = %d", ix.Len())
	}
	if r := recall(t, ix, rs[1500:], qs, 10, nil); r < 0.9 {
		t.Fatalf("recall after rebuild = %.3f", r)
	}
}

func TestPersistRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rs := records(randVecs(300, 8, 5), func(i int) map[string]string { return map[string]string{"u": fmt.Sprint(i % 3)} })
	ix, err := Open(dir, WithExactBelow(10))
	must(t, err)
	must(t, ix.Upsert(ctx, rs[:200]...))
	must(t, ix.Close())
	// Reopen from the snapshot, write more, and crash (no Close): the log
	// carries the tail.
	ix, err = Open(dir, WithExactBelow(10))
	must(t, err)
	if ix.Len() != 200 {
		t.Fatalf("Len after restart = %d", ix.Len())
	}
	must(t, ix.Upsert(ctx, rs[200:]...))
	must(t, ix.Delete(ctx, "r000000"))
	q := randVecs(1, 8, 6)[0]
	before, err := ix.Query(ctx, q, 10, Filter{"u": "1"})
	must(t, err)
	abandon(ix)
	ix2, err := Open(dir, WithExactBelow(10))
	must(t, err)
	defer ix2.Close()
	if ix2.Len() != 299 {
		t.Fatalf("Len after crash = %d", ix2.Len())
	}
	after, err := ix2.Query(ctx, q, 10, Filter{"u": "1"})
	must(t, err)
	if !slices.Equal(ids(before), ids(after)) {
		t.Fatalf("answers changed across the crash: %v vs %v", ids(before), ids(after))
	}
	if after[0].Text == "" || after[0].Metadata["u"] != "1" {
		t.Fatalf("record lost its fields: %+v", after[0])
	}
}

// abandon drops an index as a crash would: files closed, no snapshot.
func abandon(ix *Local) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.closed = true
	_ = ix.disk.close()
}

func TestTornLogTail(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ix, err := Open(dir)
	must(t, err)
	must(t, ix.Upsert(ctx, Record{ID: "a", Vector: []float32{1, 0}}))
	must(t, ix.Upsert(ctx, Record{ID: "b", Vector: []float32{0, 1}}))
	logPath := ix.disk.logPath(ix.disk.gen)
	abandon(ix)
	// Cut the last frame in half, as a crash mid-write would.
	st, err := os.Stat(logPath)
	must(t, err)
	must(t, os.Truncate(logPath, st.Size()-5))
	ix, err = Open(dir)
	must(t, err)
	if ix.Len() != 1 {
		t.Fatalf("Len = %d, want the one whole write", ix.Len())
	}
	// Writing after the cut works and survives another restart.
	must(t, ix.Upsert(ctx, Record{ID: "c", Vector: []float32{1, 1}}))
	abandon(ix)
	ix, err = Open(dir)
	must(t, err)
	defer ix.Close()
	if ix.Len() != 2 {
		t.Fatalf("Len = %d after writing past the cut", ix.Len())
	}
}

func TestCorruptSnapshot(t *testing.T) {
	dir := t.TempDir()
	ix, err := Open(dir)
	must(t, err)
	must(t, ix.Upsert(context.Background(), Record{ID: "a", Vector: []float32{1, 0}}))
	must(t, ix.Close())
	p := filepath.Join(dir, snapshotName)
	b, err := os.ReadFile(p)
	must(t, err)
	b[len(b)/2] ^= 0xff
	must(t, os.WriteFile(p, b, 0o600))
	if _, err := Open(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt snapshot: %v", err)
	}
}

func TestSnapshotEvery(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ix, err := Open(dir, WithSnapshotEvery(50), WithSync(false))
	must(t, err)
	rs := records(randVecs(120, 4, 8), nil)
	for _, r := range rs {
		must(t, ix.Upsert(ctx, r))
	}
	if ix.disk.gen != 2 {
		t.Fatalf("gen = %d, want 2 snapshots", ix.disk.gen)
	}
	abandon(ix)
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("files %v, want a snapshot and one log", entries)
	}
	ix, err = Open(dir)
	must(t, err)
	defer ix.Close()
	if ix.Len() != 120 {
		t.Fatalf("Len = %d", ix.Len())
	}
}

func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	ix := NewMemory(WithExactBelow(50))
	defer ix.Close()
	vs := randVecs(400, 8, 9)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(vs); i += 4 {
				if err := ix.Upsert(ctx, Record{ID: fmt.Sprint(i), Vector: vs[i]}); err != nil {
					t.Error(err)
					return
				}
				if _, err := ix.Query(ctx, vs[i], 3, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if ix.Len() != len(vs) {
		t.Fatalf("Len = %d", ix.Len())
	}
}

func FuzzSnapshot(f *testing.F) {
	ix := NewMemory()
	_ = ix.Upsert(context.Background(), Record{ID: "a", Vector: []float32{1, 2}, Metadata: map[string]string{"k": "v"}})
	f.Add(ix.encodeSnapshot(1))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, _ := newLocal(nil)
		_, _ = l.decodeSnapshot(b)
		l2, _ := newLocal(nil)
		_ = l2.applyFrame(b)
	})
}

// A snapshot whose checksum holds but whose graph does not (written by
// another tool, or a bug) is refused, not walked into a panic.
func TestSnapshotWithBrokenGraph(t *testing.T) {
	ix := NewMemory()
	must(t, ix.Upsert(context.Background(), records(randVecs(50, 4, 13), nil)...))
	// Give node 0 a link on a layer its neighbour lacks.
	var low int
	for n, ls := range ix.links {
		if len(ls) == 1 && n != 0 {
			low = n
			break
		}
	}
	top := len(ix.links[ix.entry]) - 1
	if top == 0 {
		t.Skip("the graph has one layer")
	}
	ix.links[ix.entry][top] = append(ix.links[ix.entry][top], uint32(low))
	l, _ := newLocal(nil)
	if _, err := l.decodeSnapshot(ix.encodeSnapshot(1)); err == nil {
		t.Fatal("broken graph accepted")
	}
}
