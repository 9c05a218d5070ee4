package vector

// Option tunes a Local index.
type Option func(*config)

type config struct {
	dim           int
	m             int
	efConstruct   int
	efSearch      int
	exactBelow    int
	seed          uint64
	sync          bool
	snapshotEvery int
}

func defaults() config {
	return config{m: 16, efConstruct: 100, efSearch: 64, exactBelow: 2048, seed: 1, sync: true, snapshotEvery: 20000}
}

// WithDimension fixes the vector length up front; without it the first
// record's length is the index's.
func WithDimension(n int) Option { return func(c *config) { c.dim = n } }

// WithM sets the graph's links per node and layer (default 16; layer 0
// keeps twice as many). More links: better recall, more memory, slower
// inserts.
func WithM(m int) Option { return func(c *config) { c.m = m } }

// WithEfConstruction sets how many candidates an insert considers
// (default 100).
func WithEfConstruction(ef int) Option { return func(c *config) { c.efConstruct = ef } }

// WithEfSearch sets how many candidates a query considers at least
// (default 64, and never fewer than k).
func WithEfSearch(ef int) Option { return func(c *config) { c.efSearch = ef } }

// WithExactBelow makes queries scan instead of walking the graph when the
// index, or the records a filter selects, number fewer than n (default
// 2048): a scan that small is fast and exact.
func WithExactBelow(n int) Option { return func(c *config) { c.exactBelow = n } }

// WithSeed seeds the graph's level draws (default 1), so the same inserts
// build the same graph.
func WithSeed(seed uint64) Option { return func(c *config) { c.seed = seed } }

// WithSync(false) skips the fsync after each logged write: faster bulk
// loads, at the price of losing the last writes on a power cut (not on a
// process crash). Snapshots are always synced.
func WithSync(on bool) Option { return func(c *config) { c.sync = on } }

// WithSnapshotEvery writes a snapshot after n logged records (default
// 20000), which bounds the log a restart replays. 0 snapshots only on
// Close.
func WithSnapshotEvery(n int) Option { return func(c *config) { c.snapshotEvery = n } }
