package gateway

import (
	"container/list"
	"context"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// ServerConfig holds the connection limits of the http.Server NewServer
// builds. Zero fields take the defaults; a negative duration or count
// switches that limit off.
type ServerConfig struct {
	// ReadHeaderTimeout bounds reading a request's headers, and so how
	// long a new connection may stay silent. Default 10 s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included, so a
	// client trickling its body cannot hold a connection. Default 30 s.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response. The gateway's own handlers
	// extend it while they wait for an agent and per streamed event, so
	// streams are not cut. Default 30 s.
	WriteTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long. Default
	// 120 s.
	IdleTimeout time.Duration
	// UnauthIdleTimeout closes a keep-alive connection that has not yet
	// carried an authenticated request once it is idle this long, so
	// that anyone who can reach the server cannot hold connections for
	// IdleTimeout with one unauthenticated request each. Default 10 s.
	UnauthIdleTimeout time.Duration
	// MaxHeaderBytes bounds request headers. Default 64 KiB.
	MaxHeaderBytes int
	// MaxConns is the most connections open at once. A connection beyond
	// it takes the place of the oldest one that is waiting (new, or idle
	// between requests) and has not carried an authenticated request;
	// if there is none, it is closed as soon as it is accepted. Default
	// 1024.
	MaxConns int
	// MaxConnsPerAddr is the most connections open at once from one
	// client address (an IPv6 address counts by its /64); further ones
	// from that address are closed as soon as they are accepted.
	// Default 64.
	MaxConnsPerAddr int
}

func (c ServerConfig) withDefaults() ServerConfig {
	def := func(d *time.Duration, v time.Duration) {
		switch {
		case *d == 0:
			*d = v
		case *d < 0:
			*d = 0
		}
	}
	def(&c.ReadHeaderTimeout, 10*time.Second)
	def(&c.ReadTimeout, 30*time.Second)
	def(&c.WriteTimeout, 30*time.Second)
	def(&c.IdleTimeout, 120*time.Second)
	def(&c.UnauthIdleTimeout, 10*time.Second)
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = 64 << 10
	}
	if c.MaxConns == 0 {
		c.MaxConns = 1024
	}
	if c.MaxConnsPerAddr == 0 {
		c.MaxConnsPerAddr = 64
	}
	return c
}

// NewServer returns an http.Server for h with the timeouts and the
// connection caps of c, so that slow or idle clients cannot hold
// connections. Set Addr (or call Serve with a listener) and, if needed,
// BaseContext before serving. The server's ConnState and ConnContext
// hooks enforce the caps and learn which connections carried an
// authenticated request (through the Gateway's authentication): do not
// replace them.
func NewServer(h http.Handler, c ServerConfig) *http.Server {
	c = c.withDefaults()
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    c.MaxHeaderBytes,
	}
	if c.MaxConns > 0 || c.MaxConnsPerAddr > 0 || c.UnauthIdleTimeout > 0 {
		l := &connLimit{max: c.MaxConns, perAddr: c.MaxConnsPerAddr, unauthIdle: c.UnauthIdleTimeout,
			conns: make(map[net.Conn]*trackedConn), addrs: make(map[string]int)}
		srv.ConnState = l.track
		srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, connRef{l, c})
		}
	}
	return srv
}

// connLimit counts open connections, in all and per client address, and
// closes those beyond the caps.
type connLimit struct {
	max, perAddr int
	unauthIdle   time.Duration

	mu    sync.Mutex
	conns map[net.Conn]*trackedConn // counted connections
	addrs map[string]int
	// waiting holds the counted connections that are new or idle and have
	// not carried an authenticated request, oldest first: those a new
	// connection may take the place of.
	waiting list.List
}

type trackedConn struct {
	c       net.Conn
	addr    string
	state   http.ConnState
	authed  bool
	waiting *list.Element
	idles   uint64 // counts idle periods, so a stale timer does nothing
}

func (l *connLimit) track(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.conns[c]
	switch s {
	case http.StateNew:
		addr := connAddr(c)
		if l.perAddr > 0 && l.addrs[addr] >= l.perAddr {
			// Not counted: the server sees the closed connection fail
			// and reports it closed, which finds nothing here.
			_ = c.Close()
			return
		}
		if l.max > 0 && len(l.conns) >= l.max {
			e := l.waiting.Front()
			if e == nil {
				_ = c.Close()
				return
			}
			l.forget(e.Value.(*trackedConn))
			_ = e.Value.(*trackedConn).c.Close()
		}
		t = &trackedConn{c: c, addr: addr, state: s}
		l.conns[c] = t
		l.addrs[addr]++
		t.waiting = l.waiting.PushBack(t)
	case http.StateActive:
		if t == nil {
			return
		}
		t.state = s
		l.unwait(t)
	case http.StateIdle:
		if t == nil {
			return
		}
		t.state = s
		if t.authed {
			return
		}
		t.waiting = l.waiting.PushBack(t)
		if l.unauthIdle > 0 {
			t.idles++
			n := t.idles
			time.AfterFunc(l.unauthIdle, func() { l.expire(t, n) })
		}
	case http.StateClosed, http.StateHijacked:
		if t != nil {
			l.forget(t)
		}
	}
}

// forget stops counting t.
func (l *connLimit) forget(t *trackedConn) {
	l.unwait(t)
	delete(l.conns, t.c)
	if l.addrs[t.addr]--; l.addrs[t.addr] <= 0 {
		delete(l.addrs, t.addr)
	}
}

func (l *connLimit) unwait(t *trackedConn) {
	if t.waiting != nil {
		l.waiting.Remove(t.waiting)
		t.waiting = nil
	}
}

// expire closes t if it is still in the idle period n, unauthenticated.
func (l *connLimit) expire(t *trackedConn, n uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[t.c] == t && t.state == http.StateIdle && !t.authed && t.idles == n {
		_ = t.c.Close()
	}
}

// connKey carries a connRef through the contexts of a connection's
// requests.
type connKey struct{}

type connRef struct {
	l *connLimit
	c net.Conn
}

// markAuthenticated records that the connection of ctx's request carried
// an authenticated request: it keeps IdleTimeout and its place under
// MaxConns.
func markAuthenticated(ctx context.Context) {
	ref, ok := ctx.Value(connKey{}).(connRef)
	if !ok {
		return
	}
	ref.l.mu.Lock()
	defer ref.l.mu.Unlock()
	if t := ref.l.conns[ref.c]; t != nil {
		t.authed = true
		ref.l.unwait(t)
	}
}

// connAddr is the client address c counts against.
func connAddr(c net.Conn) string {
	if a := c.RemoteAddr(); a != nil {
		return addrKey(a.String())
	}
	return ""
}

// addrKey is the key of a client address (host:port or host): its IP, an
// IPv6 one by its /64 (one host's usual share).
func addrKey(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}

// LoopbackAddr returns addr with an empty host replaced by 127.0.0.1
// (":8080" becomes "127.0.0.1:8080"), so a server binds to the local
// machine unless it is told an interface.
func LoopbackAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "" {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// isLoopback reports whether a listener's address only accepts local
// connections.
func isLoopback(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}
