package gateway_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
)

// serve serves h with NewServer(c) on a loopback port until t ends.
func serve(t *testing.T, h http.Handler, c gateway.ServerConfig) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config = gateway.NewServer(h, c)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reads c until the server closes it; it fails if that takes
// longer than d. It returns what was read.
func closedWithin(t *testing.T, c net.Conn, d time.Duration) string {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	var b strings.Builder
	_, err := io.Copy(&b, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %s (read %q)", d, b.String())
	}
	return b.String() // EOF or reset: closed
}

const health = "GET /api/v1/health HTTP/1.1\r\nHost: gw\r\n\r\n"

// readResponse reads one response from br.
func readResponse(t *testing.T, br *bufio.Reader) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestServerClosesSlowAndIdleConnections(t *testing.T) {
	e := newEnv(t, func(t *testing.T) bus.Bus { return bustest.NewMemory(t) })
	addr := serve(t, e.gw, gateway.ServerConfig{
		ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond,
		IdleTimeout: 300 * time.Millisecond,
	}).Listener.Addr().String()

	t.Run("body trickled a byte at a time", func(t *testing.T) {
		c := dial(t, addr)
		fmt.Fprintf(c, "POST /agents/EchoAgent/dev_agent/UserMessageEvent HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\nContent-Length: 1000\r\n\r\n{", tokenAlice)
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		start := time.Now()
		closedWithin(t, c, 5*time.Second)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("closed after %s", d)
		}
	})
	t.Run("silent new connection", func(t *testing.T) {
		closedWithin(t, dial(t, addr), 5*time.Second)
	})
	t.Run("idle keep-alive connection", func(t *testing.T) {
		c := dial(t, addr)
		if _, err := io.WriteString(c, health); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		if resp := readResponse(t, br); resp.StatusCode != http.StatusOK {
			t.Fatalf("health: %d", resp.StatusCode)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := io.Copy(io.Discard, br); err != nil || n != 0 {
			t.Fatalf("idle connection: read %d bytes, err %v; want a clean close", n, err)
		}
	})
}

func TestServerConnectionCap(t *testing.T) {
	e := newEnv(t, func(t *testing.T) bus.Bus { return bustest.NewMemory(t) })
	addr := serve(t, e.gw, gateway.ServerConfig{MaxConns: 2}).Listener.Addr().String()
	// Connections that carried an authenticated request keep their place.
	for range 2 {
		if s := newConn(t, "127.0.0.1", addr).get(t, "/v1/models", tokenAlice); s != http.StatusOK {
			t.Fatalf("models: %d", s)
		}
	}
	c := dial(t, addr)
	_, _ = io.WriteString(c, health)
	if got := closedWithin(t, c, 5*time.Second); got != "" {
		t.Errorf("third connection was served: %q", got)
	}
}

// TestStreamsOutliveServerTimeouts: the server's read and write timeouts
// bound slow clients, not a stream or a blocking request waiting for its
// agent.
func TestStreamsOutliveServerTimeouts(t *testing.T) {
	e := newEnv(t, func(t *testing.T) bus.Bus { return bustest.NewMemory(t) }, func(c *gateway.Config) {
		c.Timeout = 1200 * time.Millisecond
		c.KeepAlive = 100 * time.Millisecond
	})
	srv := serve(t, e.gw, gateway.ServerConfig{ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	silent := `{"messages":[{"role":"user","content":"silent"}]}`
	resp := post(t, srv, tokenAlice, streamPath, silent)
	got := names(t, dataFrames(readSSE(t, resp.Body)))
	if want := []string{"UserMessageEvent", "ExceptionEvent", "[DONE]"}; !slices.Equal(got, want) {
		t.Errorf("stream = %v, want %v (ended by the gateway's own timeout)", got, want)
	}
	if resp := post(t, srv, tokenAlice, blockPath, silent); resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("blocking: status %d, want the gateway's 504", resp.StatusCode)
	}
}

func TestAnonymousOnlyOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		allow  bool
		refuse bool
	}{
		{"0.0.0.0:0", false, true},
		{"127.0.0.1:0", false, false},
		{"0.0.0.0:0", true, false},
	} {
		t.Run(fmt.Sprintf("%s allow=%v", tc.addr, tc.allow), func(t *testing.T) {
			gw, err := gateway.New(gateway.Config{Bus: bustest.NewMemory(t), Auth: gateway.Anonymous(alice),
				AllowAnonymousRemote: tc.allow, DiscoveryPeriod: time.Hour, DiscoveryWindow: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			served := false
			err = gw.ListenAndServe(ctx, tc.addr, func(net.Addr) { served = true; cancel() })
			if tc.refuse {
				if err == nil || served || !strings.Contains(err.Error(), "anonymous") {
					t.Errorf("served anonymous access on %s: err %v", tc.addr, err)
				}
				return
			}
			if err != nil || !served {
				t.Errorf("err %v served %v", err, served)
			}
		})
	}
	if got := gateway.LoopbackAddr(":8080"); got != "127.0.0.1:8080" {
		t.Errorf("LoopbackAddr(:8080) = %q", got)
	}
	if got := gateway.LoopbackAddr("0.0.0.0:80"); got != "0.0.0.0:80" {
		t.Errorf("LoopbackAddr(0.0.0.0:80) = %q", got)
	}
}

func TestHealthReportsTheBus(t *testing.T) {
	e := newEnv(t, func(t *testing.T) bus.Bus { return bustest.NewNATS(t) })
	get := func() int {
		resp, err := e.srv.Client().Get(e.srv.URL + "/api/v1/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := get(); s != http.StatusOK {
		t.Fatalf("connected: %d", s)
	}
	_ = e.bus.(*natsbus.Bus).Close()
	if s := get(); s != http.StatusServiceUnavailable {
		t.Errorf("closed connection: %d, want 503", s)
	}
}

// replica is a gateway with a KV store of its own on its own connection to
// the NATS server at url, as a restarted process or a second replica has.
func replica(t *testing.T, url string) *httptest.Server {
	t.Helper()
	b, err := natsbus.Connect(natsbus.Config{URL: url, Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	store, err := gateway.NewKVStore(ctxTimeout(t), b.JetStream(), gateway.KVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Bus: b, Threads: store, RateLimit: -1,
		Auth: gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice, tokenBob: bob})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gw.Discover(ctxTimeout(t), "EchoAgent"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return srv
}

// TestKVStoreAcrossGateways: thread ownership and open questions survive a
// gateway restart and are shared by replicas.
func TestKVStoreAcrossGateways(t *testing.T) {
	b := bustest.NewNATS(t)
	url := b.Conn().ConnectedUrl()
	agent := startResponder(t, b, "EchoAgent")

	first := replica(t, url)
	resp := post(t, first, tokenAlice, blockPath, `{"messages":[{"role":"user","content":"ask"}]}`)
	thread := resp.Header.Get("X-Thread-Id")
	req := decodeJSON(t, resp.Body)
	if resp.StatusCode != http.StatusOK || req["_event_name"] != "HumanInTheLoopInputRequestEvent" {
		t.Fatalf("ask: %d %v", resp.StatusCode, req)
	}
	agent.wait(t, ctxTimeout(t))
	first.Close() // the gateway is gone; a new one starts

	restarted := replica(t, url)
	if resp := post(t, restarted, tokenBob, blockPath+"?thread_id="+thread, msgs); resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob taking alice's thread after a restart: status %d, want 403", resp.StatusCode)
	}
	resp = post(t, restarted, tokenAlice, answerPath+"?thread_id="+thread, answerBody(t, req, "blue", nil))
	if body := decodeJSON(t, resp.Body); resp.StatusCode != http.StatusOK || !strings.Contains(fmt.Sprint(body["output_messages"]), "You chose blue") {
		t.Fatalf("alice answering after a restart: %d %v", resp.StatusCode, body)
	}
	other := replica(t, url)
	resp = post(t, other, tokenAlice, answerPath+"?thread_id="+thread, answerBody(t, req, "green", nil))
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("answer on another replica: status %d, want 409", resp.StatusCode)
	}

	// Two replicas answering one question at once: exactly one answer
	// reaches the agent.
	agent.wait(t, ctxTimeout(t)) // the answer above
	resp = post(t, restarted, tokenAlice, blockPath, `{"messages":[{"role":"user","content":"ask"}]}`)
	thread, req = resp.Header.Get("X-Thread-Id"), decodeJSON(t, resp.Body)
	agent.wait(t, ctxTimeout(t))
	statuses := make([]int, 2)
	var wg sync.WaitGroup
	for i, srv := range []*httptest.Server{restarted, other} {
		body := answerBody(t, req, fmt.Sprint("answer", i), nil)
		wg.Go(func() {
			r, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+answerPath+"?thread_id="+thread, strings.NewReader(body))
			r.Header.Set("Authorization", "Bearer "+tokenAlice)
			resp, err := srv.Client().Do(r)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		})
	}
	wg.Wait()
	slices.Sort(statuses)
	if statuses[0] != http.StatusOK || statuses[1] != http.StatusConflict {
		t.Errorf("concurrent answers: statuses %v, want one 200 and one 409", statuses)
	}
	got := agent.wait(t, ctxTimeout(t))
	if got.subject.Name != "HumanInTheLoopInputResponseEvent" {
		t.Errorf("agent got %s", got.subject.Name)
	}
	if n := len(agent.got); n != 0 {
		t.Errorf("%d more events reached the agent", n)
	}

	// The chat flow across replicas: a question asked through one replica
	// is answered by the next chat message sent to another.
	resp = post(t, restarted, tokenAlice, blockPath, `{"messages":[{"role":"user","content":"ask"}]}`)
	thread, req = resp.Header.Get("X-Thread-Id"), decodeJSON(t, resp.Body)
	agent.wait(t, ctxTimeout(t))
	resp = post(t, other, tokenAlice, "/v1/chat/completions",
		`{"model":"EchoAgent/dev_agent","metadata":{"thread_id":"`+thread+`"},"messages":[{"role":"user","content":"teal"}]}`)
	if body := decodeJSON(t, resp.Body); resp.StatusCode != http.StatusOK || !strings.Contains(fmt.Sprint(body["choices"]), "You chose teal") {
		t.Errorf("chat answer on another replica: %d %v", resp.StatusCode, body)
	}
	got = agent.wait(t, ctxTimeout(t))
	if got.subject.Name != "HumanInTheLoopInputResponseEvent" || got.subject.Run != req["topic"].(map[string]any)["run_id"] {
		t.Errorf("chat answer reached the agent as %s on %v", got.subject.Name, got.subject)
	}
}

// TestKVStoreCreateRace: replicas racing to create one thread give it one
// owner.
func TestKVStoreCreateRace(t *testing.T) {
	b := bustest.NewNATS(t)
	ctx := ctxTimeout(t)
	const n = 4
	stores := make([]*gateway.KVStore, n)
	for i := range stores {
		nb, err := natsbus.Connect(natsbus.Config{URL: b.Conn().ConnectedUrl()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = nb.Close() })
		if stores[i], err = gateway.NewKVStore(ctx, nb.JetStream(), gateway.KVConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 5 {
		thread := event.NewID()
		var wg sync.WaitGroup
		created := make([]bool, n)
		start := make(chan struct{})
		for i, s := range stores {
			wg.Go(func() {
				<-start
				ok, err := s.Create(ctx, thread, fmt.Sprintf("user%d", i))
				if err != nil {
					t.Error(err)
				}
				created[i] = ok
			})
		}
		close(start)
		wg.Wait()
		owners := 0
		for i, ok := range created {
			if !ok {
				continue
			}
			owners++
			for _, s := range stores {
				if m, err := s.IsMember(ctx, thread, fmt.Sprintf("user%d", i)); err != nil || !m {
					t.Errorf("round %d: owner user%d not a member in every store: %v %v", round, i, m, err)
				}
			}
		}
		if owners != 1 {
			t.Fatalf("round %d: %d owners, want 1", round, owners)
		}
	}
}

// TestStores: the memory and KV stores behave alike.
func TestStores(t *testing.T) {
	type store interface {
		gateway.Threads
		gateway.Questions
	}
	stores := map[string]func(t *testing.T) store{
		"memory": func(*testing.T) store {
			return struct {
				*gateway.MemoryThreads
				*gateway.MemoryQuestions
			}{gateway.NewMemoryThreads(), gateway.NewMemoryQuestions()}
		},
		"kv": func(t *testing.T) store {
			s, err := gateway.NewKVStore(ctxTimeout(t), bustest.NewNATS(t).JetStream(), gateway.KVConfig{Bucket: "gw_test"})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			s, ctx := mk(t), ctxTimeout(t)
			thread := "thread.with*odd>chars"
			if err := s.AddMember(ctx, thread, "ada"); err != nil {
				t.Fatal(err)
			}
			if ok, _ := s.Create(ctx, thread, "eve"); ok {
				t.Error("Create took an existing thread")
			}
			if err := s.AddMember(ctx, thread, "bob"); err != nil {
				t.Fatal(err)
			}
			for user, want := range map[string]bool{"ada": true, "bob": true, "eve": false} {
				if ok, err := s.IsMember(ctx, thread, user); err != nil || ok != want {
					t.Errorf("IsMember(%s) = %v, %v; want %v", user, ok, err, want)
				}
			}
			if ok, err := s.IsMember(ctx, "nothread", "ada"); err != nil || ok {
				t.Errorf("IsMember on a missing thread = %v, %v", ok, err)
			}

			q := gateway.Question{EventID: "e1", Class: "A", AgentID: "a", Thread: thread, Run: "r", Response: "R", Request: []byte(`{"x":1}`)}
			if err := s.Ask(ctx, q); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Settle(ctx, "e1", gateway.QuestionOpen, gateway.QuestionAnswered); err != nil {
				t.Fatal(err)
			}
			if err := s.Ask(ctx, q); err != nil { // seen again by another stream
				t.Fatal(err)
			}
			got, ok, err := s.Question(ctx, "e1")
			if err != nil || !ok || got.State != gateway.QuestionAnswered || got.Run != "r" || string(got.Request) != `{"x":1}` {
				t.Errorf("Question = %+v, %v, %v; want it answered", got, ok, err)
			}
			var se *gateway.StateError
			if _, err := s.Settle(ctx, "e1", gateway.QuestionOpen, gateway.QuestionAnswered); !errors.As(err, &se) || se.State != gateway.QuestionAnswered {
				t.Errorf("second Settle: %v, want a StateError", err)
			}
			if _, err := s.Settle(ctx, "nope", gateway.QuestionOpen, gateway.QuestionAnswered); !errors.Is(err, gateway.ErrQuestionUnknown) {
				t.Errorf("Settle unknown: %v", err)
			}
			if _, ok, err := s.Question(ctx, "nope"); ok || err != nil {
				t.Errorf("Question unknown: %v %v", ok, err)
			}
			if ended, _ := s.RunEnded(ctx, thread, "A", "r"); ended {
				t.Error("run ended before EndRun")
			}
			if err := s.EndRun(ctx, thread, "A", "r"); err != nil {
				t.Fatal(err)
			}
			if ended, _ := s.RunEnded(ctx, thread, "A", "r"); !ended {
				t.Error("run not ended after EndRun")
			}
			if ended, _ := s.RunEnded(ctx, thread, "B", "r"); ended {
				t.Error("EndRun of class A ended class B's run")
			}

			// The thread's latest input or chat question, for the chat flow.
			tq := s.(gateway.ThreadQuestions)
			if _, ok, err := tq.LastChatQuestion(ctx, thread); ok || err != nil {
				t.Errorf("LastChatQuestion before any input question: %v %v", ok, err)
			}
			for i, typ := range []string{"input", "confirmation", "chat", "confirmation"} {
				q := gateway.Question{EventID: fmt.Sprintf("c%d", i), Thread: thread, HITLType: typ, Request: []byte(`{}`)}
				if err := s.Ask(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			if got, ok, err := tq.LastChatQuestion(ctx, thread); !ok || err != nil || got.EventID != "c2" || got.State != gateway.QuestionOpen {
				t.Errorf("LastChatQuestion = %+v %v %v, want the open chat question c2", got, ok, err)
			}
		})
	}
}

// dialFrom connects to addr from the loopback address local (127.0.0.x),
// which the server sees as a client address of its own.
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// conn is a client connection that sends requests one at a time.
type conn struct {
	c  net.Conn
	br *bufio.Reader
}

func newConn(t *testing.T, local, addr string) *conn {
	c := dialFrom(t, local, addr)
	return &conn{c: c, br: bufio.NewReader(c)}
}

// get sends GET path (with token, if any) and returns the answer's status,
// or 0 if the server closed the connection without one.
func (c *conn) get(t *testing.T, path, token string) int {
	t.Helper()
	req := "GET " + path + " HTTP/1.1\r\nHost: gw\r\n"
	if token != "" {
		req += "Authorization: Bearer " + token + "\r\n"
	}
	if _, err := io.WriteString(c.c, req+"\r\n"); err != nil {
		return 0
	}
	_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer c.c.SetReadDeadline(time.Time{})
	resp, err := http.ReadResponse(c.br, nil)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("GET %s: no answer within 5 s", path)
	}
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// flood opens n connections from local, one after the other, and makes
// one unauthenticated request on each, leaving them open. It returns how
// many were answered.
func flood(t *testing.T, local, addr string, n int) (answered int) {
	t.Helper()
	for range n {
		if newConn(t, local, addr).get(t, "/v1/models", "") == http.StatusUnauthorized {
			answered++
		}
	}
	return answered
}

// TestServerIdleFloodDoesNotLockOut: connections that never carried an
// authenticated request, idle after one request each, do not keep an
// authenticated user out, nor take its connection's place.
func TestServerIdleFloodDoesNotLockOut(t *testing.T) {
	e := newEnv(t, func(t *testing.T) bus.Bus { return bustest.NewMemory(t) })
	addr := serve(t, e.gw, gateway.ServerConfig{MaxConns: 20}).Listener.Addr().String()
	if n := flood(t, "127.0.0.1", addr, 40); n != 40 {
		t.Errorf("flood: %d of 40 answered; a new connection takes an idle one's place", n)
	}
	user := newConn(t, "127.0.0.2", addr)
	if s := user.get(t, "/v1/models", tokenAlice); s != http.StatusOK {
		t.Fatalf("user after the flood: status %d, want 200", s)
	}
	flood(t, "127.0.0.3", addr, 40)
	if s := user.get(t, "/v1/models", tokenAlice); s != http.StatusOK {
		t.Errorf("user's connection after a second flood: status %d, want 200", s)
	}
}

// TestServerConnsPerAddr: one address holds at most MaxConnsPerAddr
// connections; another address is still served.
func TestServerConnsPerAddr(t *testing.T) {
	e := newEnv(t, func(t *testing.T) bus.Bus { return bustest.NewMemory(t) })
	addr := serve(t, e.gw, gateway.ServerConfig{MaxConns: 20, MaxConnsPerAddr: 10}).Listener.Addr().String()
	if n := flood(t, "127.0.0.1", addr, 40); n != 10 {
		t.Errorf("flood: %d of 40 connections answered, want 10", n)
	}
	if s := newConn(t, "127.0.0.2", addr).get(t, "/v1/models", tokenAlice); s != http.StatusOK {
		t.Errorf("other address: status %d, want 200", s)
	}
}

// TestServerUnauthIdleTimeout: an idle connection that has carried no
// authenticated request is closed after UnauthIdleTimeout; one that has
// keeps IdleTimeout.
func TestServerUnauthIdleTimeout(t *testing.T) {
	e := newEnv(t, func(t *testing.T) bus.Bus { return bustest.NewMemory(t) })
	addr := serve(t, e.gw, gateway.ServerConfig{UnauthIdleTimeout: 300 * time.Millisecond}).Listener.Addr().String()
	user := newConn(t, "127.0.0.1", addr)
	if s := user.get(t, "/v1/models", tokenAlice); s != http.StatusOK {
		t.Fatalf("user: status %d", s)
	}
	anon := newConn(t, "127.0.0.1", addr)
	if s := anon.get(t, "/v1/models", ""); s != http.StatusUnauthorized {
		t.Fatalf("unauthenticated: status %d", s)
	}
	_ = anon.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := io.Copy(io.Discard, anon.br); err != nil || n != 0 {
		t.Fatalf("unauthenticated idle connection: read %d bytes, err %v; want a close", n, err)
	}
	// The user's connection went idle first; it is still served.
	if s := user.get(t, "/v1/models", tokenAlice); s != http.StatusOK {
		t.Errorf("user's idle connection: status %d, want 200", s)
	}
}
