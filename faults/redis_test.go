package faults

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// redisUpstream returns the address of a Redis server and the URL to
// reach it with the host replaced by addr's placeholder: REDIS_URL's
// server when set, else a redis-server process the test starts. Without
// either it skips the test.
func redisUpstream(t *testing.T) (hostport string, u *url.URL) {
	t.Helper()
	if v := os.Getenv("REDIS_URL"); v != "" {
		u, err := url.Parse(v)
		if err != nil {
			t.Fatalf("REDIS_URL: %v", err)
		}
		return u.Host, u
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("the state store outage needs Redis: set REDIS_URL or put redis-server on PATH")
	}
	port := freePort(t)
	p := startProc(t, "redis-server", "Ready to accept connections", nil, bin,
		"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	p.waitReady(t)
	t.Cleanup(func() { _ = p.stop(10 * time.Second) })
	hp := net.JoinHostPort("127.0.0.1", port)
	return hp, &url.URL{Scheme: "redis", Host: hp}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// proxy is a TCP proxy that can cut every connection and refuse new ones
// for an outage.
type proxy struct {
	ln       net.Listener
	upstream string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, upstream string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			_ = c.Close() // refused for the outage
			continue
		}
		up, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// cut closes every connection and refuses new ones until heal.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// heal lets connections through again.
func (p *proxy) heal() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

// TestStoreOutage cuts the agent off its Redis state store for a minute
// (8 s in short mode) while runs arrive. Every run must still end, each
// once: completed once the store is back, or, past the runtime's outage
// budget, with an ExceptionEvent and a dead letter.
func TestStoreOutage(t *testing.T) {
	runs := size(40, 200)
	outage := size(8*time.Second, 60*time.Second)
	upstream, u := redisUpstream(t)
	px := startProxy(t, upstream)
	u.Host = px.addr()

	e := newEnv(t, natsOpts{})
	a := startAgent(t, "agent", e.agentEnv("FAULT_REDIS_URL="+u.String())...)

	third := runs / 3
	for range third {
		e.start(e.newRun(), "hello")
	}
	px.cut()
	began := time.Now()
	for range third {
		e.start(e.newRun(), "hello")
	}
	time.Sleep(outage - time.Since(began)) // the outage itself
	px.heal()
	for range runs - 2*third {
		e.start(e.newRun(), "hello")
	}
	r := e.check(size(45*time.Second, 120*time.Second), "saap-agent "+e.class)
	r.log(t, fmt.Sprintf("store-outage(%s)", outage))
	r.assertInvariants(t)
	for run, o := range r.outcome {
		if o == "completed" && r.effects[run] != 1 {
			t.Errorf("run %s: %d Work side effects, want 1", run, r.effects[run])
		}
	}
	t.Logf("agent exits: %v", a.exited())
}
