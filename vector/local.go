package vector

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Local is the embedded index: an HNSW graph in memory, optionally
// persisted in a directory (Open). It is safe for concurrent use: queries
// run in parallel, writes one at a time.
type Local struct {
	cfg config

	mu     sync.RWMutex
	closed bool
	dim    int

	// Nodes, by position. A deleted node stays in the graph, unreturned,
	// so paths through it still work, until a rebuild drops it.
	ids     []string
	texts   []string
	meta    []map[string]string
	vecs    []float32 // node i's unit vector at [i*dim, (i+1)*dim)
	deleted []bool
	links   [][][]uint32 // links[node][layer]

	byID     map[string]uint32
	postings map[string]map[uint32]struct{} // "key\x00value" -> live nodes
	dead     int
	entry    int32 // -1 when empty
	top      int   // entry's layer

	rng *rand.Rand
	pcg *rand.PCG

	disk *disk // nil for NewMemory

	visited sync.Pool
}

// NewMemory returns an index that lives in memory only.
func NewMemory(opts ...Option) *Local {
	l, _ := newLocal(opts)
	return l
}

func newLocal(opts []Option) (*Local, error) {
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.m < 2 {
		cfg.m = 2
	}
	if cfg.efConstruct < cfg.m {
		cfg.efConstruct = cfg.m
	}
	if cfg.efSearch < 1 {
		cfg.efSearch = 1
	}
	if cfg.dim < 0 || cfg.dim > MaxDimension {
		return nil, fmt.Errorf("%w: dimension %d out of range 1..%d", ErrInvalid, cfg.dim, MaxDimension)
	}
	l := &Local{cfg: cfg, dim: cfg.dim, entry: -1, byID: map[string]uint32{}, postings: map[string]map[uint32]struct{}{}}
	l.pcg = rand.NewPCG(cfg.seed, 0x9e3779b97f4a7c15)
	l.rng = rand.New(l.pcg)
	return l, nil
}

// Len is the number of live records.
func (l *Local) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.byID)
}

// Dimension is the index's vector length, 0 while it is empty and not
// fixed by WithDimension.
func (l *Local) Dimension() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.dim
}

// prepared is a validated record ready to insert.
type prepared struct {
	id   string
	vec  []float32
	text string
	meta map[string]string
}

func (l *Local) prepare(records []Record) ([]prepared, error) {
	dim := l.dim
	out := make([]prepared, 0, len(records))
	for i, r := range records {
		if err := checkID(r.ID); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		v, err := normalize(fmt.Sprintf("record %q", r.ID), r.Vector)
		if err != nil {
			return nil, err
		}
		if dim == 0 {
			dim = len(v)
		}
		if len(v) != dim {
			return nil, fmt.Errorf("%w: record %q has %d dimensions, the index %d", ErrDimension, r.ID, len(v), dim)
		}
		for k := range r.Metadata {
			if strings.IndexByte(k, 0) >= 0 {
				return nil, fmt.Errorf("%w: record %q: metadata key %q holds a NUL byte", ErrInvalid, r.ID, k)
			}
		}
		out = append(out, prepared{id: r.ID, vec: v, text: r.Text, meta: maps.Clone(r.Metadata)})
	}
	return out, nil
}

// Upsert adds or replaces records. A persisted index has logged (and, by
// default, fsynced) them when Upsert returns nil. Validation happens
// before anything is written: one bad record rejects the whole call.
func (l *Local) Upsert(ctx context.Context, records ...Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	ps, err := l.prepare(records)
	if err != nil {
		return err
	}
	if len(ps) == 0 {
		return nil
	}
	if l.disk != nil {
		if err := l.disk.logUpsert(ps); err != nil {
			return err
		}
	}
	for _, p := range ps {
		l.applyUpsert(p)
	}
	return l.afterWrite(len(ps))
}

// Delete removes records by ID; unknown IDs are ignored.
func (l *Local) Delete(ctx context.Context, ids ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	for i, id := range ids {
		if err := checkID(id); err != nil {
			return fmt.Errorf("id %d: %w", i, err)
		}
	}
	known := ids[:0:0]
	for _, id := range ids {
		if _, ok := l.byID[id]; ok {
			known = append(known, id)
		}
	}
	if len(known) == 0 {
		return nil
	}
	if l.disk != nil {
		if err := l.disk.logDelete(known); err != nil {
			return err
		}
	}
	for _, id := range known {
		l.applyDelete(id)
	}
	return l.afterWrite(len(known))
}

// afterWrite rebuilds the graph when deleted nodes outnumber live ones and
// snapshots when the log is long enough.
func (l *Local) afterWrite(n int) error {
	if l.dead > 1024 && l.dead > len(l.byID) {
		l.rebuild()
		if l.disk != nil {
			return l.disk.snapshot(l)
		}
	}
	if l.disk != nil {
		l.disk.pending += n
		if l.cfg.snapshotEvery > 0 && l.disk.pending >= l.cfg.snapshotEvery {
			return l.disk.snapshot(l)
		}
	}
	return nil
}

func postingKey(k, v string) string { return k + "\x00" + v }

func (l *Local) applyUpsert(p prepared) {
	if l.dim == 0 {
		l.dim = len(p.vec)
	}
	if old, ok := l.byID[p.id]; ok {
		l.kill(old)
	}
	n := uint32(len(l.ids))
	l.ids = append(l.ids, p.id)
	l.texts = append(l.texts, p.text)
	l.meta = append(l.meta, p.meta)
	l.vecs = append(l.vecs, p.vec...)
	l.deleted = append(l.deleted, false)
	l.links = append(l.links, nil)
	l.byID[p.id] = n
	for k, v := range p.meta {
		pk := postingKey(k, v)
		s := l.postings[pk]
		if s == nil {
			s = map[uint32]struct{}{}
			l.postings[pk] = s
		}
		s[n] = struct{}{}
	}
	l.insert(n, l.randomLevel())
}

func (l *Local) applyDelete(id string) {
	if n, ok := l.byID[id]; ok {
		l.kill(n)
	}
}

func (l *Local) kill(n uint32) {
	delete(l.byID, l.ids[n])
	for k, v := range l.meta[n] {
		pk := postingKey(k, v)
		if s := l.postings[pk]; s != nil {
			delete(s, n)
			if len(s) == 0 {
				delete(l.postings, pk)
			}
		}
	}
	l.deleted[n] = true
	l.texts[n] = ""
	l.meta[n] = nil
	l.dead++
}

func (l *Local) vec(n uint32) []float32 {
	d := l.dim
	return l.vecs[int(n)*d : int(n)*d+d : int(n)*d+d]
}

func (l *Local) randomLevel() int {
	ml := 1 / math.Log(float64(l.cfg.m))
	lv := int(-math.Log(1-l.rng.Float64()) * ml)
	return min(lv, 16)
}

func (l *Local) maxLinks(layer int) int {
	if layer == 0 {
		return 2 * l.cfg.m
	}
	return l.cfg.m
}

// insert links node n into the graph with its top layer lv.
func (l *Local) insert(n uint32, lv int) {
	l.links[n] = make([][]uint32, lv+1)
	if l.entry < 0 {
		l.entry, l.top = int32(n), lv
		return
	}
	q := l.vec(n)
	ep := uint32(l.entry)
	epSim := dot(q, l.vec(ep))
	for layer := l.top; layer > lv; layer-- {
		ep, epSim = l.greedy(q, ep, epSim, layer)
	}
	eps := []cand{{ep, epSim}}
	for layer := min(lv, l.top); layer >= 0; layer-- {
		vis := l.getVisited()
		found := l.searchLayer(q, eps, l.cfg.efConstruct, layer, vis, nil)
		l.visitedPut(vis)
		neigh := l.selectNeighbors(found, l.cfg.m)
		ids := make([]uint32, len(neigh), l.maxLinks(layer)+1)
		for i, c := range neigh {
			ids[i] = c.n
		}
		l.links[n][layer] = ids
		for _, c := range neigh {
			l.link(c.n, n, c.sim, layer)
		}
		eps = found
	}
	if lv > l.top {
		l.entry, l.top = int32(n), lv
	}
}

// link adds n to from's links on layer, pruning with the heuristic when
// from has too many.
func (l *Local) link(from, n uint32, sim float32, layer int) {
	ls := l.links[from][layer]
	if len(ls) < l.maxLinks(layer) {
		l.links[from][layer] = append(ls, n)
		return
	}
	fv := l.vec(from)
	cs := make([]cand, 0, len(ls)+1)
	cs = append(cs, cand{n, sim})
	for _, o := range ls {
		cs = append(cs, cand{o, dot(fv, l.vec(o))})
	}
	sortCands(cs)
	keep := l.selectNeighbors(cs, l.maxLinks(layer))
	ls = ls[:0]
	for _, c := range keep {
		ls = append(ls, c.n)
	}
	l.links[from][layer] = ls
}

// selectNeighbors is the paper's heuristic: take a candidate only if it is
// closer to the base than to every one already taken, which keeps links
// pointing in different directions; fill up with the nearest rest.
// cs is sorted best first.
func (l *Local) selectNeighbors(cs []cand, m int) []cand {
	if len(cs) <= m {
		return cs
	}
	out := make([]cand, 0, m)
	var skipped []cand
	for _, c := range cs {
		if len(out) >= m {
			break
		}
		cv := l.vec(c.n)
		good := true
		for _, s := range out {
			if dot(cv, l.vec(s.n)) > c.sim {
				good = false
				break
			}
		}
		if good {
			out = append(out, c)
		} else {
			skipped = append(skipped, c)
		}
	}
	for _, c := range skipped {
		if len(out) >= m {
			break
		}
		out = append(out, c)
	}
	return out
}

func (l *Local) greedy(q []float32, ep uint32, epSim float32, layer int) (uint32, float32) {
	for changed := true; changed; {
		changed = false
		for _, nb := range l.links[ep][layer] {
			if s := dot(q, l.vec(nb)); s > epSim {
				ep, epSim, changed = nb, s, true
			}
		}
	}
	return ep, epSim
}

// visitedSet marks nodes seen by one search; the epoch trick clears it in
// O(1).
type visitedSet struct {
	marks []uint32
	epoch uint32
}

func (l *Local) getVisited() *visitedSet {
	v, _ := l.visited.Get().(*visitedSet)
	if v == nil {
		v = &visitedSet{}
	}
	if len(v.marks) < len(l.ids) {
		v.marks = make([]uint32, len(l.ids)+len(l.ids)/4+64)
		v.epoch = 0
	}
	v.epoch++
	if v.epoch == 0 {
		clear(v.marks)
		v.epoch = 1
	}
	return v
}

func (l *Local) visitedPut(v *visitedSet) { l.visited.Put(v) }

type cand struct {
	n   uint32
	sim float32
}

func sortCands(cs []cand) {
	slices.SortFunc(cs, func(a, b cand) int { return cmp.Compare(b.sim, a.sim) })
}

// searchLayer is the paper's SEARCH-LAYER: a best-first walk that keeps
// the ef best nodes seen. With accept set, only accepted nodes enter the
// result, but the walk goes through all, so a filter narrows the result
// without cutting paths. The result is sorted best first.
func (l *Local) searchLayer(q []float32, eps []cand, ef, layer int, vis *visitedSet, accept func(uint32) bool) []cand {
	var frontier maxHeap
	var best minHeap
	for _, e := range eps {
		if vis.marks[e.n] == vis.epoch {
			continue
		}
		vis.marks[e.n] = vis.epoch
		frontier.push(e)
		if accept == nil || accept(e.n) {
			best.push(e)
		}
	}
	for frontier.len() > 0 {
		c := frontier.pop()
		if best.len() >= ef && c.sim < best.peek().sim {
			break
		}
		for _, nb := range l.links[c.n][layer] {
			if vis.marks[nb] == vis.epoch {
				continue
			}
			vis.marks[nb] = vis.epoch
			s := dot(q, l.vec(nb))
			if best.len() < ef || s > best.peek().sim {
				frontier.push(cand{nb, s})
				if accept == nil || accept(nb) {
					best.push(cand{nb, s})
					if best.len() > ef {
						best.pop()
					}
				}
			}
		}
	}
	out := make([]cand, best.len())
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = best.pop()
	}
	return out
}

// Query returns up to k live records matching f, closest first; ties go
// by ID. It scans exactly when the index or the filter's smallest
// posting list is below the WithExactBelow size, and walks the graph
// otherwise.
func (l *Local) Query(ctx context.Context, v []float32, k int, f Filter) ([]Match, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if k < 1 {
		return nil, fmt.Errorf("%w: k is %d, it must be at least 1", ErrInvalid, k)
	}
	q, err := normalize("query", v)
	if err != nil {
		return nil, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	if len(l.byID) == 0 {
		return nil, nil
	}
	if len(q) != l.dim {
		return nil, fmt.Errorf("%w: query has %d dimensions, the index %d", ErrDimension, len(q), l.dim)
	}
	var found []cand
	switch smallest, none := l.smallestPosting(f); {
	case none:
		return nil, nil
	case smallest != nil && len(smallest) < l.cfg.exactBelow:
		found = l.scanSet(q, k, smallest, f)
	case len(l.byID) < l.cfg.exactBelow:
		found = l.scanAll(q, k, f)
	default:
		found = l.search(q, k, f)
	}
	out := make([]Match, len(found))
	for i, c := range found {
		out[i] = Match{Record: Record{
			ID: l.ids[c.n], Vector: slices.Clone(l.vec(c.n)), Text: l.texts[c.n], Metadata: maps.Clone(l.meta[c.n]),
		}, Score: c.sim}
	}
	return out, nil
}

// smallestPosting returns the filter's shortest posting list, none when a
// filter pair matches no record, and nil for an empty filter.
func (l *Local) smallestPosting(f Filter) (map[uint32]struct{}, bool) {
	var best map[uint32]struct{}
	for k, v := range f {
		s := l.postings[postingKey(k, v)]
		if len(s) == 0 {
			return nil, true
		}
		if best == nil || len(s) < len(best) {
			best = s
		}
	}
	return best, false
}

func (l *Local) accepts(n uint32, f Filter) bool {
	return !l.deleted[n] && f.Matches(l.meta[n])
}

func (l *Local) scanSet(q []float32, k int, set map[uint32]struct{}, f Filter) []cand {
	var h minHeap
	for n := range set {
		if len(f) > 1 && !f.Matches(l.meta[n]) {
			continue
		}
		h.pushBounded(cand{n, dot(q, l.vec(n))}, k)
	}
	return l.sorted(h)
}

func (l *Local) scanAll(q []float32, k int, f Filter) []cand {
	var h minHeap
	for i, dead := range l.deleted {
		n := uint32(i)
		if dead || len(f) > 0 && !f.Matches(l.meta[n]) {
			continue
		}
		h.pushBounded(cand{n, dot(q, l.vec(n))}, k)
	}
	return l.sorted(h)
}

// sorted empties h best first, ties by ID so answers are stable.
func (l *Local) sorted(h minHeap) []cand {
	out := slices.Clone(h.items)
	sort.Slice(out, func(i, j int) bool {
		if out[i].sim != out[j].sim {
			return out[i].sim > out[j].sim
		}
		return l.ids[out[i].n] < l.ids[out[j].n]
	})
	return out
}

// search walks the graph. A filter that the walk cannot satisfy with ef
// candidates widens ef, and falls back to a scan when even that is short.
func (l *Local) search(q []float32, k int, f Filter) []cand {
	ep := uint32(l.entry)
	epSim := dot(q, l.vec(ep))
	for layer := l.top; layer > 0; layer-- {
		ep, epSim = l.greedy(q, ep, epSim, layer)
	}
	accept := func(n uint32) bool { return l.accepts(n, f) }
	ef := max(l.cfg.efSearch, k)
	for {
		vis := l.getVisited()
		found := l.searchLayer(q, []cand{{ep, epSim}}, ef, 0, vis, accept)
		l.visitedPut(vis)
		if len(found) >= k || ef >= len(l.ids) {
			var h minHeap
			for _, c := range found {
				h.pushBounded(c, k)
			}
			return l.sorted(h)
		}
		if ef >= 8*max(l.cfg.efSearch, k) {
			return l.scanAll(q, k, f)
		}
		ef *= 2
	}
}

// rebuild drops deleted nodes by inserting the live ones into a fresh
// graph, in their old order.
func (l *Local) rebuild() {
	ids, texts, meta, vecs, deleted := l.ids, l.texts, l.meta, l.vecs, l.deleted
	d := l.dim
	l.ids, l.texts, l.meta, l.vecs, l.deleted, l.links = nil, nil, nil, nil, nil, nil
	l.byID = make(map[string]uint32, len(ids)-l.dead)
	l.postings = map[string]map[uint32]struct{}{}
	l.dead, l.entry, l.top = 0, -1, 0
	for n := range ids {
		if !deleted[n] {
			l.applyUpsert(prepared{id: ids[n], vec: vecs[n*d : n*d+d], text: texts[n], meta: meta[n]})
		}
	}
}

// Close releases the index; a persisted one writes its snapshot first.
func (l *Local) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.disk != nil {
		err := l.disk.snapshot(l)
		if cerr := l.disk.close(); err == nil {
			err = cerr
		}
		return err
	}
	return nil
}

// minHeap keeps the worst candidate on top.
type minHeap struct{ items []cand }

func (h *minHeap) len() int   { return len(h.items) }
func (h *minHeap) peek() cand { return h.items[0] }
func (h *minHeap) push(c cand) {
	h.items = append(h.items, c)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h.items[p].sim <= h.items[i].sim {
			break
		}
		h.items[p], h.items[i] = h.items[i], h.items[p]
		i = p
	}
}
func (h *minHeap) pop() cand {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	i := 0
	for {
		l, r, s := 2*i+1, 2*i+2, i
		if l < last && h.items[l].sim < h.items[s].sim {
			s = l
		}
		if r < last && h.items[r].sim < h.items[s].sim {
			s = r
		}
		if s == i {
			break
		}
		h.items[s], h.items[i] = h.items[i], h.items[s]
		i = s
	}
	return top
}
func (h *minHeap) pushBounded(c cand, k int) {
	if h.len() < k {
		h.push(c)
	} else if c.sim > h.peek().sim {
		h.pop()
		h.push(c)
	}
}

// maxHeap keeps the best candidate on top: a minHeap of the negated
// similarities.
type maxHeap struct{ h minHeap }

func (m *maxHeap) len() int { return m.h.len() }
func (m *maxHeap) push(c cand) {
	c.sim = -c.sim
	m.h.push(c)
}
func (m *maxHeap) pop() cand {
	c := m.h.pop()
	c.sim = -c.sim
	return c
}
