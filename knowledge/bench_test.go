package knowledge_test

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/saap-go/agent/knowledge"
	"github.com/saap-go/agent/vector"
)

// The retrieval benchmark's corpus: 100k chunks of random unit vectors of
// 256 dimensions, built once per test binary (building the graph is most
// of the run on this machine).
const (
	benchChunks = 100_000
	benchDim    = 256
	benchK      = 10
	benchQs     = 256
)

// benchData is one data set: its vectors, in files as an index and
// contiguous in memory for the scan, and its queries.
type benchData struct {
	once sync.Once
	dir  string    // the index, in files
	flat []float32 // the same vectors, contiguous, for the scan
	qs   [][]float32
	emb  lookupEmbedder
	err  error
}

// The data sets: random unit vectors (no structure at all, the graph's
// hardest case) and clustered ones (a thousand topics, each chunk near its
// topic, as embeddings of real documents group).
var benchSets = map[string]*benchData{"random": {}, "clustered": {}}

// lookupEmbedder "embeds" the query names q0…q255 as their vectors, so the
// benchmark times retrieval, not a model.
type lookupEmbedder map[string][]float32

func (l lookupEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, ok := l[t]
		if !ok {
			return nil, fmt.Errorf("no vector for %q", t)
		}
		out[i] = v
	}
	return out, nil
}

func unit(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	inv := float32(1 / math.Sqrt(sum))
	for j := range v {
		v[j] *= inv
	}
	return v
}

func unitVectors(n int, seed uint64) [][]float32 {
	r := rand.New(rand.NewPCG(seed, seed))
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, benchDim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = unit(v)
	}
	return out
}

// clusteredVectors are n unit vectors around 1000 random centres, each
// about 35 degrees from its centre.
func clusteredVectors(n int, seed uint64) [][]float32 {
	centres := unitVectors(1000, 99)
	r := rand.New(rand.NewPCG(seed, seed))
	noise := 0.7 / math.Sqrt(benchDim)
	out := make([][]float32, n)
	for i := range out {
		c := centres[r.IntN(len(centres))]
		v := make([]float32, benchDim)
		for j := range v {
			v[j] = c[j] + float32(r.NormFloat64()*noise)
		}
		out[i] = unit(v)
	}
	return out
}

func load(b *testing.B, set string) *benchData {
	d := benchSets[set]
	d.once.Do(func() {
		start := time.Now()
		gen := unitVectors
		if set == "clustered" {
			gen = clusteredVectors
		}
		vs := gen(benchChunks, 1)
		d.flat = make([]float32, 0, benchChunks*benchDim)
		for _, v := range vs {
			d.flat = append(d.flat, v...)
		}
		d.dir = filepath.Join(os.TempDir(), fmt.Sprintf("saap-knowledge-bench-v1-%s-%d-%d", set, benchChunks, benchDim))
		var ix *vector.Local
		if ix, d.err = cachedIndex(d.dir, vs); d.err == nil {
			d.err = ix.Close()
		}
		d.qs = gen(benchQs, 2)
		d.emb = lookupEmbedder{}
		for i, q := range d.qs {
			d.emb["q"+strconv.Itoa(i)] = q
		}
		fmt.Fprintf(os.Stderr, "loaded %s %d×%d index in %v\n", set, benchChunks, benchDim, time.Since(start).Round(time.Millisecond))
	})
	if d.err != nil {
		b.Fatal(d.err)
	}
	return d
}

// cachedIndex opens the benchmark's index where an earlier run left it in
// the temporary directory, or builds it there: building takes minutes on
// this machine, reading its snapshot seconds. The name carries the data's
// parameters.
func cachedIndex(dir string, vs [][]float32) (*vector.Local, error) {
	opts := benchOptions()
	if ix, err := vector.Open(dir, opts...); err == nil {
		if ix.Len() == benchChunks {
			return ix, nil
		}
		_ = ix.Close()
	}
	_ = os.RemoveAll(dir)
	ix, err := vector.Open(dir, opts...)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	recs := make([]vector.Record, 0, 1000)
	for i, v := range vs {
		recs = append(recs, vector.Record{ID: "c" + strconv.Itoa(i), Vector: v})
		if len(recs) == cap(recs) || i == len(vs)-1 {
			if err := ix.Upsert(context.Background(), recs...); err != nil {
				return nil, err
			}
			recs = recs[:0]
		}
		if (i+1)%20000 == 0 {
			fmt.Fprintf(os.Stderr, "built %d records in %v\n", i+1, time.Since(start).Round(time.Second))
		}
	}
	// Close writes the snapshot the next run reads.
	if err := ix.Close(); err != nil {
		return nil, err
	}
	return vector.Open(dir, opts...)
}

func benchOptions(more ...vector.Option) []vector.Option {
	return append([]vector.Option{vector.WithDimension(benchDim), vector.WithEfConstruction(64), vector.WithSync(false), vector.WithSnapshotEvery(0)}, more...)
}

// scan is the baseline: the top k of the same vectors by a full scan, a
// dot product each (the vectors are unit length), with a bounded heap.
func scan(flat, q []float32, k int) []int {
	h := &scored{}
	for n := 0; n < benchChunks; n++ {
		v := flat[n*benchDim : (n+1)*benchDim]
		var s float32
		for i, x := range q {
			s += x * v[i]
		}
		if h.Len() < k {
			heap.Push(h, hit{n, s})
		} else if s > (*h)[0].s {
			(*h)[0] = hit{n, s}
			heap.Fix(h, 0)
		}
	}
	out := make([]int, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(h).(hit).n
	}
	return out
}

type hit struct {
	n int
	s float32
}

type scored []hit

func (h scored) Len() int           { return len(h) }
func (h scored) Less(i, j int) bool { return h[i].s < h[j].s }
func (h scored) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *scored) Push(x any)        { *h = append(*h, x.(hit)) }
func (h *scored) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// BenchmarkRetrieval100k times a top-10 knowledge.Vector retrieval on the
// embedded index against a brute-force scan of the same vectors, the two
// interleaved query by query so that both see the same machine. It
// reports each one's µs per query, the scan's time over the index's
// (speedup), and the index's recall@10 against the scan, for three
// breadths of the graph search (ef: the candidates a query keeps).
// Random vectors are the graph's hardest case: in 256 dimensions all are
// nearly equally far apart, so recall needs a wide search.
func BenchmarkRetrieval100k(b *testing.B) {
	for _, set := range []string{"clustered", "random"} {
		for _, ef := range []int{64, 512, 2048} {
			b.Run(fmt.Sprintf("data=%s/ef=%d", set, ef), func(b *testing.B) {
				d := load(b, set)
				ix, err := vector.Open(d.dir, benchOptions(vector.WithEfSearch(ef))...)
				if err != nil {
					b.Fatal(err)
				}
				defer ix.Close()
				retrieve(b, d, &knowledge.Vector{Index: ix, Embedder: d.emb})
			})
		}
	}
}

func retrieve(b *testing.B, d *benchData, r knowledge.Retriever) {
	ctx := context.Background()
	var inIndex, inScan time.Duration
	found, wanted := 0, 0
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		qi := i % benchQs
		t0 := time.Now()
		res, err := r.Retrieve(ctx, knowledge.Query{Text: "q" + strconv.Itoa(qi), K: benchK})
		t1 := time.Now()
		exact := scan(d.flat, d.qs[qi], benchK)
		inIndex += t1.Sub(t0)
		inScan += time.Since(t1)
		if err != nil {
			b.Fatal(err)
		}
		want := map[string]bool{}
		for _, n := range exact {
			want["c"+strconv.Itoa(n)] = true
		}
		for _, h := range res {
			if want[h.ID] {
				found++
			}
		}
		wanted += len(exact)
	}
	n := float64(b.N)
	b.ReportMetric(float64(inIndex.Microseconds())/n, "index-µs/query")
	b.ReportMetric(float64(inScan.Microseconds())/n, "scan-µs/query")
	b.ReportMetric(float64(inScan)/float64(inIndex), "speedup")
	b.ReportMetric(float64(found)/float64(wanted), "recall@10")
}
