package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/topic"
)

const answerPath = "/api/v1/acme/agents/classes/EchoAgent/instances/dev_agent/HumanInTheLoopInputResponseEvent"

// ask starts a run of user that ends with the responder's HITL question
// and returns the thread and the request as the client received it.
func ask(t *testing.T, e *env, token string) (thread string, req map[string]any) {
	t.Helper()
	resp := post(t, e.srv, token, blockPath, `{"messages":[{"role":"user","content":"ask"}]}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ask: status %d", resp.StatusCode)
	}
	req = decodeJSON(t, resp.Body)
	if req["_event_name"] != "HumanInTheLoopInputRequestEvent" {
		t.Fatalf("ask: terminal event %v, want the HITL request", req)
	}
	e.agent.wait(t, ctxTimeout(t)) // the start event
	return resp.Header.Get("X-Thread-Id"), req
}

// answerBody is a HITL answer embedding req after edit changed a copy of
// it (nil: unchanged).
func answerBody(t *testing.T, req map[string]any, response string, edit func(req, topic map[string]any)) string {
	t.Helper()
	raw, _ := json.Marshal(req)
	var c map[string]any
	_ = json.Unmarshal(raw, &c)
	if edit != nil {
		edit(c, c["topic"].(map[string]any))
	}
	body, _ := json.Marshal(map[string]any{"response": response, "request_event": c})
	return string(body)
}

func detailOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	d, _ := decodeJSON(t, resp.Body)["detail"].(string)
	return d
}

// testHITLHijack: the probe's attack (answering another user's question by
// naming its run with one's own thread) and forged topics are refused,
// unknown and foreign questions look the same, and nothing reaches the agent.
func testHITLHijack(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	aliceThread, req := ask(t, e, tokenAlice)
	id := req["event_id"].(string)
	resp := post(t, e.srv, tokenBob, blockPath, msgs)
	bobThread := resp.Header.Get("X-Thread-Id")
	if resp.StatusCode != http.StatusOK || bobThread == aliceThread {
		t.Fatalf("bob's own run: status %d thread %s", resp.StatusCode, bobThread)
	}
	e.agent.wait(t, ctxTimeout(t))

	// Bob names his own thread; the request names Alice's run.
	for name, edit := range map[string]func(req, topic map[string]any){
		"topic as received": nil,
		"topic in his thread": func(_, tp map[string]any) {
			tp["thread_id"] = bobThread
		},
	} {
		resp := post(t, e.srv, tokenBob, answerPath+"?thread_id="+bobThread, answerBody(t, req, "red", edit))
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("bob answering alice's question, %s: status %d, want 404", name, resp.StatusCode)
		}
	}
	// Without naming a thread, the request's topic names Alice's thread,
	// where Bob is no member.
	if resp := post(t, e.srv, tokenBob, answerPath, answerBody(t, req, "red", nil)); resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob in alice's thread: status %d, want 403", resp.StatusCode)
	}
	// No oracle: Alice's real question and an id that exists nowhere get
	// the same answer in Bob's thread.
	real := detailOf(t, post(t, e.srv, tokenBob, answerPath+"?thread_id="+bobThread, answerBody(t, req, "red", nil)))
	ghost := event.NewID()
	resp = post(t, e.srv, tokenBob, answerPath+"?thread_id="+bobThread, answerBody(t, req, "red", func(r, _ map[string]any) { r["event_id"] = ghost }))
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown question: status %d, want 404", resp.StatusCode)
	}
	if unknown := detailOf(t, resp); strings.ReplaceAll(unknown, ghost, id) != real || real == "" {
		t.Errorf("foreign and unknown questions differ:\n%s\n%s", real, unknown)
	}

	// Alice herself cannot redirect her answer by forging the topic.
	for name, edit := range map[string]func(req, topic map[string]any){
		"agent_class": func(_, tp map[string]any) { tp["agent_class"] = "OtherAgent" },
		"agent_id":    func(_, tp map[string]any) { tp["agent_id"] = "other" },
		"run_id":      func(_, tp map[string]any) { tp["run_id"] = event.NewID() },
	} {
		resp := post(t, e.srv, tokenAlice, answerPath+"?thread_id="+aliceThread, answerBody(t, req, "red", edit))
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("alice forging %s: status %d, want 404", name, resp.StatusCode)
		}
	}

	// Nothing of the above reached the agent: the next event it gets is
	// Alice's real answer, routed to her run.
	resp = post(t, e.srv, tokenAlice, answerPath+"?thread_id="+aliceThread, answerBody(t, req, "blue", nil))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's answer: status %d: %s", resp.StatusCode, detailOf(t, resp))
	}
	got := e.agent.wait(t, ctxTimeout(t))
	var ans map[string]any
	_ = json.Unmarshal(got.raw, &ans)
	run := req["topic"].(map[string]any)["run_id"]
	if got.subject.Name != "HumanInTheLoopInputResponseEvent" || got.subject.Run != run || ans["response"] != "blue" {
		t.Fatalf("agent got %v %s, want alice's answer in run %v", got.subject, got.raw, run)
	}

	// The question is answered now.
	resp = post(t, e.srv, tokenAlice, answerPath+"?thread_id="+aliceThread, answerBody(t, req, "green", nil))
	if resp.StatusCode != http.StatusConflict || !strings.Contains(detailOf(t, resp), "already answered") {
		t.Errorf("second answer: status %d, want 409 already answered", resp.StatusCode)
	}
}

// testHITLClosedQuestions: a question of an ended run or one that timed
// out is refused with 409 and a message saying which.
func testHITLClosedQuestions(t *testing.T, nb newBusFunc) {
	qs := gateway.NewMemoryQuestions()
	e := newEnv(t, nb, func(c *gateway.Config) { c.Questions = qs })
	ctx := ctxTimeout(t)

	thread, req := ask(t, e, tokenAlice)
	run := req["topic"].(map[string]any)["run_id"].(string)
	if err := qs.EndRun(ctx, thread, "EchoAgent", run); err != nil {
		t.Fatal(err)
	}
	resp := post(t, e.srv, tokenAlice, answerPath+"?thread_id="+thread, answerBody(t, req, "blue", nil))
	if d := detailOf(t, resp); resp.StatusCode != http.StatusConflict || !strings.Contains(d, "has ended") {
		t.Errorf("ended run: status %d %q, want 409 naming the end", resp.StatusCode, d)
	}

	thread, req = ask(t, e, tokenAlice)
	if _, err := qs.Settle(ctx, req["event_id"].(string), gateway.QuestionOpen, gateway.QuestionExpired); err != nil {
		t.Fatal(err)
	}
	resp = post(t, e.srv, tokenAlice, answerPath+"?thread_id="+thread, answerBody(t, req, "blue", nil))
	if d := detailOf(t, resp); resp.StatusCode != http.StatusConflict || !strings.Contains(d, "timed out") {
		t.Errorf("expired question: status %d %q, want 409 naming the timeout", resp.StatusCode, d)
	}

	// Neither answer was published: the next event is a new start.
	post(t, e.srv, tokenAlice, blockPath, msgs)
	if got := e.agent.wait(t, ctxTimeout(t)); got.subject.Name != "UserMessageEvent" {
		t.Errorf("agent got %s, want the next start", got.subject.Name)
	}
}

// testRateLimit: beyond the burst a user gets 429 with Retry-After; other
// users are not affected.
func testRateLimit(t *testing.T, nb newBusFunc) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := newEnv(t, nb, func(c *gateway.Config) {
		c.RateLimit, c.RateBurst = 0.5, 2
		c.Now = func() time.Time { return now }
	})
	for i := range 2 {
		if resp := post(t, e.srv, tokenAlice, blockPath, msgs); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	resp := post(t, e.srv, tokenAlice, blockPath, msgs)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("third request: status %d Retry-After %q, want 429 and 2", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp = post(t, e.srv, tokenAlice, "/v1/chat/completions", `{"model":"EchoAgent/dev","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("chat completion: status %d, want 429", resp.StatusCode)
	}
	if resp := post(t, e.srv, tokenBob, blockPath, msgs); resp.StatusCode != http.StatusOK {
		t.Errorf("bob: status %d, want 200", resp.StatusCode)
	}
}

// testRunsPerUser: a user with MaxRunsPerUser requests open gets 429.
func testRunsPerUser(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb, func(c *gateway.Config) { c.MaxRunsPerUser = 1 })
	open := post(t, e.srv, tokenAlice, streamPath, `{"messages":[{"role":"user","content":"silent"}]}`)
	if open.StatusCode != http.StatusOK {
		t.Fatalf("first stream: status %d", open.StatusCode)
	}
	resp := post(t, e.srv, tokenAlice, blockPath, msgs)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("second run: status %d, want 429 with Retry-After", resp.StatusCode)
	}
	if resp := post(t, e.srv, tokenBob, blockPath, msgs); resp.StatusCode != http.StatusOK {
		t.Errorf("bob: status %d, want 200", resp.StatusCode)
	}
}

// testCORS: no CORS headers unless configured; then only for allowed
// origins.
func testCORS(t *testing.T, nb newBusFunc) {
	preflight := func(e *env, origin string) *http.Response {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodOptions, e.srv.URL+streamPath, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	off := newEnv(t, nb)
	if resp := preflight(off, "https://evil.example"); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS off: Access-Control-Allow-Origin %q", resp.Header.Get("Access-Control-Allow-Origin"))
	}
	on := newEnv(t, nb, func(c *gateway.Config) { c.CORS = &gateway.CORS{AllowOrigins: []string{"https://app.example"}} })
	resp := preflight(on, "https://app.example")
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("allowed origin: status %d headers %v", resp.StatusCode, resp.Header)
	}
	if resp := preflight(on, "https://evil.example"); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("other origin allowed: %v", resp.Header)
	}
	post := post(t, on.srv, tokenAlice, blockPath, msgs, "Origin", "https://app.example")
	if post.Header.Get("Access-Control-Allow-Origin") != "https://app.example" || !strings.Contains(post.Header.Get("Access-Control-Expose-Headers"), "X-Thread-Id") {
		t.Errorf("POST from allowed origin: headers %v", post.Header)
	}
}

// signalQuestions reports every question recorded.
type signalQuestions struct {
	*gateway.MemoryQuestions
	asked chan string
}

func (s signalQuestions) Ask(ctx context.Context, q gateway.Question) error {
	err := s.MemoryQuestions.Ask(ctx, q)
	select {
	case s.asked <- q.EventID:
	default:
	}
	return err
}

// testHITLUnfollowedQuestion: a question asked while no request follows
// its thread is recorded by the gateway's watch and can be answered.
func testHITLUnfollowedQuestion(t *testing.T, nb newBusFunc) {
	qs := signalQuestions{gateway.NewMemoryQuestions(), make(chan string, 16)}
	e := newEnv(t, nb, func(c *gateway.Config) { c.Questions = qs })
	stop := e.gw.WatchQuestionsOnce(ctxTimeout(t))
	defer stop()
	resp := post(t, e.srv, tokenAlice, blockPath, msgs)
	thread, display := resp.Header.Get("X-Thread-Id"), resp.Header.Get("X-Display-Id")
	e.agent.wait(t, ctxTimeout(t))

	at := topic.Agent{Class: "EchoAgent", ID: "dev_agent", Thread: thread, Display: display, Run: event.NewID()}
	req := &event.HumanInTheLoopInputRequestEvent{}
	req.Question, req.HITLType = "Which colour?", event.HITLInput
	req.Topic = &event.Topic{AgentClass: event.Str(at.Class), AgentID: event.Str(at.ID), ThreadID: event.Str(thread),
		DisplayID: event.Str(display), RunID: event.Str(at.Run), EventName: event.Str("HumanInTheLoopInputResponseEvent")}
	event.Stamp(req)
	e.agent.emit(ctxTimeout(t), at, req)
	ctx := ctxTimeout(t)
	for recorded := false; !recorded; {
		select {
		case id := <-qs.asked:
			recorded = id == req.EventID
		case <-ctx.Done():
			t.Fatal("the question was not recorded")
		}
	}
	raw, _ := event.Marshal(req)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	resp = post(t, e.srv, tokenAlice, answerPath+"?thread_id="+thread, answerBody(t, m, "blue", nil))
	if body := decodeJSON(t, resp.Body); resp.StatusCode != http.StatusOK || !strings.Contains(fmt.Sprint(body["output_messages"]), "You chose blue") {
		t.Fatalf("answer: %d %v", resp.StatusCode, body)
	}
}

// testClientIdentityHeaders: whatever X-AIHub-* identity a client sends,
// the agent sees the authenticated user, on every endpoint.
func testClientIdentityHeaders(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	for path, body := range map[string]string{
		blockPath:              msgs,
		"/v1/chat/completions": `{"model":"EchoAgent/dev_agent","messages":[{"role":"user","content":"Hello"}]}`,
	} {
		resp := post(t, e.srv, tokenBob, path, body, "X-AIHub-User-Id", "admin", "x-aihub-tenant-id", "other")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		got := e.agent.wait(t, ctxTimeout(t))
		if v := got.header["x-aihub-user-id"]; len(v) != 1 || v[0] != "bob" {
			t.Errorf("%s: x-aihub-user-id = %v, want [bob]", path, v)
		}
		if v, ok := got.header["x-aihub-tenant-id"]; ok {
			t.Errorf("%s: client's x-aihub-tenant-id %v reached the agent", path, v)
		}
	}
}

// testAuthFailureLimit: a client address that keeps failing
// authentication, or signing bot answers wrongly, gets 429 with
// Retry-After after the burst, before its credentials are checked, until
// its budget refills; successful requests do not count, and other
// addresses are not affected.
func testAuthFailureLimit(t *testing.T, nb newBusFunc) {
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	secret := []byte("bot secret")
	e := newEnv(t, nb, func(c *gateway.Config) {
		c.AuthFailureRate, c.AuthFailureBurst = 0.5, 3
		c.Now, c.BotSecret = now, secret
	})
	// A client at another address.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = "192.0.2.7:4711"
		e.gw.ServeHTTP(w, r)
	}))
	t.Cleanup(other.Close)
	status := func(srv *httptest.Server, token string) (int, string) {
		resp := post(t, srv, token, blockPath, msgs)
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}

	for i := range 5 {
		if code, _ := status(e.srv, tokenAlice); code != http.StatusOK {
			t.Fatalf("alice's request %d: %d", i, code)
		}
	}
	for i := range 3 {
		if code, _ := status(e.srv, "guess"); code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i, code)
		}
	}
	for _, token := range []string{"guess", "", tokenAlice} {
		if code, wait := status(e.srv, token); code != http.StatusTooManyRequests || wait != "2" {
			t.Errorf("token %q after the burst: %d Retry-After %q, want 429 and 2", token, code, wait)
		}
	}
	if code, _ := getAs(t, e.srv.URL+"/api/v1/saap/runs/EchoAgent/run1", "guess"); code != http.StatusTooManyRequests {
		t.Errorf("run status after the burst: %d, want 429", code)
	}

	// Another address is served, and bot answers with a forged signature
	// spend its budget.
	if code, _ := status(other, tokenAlice); code != http.StatusOK {
		t.Errorf("alice elsewhere: %d, want 200", code)
	}
	body := []byte(`{"request_event_id":"6650f0c2a1b2c3d4e5f60700","response":"yes","responder":{"user_id":"b","user_name":"b"}}`)
	for i := range 3 {
		if code, text := postSigned(t, other, []byte("forged"), now(), body); code != http.StatusUnauthorized {
			t.Fatalf("forged answer %d: %d %s, want 401", i, code, text)
		}
	}
	if code, text := postSigned(t, other, secret, now(), body); code != http.StatusTooManyRequests {
		t.Errorf("bot answer after the burst: %d %s, want 429", code, text)
	}

	// Two seconds later one more failure is allowed, and no more.
	clock.Add(int64(2 * time.Second))
	if code, _ := status(e.srv, "guess"); code != http.StatusUnauthorized {
		t.Errorf("after the wait: %d, want 401", code)
	}
	if code, _ := status(e.srv, tokenAlice); code != http.StatusTooManyRequests {
		t.Errorf("after that failure: %d, want 429", code)
	}
}
