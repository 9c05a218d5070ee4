package store

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// A Driver opens a Store from a URL of its scheme. A driver's package
// registers it on import (see Register), so a program links only the
// stores it imports: the Redis store's package registers "redis" and
// "rediss".
type Driver func(ctx context.Context, url string) (Store, error)

var (
	driversMu sync.RWMutex
	drivers   = map[string]Driver{}
	packages  = map[string]string{
		"redis":  "github.com/saap-go/agent/store/redis",
		"rediss": "github.com/saap-go/agent/store/redis",
	}
)

// Register makes d open the store URLs of scheme. It panics if scheme is
// empty, d is nil or scheme is registered twice, as database/sql.Register
// does: a registration runs in an init function, and a second one is a
// programming error.
func Register(scheme string, d Driver) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if scheme == "" || d == nil {
		panic("store: Register needs a scheme and a driver")
	}
	if _, dup := drivers[scheme]; dup {
		panic("store: Register called twice for scheme " + scheme)
	}
	drivers[scheme] = d
}

// Schemes returns the registered schemes, sorted.
func Schemes() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	out := make([]string, 0, len(drivers))
	for s := range drivers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Open opens the store that rawURL names, through the driver registered for
// its scheme. The store is the caller's to close: if it implements
// io.Closer, close it when done. A scheme with no driver linked is an error
// naming the import that links it, when the store is one of this module's.
func Open(ctx context.Context, rawURL string) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("store: %q is not a store URL (scheme://...)", redact(rawURL))
	}
	scheme := strings.ToLower(u.Scheme)
	driversMu.RLock()
	d := drivers[scheme]
	driversMu.RUnlock()
	if d == nil {
		if pkg, ok := packages[scheme]; ok {
			return nil, fmt.Errorf("store: no %s store is linked into this program: add import _ %q", scheme, pkg)
		}
		return nil, fmt.Errorf("store: no store is registered for scheme %q (registered: %s)", scheme, strings.Join(Schemes(), ", "))
	}
	return d(ctx, rawURL)
}

// redact hides a URL's password, for error messages.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	return raw
}
