package gateway

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// ServerConfig holds the connection limits of the http.Server NewServer
// builds. Zero fields take the defaults; a negative duration or count
// switches that limit off.
type ServerConfig struct {
	// ReadHeaderTimeout bounds reading a request's headers. Default 10 s.
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
	// MaxHeaderBytes bounds request headers. Default 64 KiB.
	MaxHeaderBytes int
	// MaxConns is the most connections open at once; further connections
	// are closed as soon as they are accepted. Default 1024.
	MaxConns int
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
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = 64 << 10
	}
	if c.MaxConns == 0 {
		c.MaxConns = 1024
	}
	return c
}

// NewServer returns an http.Server for h with the timeouts and the
// connection cap of c, so that slow or idle clients cannot hold
// connections. Set Addr (or call Serve with a listener) and, if needed,
// BaseContext before serving. The server's ConnState hook enforces
// MaxConns: do not replace it.
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
	if c.MaxConns > 0 {
		lim := &connLimit{max: c.MaxConns, over: make(map[net.Conn]bool)}
		srv.ConnState = lim.track
	}
	return srv
}

// connLimit counts open connections and closes those beyond max.
type connLimit struct {
	mu   sync.Mutex
	max  int
	open int
	over map[net.Conn]bool
}

func (l *connLimit) track(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateNew:
		if l.open >= l.max {
			// The server sees the closed connection fail and reports it
			// closed, which forgets it here.
			l.over[c] = true
			_ = c.Close()
			return
		}
		l.open++
	case http.StateClosed, http.StateHijacked:
		if l.over[c] {
			delete(l.over, c)
			return
		}
		l.open--
	}
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
