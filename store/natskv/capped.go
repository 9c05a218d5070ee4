package natskv

import "sync"

// cappedMax bounds a capped map.
const cappedMax = 4096

// capped is a map this process keeps beside the bucket (revisions it wrote,
// seeds, index entries), cleared when full: what it forgets costs a read or
// a write, nothing else. The zero value is ready to use.
type capped[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]V
}

func (c *capped[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *capped[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= cappedMax {
		c.m = make(map[K]V)
	}
	c.m[k] = v
}

func (c *capped[K, V]) drop(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

// clear forgets everything.
func (c *capped[K, V]) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}
