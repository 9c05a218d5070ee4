package vector

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// The 100k benchmarks share one index, built once per test binary (the
// machine is slow: building it is most of the run). benchDim is small
// enough to build in well under a minute and large enough that a scan
// costs what scans cost.
const (
	benchN   = 100_000
	benchDim = 64
)

var bench100k struct {
	once sync.Once
	ix   *Local
	rs   []Record
	flat []float32 // the same unit vectors, contiguous, for the scan
	qs   [][]float32
	err  error
}

func load100k(b *testing.B) {
	bench100k.once.Do(func() {
		start := time.Now()
		vs := clustered(benchN, benchDim, 11)
		rs := records(vs, func(i int) map[string]string { return map[string]string{"org": fmt.Sprint((i / 3) % 4)} })
		ix, err := cached100k(rs)
		if err != nil {
			bench100k.err = err
			return
		}
		bench100k.ix, bench100k.rs = ix, rs
		bench100k.flat = slices.Clone(ix.vecs)
		bench100k.qs = clustered(256, benchDim, 12)
		fmt.Fprintf(os.Stderr, "loaded %d×%d index in %v\n", benchN, benchDim, time.Since(start).Round(time.Millisecond))
	})
	if bench100k.err != nil {
		b.Fatal(bench100k.err)
	}
}

// cached100k builds the benchmark index, or reads the one an earlier run
// left in the temporary directory: building takes minutes here, reading
// seconds. The name carries the data's parameters and the format.
func cached100k(rs []Record) (*Local, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("saap-vector-bench-v1-%d-%d", benchN, benchDim))
	if ix, err := Open(dir, WithSync(false), WithSnapshotEvery(0)); err == nil {
		if ix.Len() == benchN {
			return ix, nil
		}
		_ = ix.Close()
	}
	_ = os.RemoveAll(dir)
	ix, err := Open(dir, WithEfConstruction(64), WithSync(false), WithSnapshotEvery(0))
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(rs); i += 1000 {
		if err := ix.Upsert(context.Background(), rs[i:min(i+1000, len(rs))]...); err != nil {
			return nil, err
		}
	}
	if err := ix.disk.snapshot(ix); err != nil {
		return nil, err
	}
	return ix, nil
}

// BenchmarkVectorQuery100k is a top-10 query on 100k records through the
// graph.
func BenchmarkVectorQuery100k(b *testing.B) {
	load100k(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := bench100k.ix.Query(ctx, bench100k.qs[i%len(bench100k.qs)], 10, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVectorQuery100kFiltered keeps a quarter of the records.
func BenchmarkVectorQuery100kFiltered(b *testing.B) {
	load100k(b)
	ctx := context.Background()
	f := Filter{"org": "2"}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := bench100k.ix.Query(ctx, bench100k.qs[i%len(bench100k.qs)], 10, f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBruteForce100k is the baseline: the same top-10 by scanning
// the same unit vectors, contiguous in memory, with a bounded heap.
func BenchmarkBruteForce100k(b *testing.B) {
	load100k(b)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		q, _ := normalize("q", bench100k.qs[i%len(bench100k.qs)])
		var h minHeap
		for n := range benchN {
			h.pushBounded(cand{uint32(n), dot(q, bench100k.flat[n*benchDim:(n+1)*benchDim])}, 10)
		}
	}
}

// TestRecall100k reports the graph's recall@10 on the benchmark index;
// it runs only with the benchmarks (-bench) since building takes a while.
func BenchmarkRecall100k(b *testing.B) {
	load100k(b)
	ctx := context.Background()
	hit := 0
	qs := bench100k.qs[:64]
	for range 1 {
		hit = 0
		for _, q := range qs {
			got, _ := bench100k.ix.Query(ctx, q, 10, nil)
			want := exactFlat(q, 10)
			for _, m := range got {
				if slices.Contains(want, m.ID) {
					hit++
				}
			}
		}
	}
	b.ReportMetric(float64(hit)/float64(10*len(qs)), "recall@10")
}

func exactFlat(q []float32, k int) []string {
	qn, _ := normalize("q", q)
	var h minHeap
	for n := range benchN {
		h.pushBounded(cand{uint32(n), dot(qn, bench100k.flat[n*benchDim:(n+1)*benchDim])}, k)
	}
	out := make([]string, 0, k)
	for _, c := range h.items {
		out = append(out, bench100k.ix.ids[c.n])
	}
	return out
}

// BenchmarkOpen100k is a restart of a persisted 100k index: snapshot
// read, graph included, no rebuild.
func BenchmarkOpen100k(b *testing.B) {
	load100k(b)
	dir := b.TempDir()
	ix, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	ix.disk.gen = 0
	if err := ix.disk.snapshot(bench100k.ix); err != nil {
		b.Fatal(err)
	}
	abandon(ix)
	st, _ := os.Stat(filepath.Join(dir, snapshotName))
	b.ResetTimer()
	for b.Loop() {
		ix, err := Open(dir)
		if err != nil || ix.Len() != benchN {
			b.Fatal(err)
		}
		abandon(ix)
	}
	b.ReportMetric(float64(st.Size())/(1<<20), "MiB")
}

// clustered draws n vectors around 500 random centres, as embeddings of
// texts on a few hundred topics lie: random vectors in 64 dimensions have
// no neighbourhoods to find and are nobody's data.
func clustered(n, dim int, seed uint64) [][]float32 {
	centres := randVecs(500, dim, 99)
	noise := randVecs(n, dim, seed)
	out := make([][]float32, n)
	for i := range out {
		c := centres[(i*7919+int(seed))%len(centres)]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + 0.35*noise[i][j]
		}
		out[i] = v
	}
	return out
}
