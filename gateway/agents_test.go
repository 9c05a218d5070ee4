package gateway_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/gateway"
)

const streamPath = "/api/v1/acme/agents/classes/EchoAgent/instances/dev_agent/UserMessageEvent/stream"
const blockPath = "/api/v1/acme/agents/classes/EchoAgent/instances/dev_agent/UserMessageEvent"

func testStreamSSE(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	for _, path := range []string{streamPath, "/agents/EchoAgent/dev_agent/UserMessageEvent/stream"} {
		t.Run(path, func(t *testing.T) {
			resp := post(t, e.srv, tokenAlice, path, msgs)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type %q", ct)
			}
			if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "no-cache") {
				t.Errorf("Cache-Control %q", cc)
			}
			for _, h := range []string{"X-Thread-Id", "X-Display-Id", "X-Run-Id"} {
				if v := resp.Header.Get(h); len(v) != 24 {
					t.Errorf("%s = %q, want a 24-hex id", h, v)
				}
			}
			got := names(t, dataFrames(readSSE(t, resp.Body)))
			want := []string{"UserMessageEvent", "ChunkEvent", "ChunkEvent", "StopEvent", "[DONE]"}
			if !slices.Equal(got, want) {
				t.Fatalf("stream = %v, want %v", got, want)
			}
		})
	}
}

func testBlockingReturnsStop(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	for _, path := range []string{blockPath, "/agents/EchoAgent/dev_agent/UserMessageEvent"} {
		resp := post(t, e.srv, tokenAlice, path, msgs)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		body := decodeJSON(t, resp.Body)
		if body["_event_name"] != "StopEvent" {
			t.Fatalf("%s: body %v, want the StopEvent", path, body)
		}
	}
}

func testStartEventAsTheReferenceBuildsIt(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb, func(c *gateway.Config) { c.ForwardHeaders = []string{"x-aihub-trace"} })
	body := `{"messages":[{"role":"user","content":"Hello"}],"user":{"id":"mallory","name":"M","email":"m@x","roles":["admin"]},"event_id":"forged","locale":"xx"}`
	thread, display := "0123456789abcdef01234567", "76543210fedcba9876543210"
	resp := post(t, e.srv, tokenAlice, blockPath+"?thread_id="+thread+"&display_id="+display, body,
		"Accept-Language", "fr-CH, de;q=0.8", "X-AIHub-Trace", "abc", "X-AIHub-User-Id", "admin", "X-AIHub-Role", "admin")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := e.agent.wait(t, ctxTimeout(t))
	if got.subject.Thread != thread || got.subject.Display != display || got.subject.ID != "dev_agent" {
		t.Errorf("subject %v: want thread %s display %s id dev_agent", got.subject, thread, display)
	}
	if len(got.subject.Run) != 24 || got.subject.Run != resp.Header.Get("X-Run-Id") {
		t.Errorf("run %q, header %q", got.subject.Run, resp.Header.Get("X-Run-Id"))
	}
	var ev map[string]any
	if err := json.Unmarshal(got.raw, &ev); err != nil {
		t.Fatal(err)
	}
	user, _ := ev["user"].(map[string]any)
	if user["id"] != "alice" {
		t.Errorf("user = %v, want alice (client-supplied user must be stripped)", ev["user"])
	}
	if ev["locale"] != "fr" {
		t.Errorf("locale = %v, want fr from Accept-Language", ev["locale"])
	}
	if id, _ := ev["event_id"].(string); len(id) != 24 || id != got.subject.EventID {
		t.Errorf("event_id = %v, subject id %s", ev["event_id"], got.subject.EventID)
	}
	if _, ok := ev["created_at"].(float64); !ok {
		t.Errorf("created_at = %v", ev["created_at"])
	}
	if got.header.Get("x-aihub-trace") != "abc" {
		t.Errorf("allowed X-AIHub header not forwarded: %v", got.header)
	}
	// Identity comes from the authentication, never from the client.
	if v := got.header["x-aihub-user-id"]; len(v) != 1 || v[0] != "alice" {
		t.Errorf("x-aihub-user-id = %v, want [alice]", v)
	}
	if v, ok := got.header["x-aihub-role"]; ok {
		t.Errorf("x-aihub-role = %v forwarded without being allowed", v)
	}
}

func testBadRequests(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	cases := []struct {
		name, path, body string
		status           int
		field            string
	}{
		{"unknown class", "/api/v1/acme/agents/classes/NoAgent/instances/x/UserMessageEvent/stream", msgs, 404, "agent_class"},
		{"unknown event", "/api/v1/acme/agents/classes/EchoAgent/instances/x/StopEvent", msgs, 404, "event"},
		{"unknown route", "/api/v1/acme/nothing", msgs, 404, ""},
		{"not JSON", blockPath, `{"messages":`, 400, "body"},
		{"not an object", blockPath, `[1,2]`, 400, "body"},
		{"wrong type", blockPath, `{"messages":"hello"}`, 400, "messages"},
		{"bad message", blockPath, `{"messages":[{"role":7}]}`, 400, "messages[0].role"},
		{"bad second message", blockPath, `{"messages":[{"role":"user","content":"hi"},{"role":"user","blocks":[{"block_type":"text","text":1}]}]}`, 400, "messages[1].blocks[0].text"},
		{"bad thread id", blockPath + "?thread_id=nothex", msgs, 400, "thread_id"},
		{"bad display id", blockPath + "?display_id=ABCDEF0123456789ABCDEF01", msgs, 400, "display_id"},
		{"bad agent id", "/api/v1/acme/agents/classes/EchoAgent/instances/a%20b/UserMessageEvent", msgs, 400, "agent_id"},
		{"response without request", "/agents/EchoAgent/dev/HumanInTheLoopInputResponseEvent", `{"response":"x"}`, 400, "request_event"},
		// A misspelt messages would start a run on no message at all.
		{"unknown key, no messages", blockPath, `{"msgs":[]}`, 400, "msgs"},
		{"unknown key, no messages, stream", streamPath, `{"msgs":[{"role":"user","content":"hi"}]}`, 400, "msgs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := post(t, e.srv, tokenAlice, c.path, c.body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			body := decodeJSON(t, resp.Body)
			if d, _ := body["detail"].(string); d == "" {
				t.Errorf("no detail: %v", body)
			}
			if f, _ := body["field"].(string); c.field != "" && f != c.field {
				t.Errorf("field = %v, want %q (detail %v)", body["field"], c.field, body["detail"])
			}
		})
	}
}

func testUnauthenticated(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	for _, tok := range []string{"", "wrong"} {
		resp := post(t, e.srv, tok, streamPath, msgs)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: status %d, want 401", tok, resp.StatusCode)
		}
	}
}

func testExceptionBecomesHTTPStatus(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	resp := post(t, e.srv, tokenAlice, blockPath, `{"messages":[{"role":"user","content":"fail"}]}`)
	if resp.StatusCode != 418 {
		t.Fatalf("status %d, want the exception's 418", resp.StatusCode)
	}
	if body := decodeJSON(t, resp.Body); body["detail"] != "the teapot refuses" {
		t.Errorf("detail = %v", body["detail"])
	}
	resp = post(t, e.srv, tokenAlice, streamPath, `{"messages":[{"role":"user","content":"fail"}]}`)
	got := names(t, dataFrames(readSSE(t, resp.Body)))
	if want := []string{"UserMessageEvent", "ExceptionEvent", "[DONE]"}; !slices.Equal(got, want) {
		t.Errorf("stream = %v, want %v", got, want)
	}
}

func testTimeoutAndKeepAlive(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb, func(c *gateway.Config) {
		c.Timeout = 400 * time.Millisecond
		c.KeepAlive = 50 * time.Millisecond
	})
	silent := `{"messages":[{"role":"user","content":"silent"}]}`
	resp := post(t, e.srv, tokenAlice, blockPath, silent)
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("blocking: status %d, want 504", resp.StatusCode)
	}
	resp = post(t, e.srv, tokenAlice, streamPath, silent)
	frames := readSSE(t, resp.Body)
	comments := 0
	for _, f := range frames {
		if f.comment {
			comments++
		}
	}
	if comments == 0 {
		t.Errorf("no keep-alive comment in %v", frames)
	}
	datas := dataFrames(frames)
	if got, want := names(t, datas), []string{"UserMessageEvent", "ExceptionEvent", "[DONE]"}; !slices.Equal(got, want) {
		t.Fatalf("stream = %v, want %v", got, want)
	}
	var ex map[string]any
	_ = json.Unmarshal([]byte(datas[1]), &ex)
	if ex["http_status_code"] != float64(504) {
		t.Errorf("timeout exception = %v", ex)
	}
}

func testThreadScoping(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	resp := post(t, e.srv, tokenAlice, blockPath, msgs)
	thread := resp.Header.Get("X-Thread-Id")
	if resp.StatusCode != 200 || thread == "" {
		t.Fatalf("status %d thread %q", resp.StatusCode, thread)
	}
	// Alice continues her thread; Bob may neither post into it nor stream it.
	if resp := post(t, e.srv, tokenAlice, blockPath+"?thread_id="+thread, msgs); resp.StatusCode != 200 {
		t.Errorf("alice in her own thread: status %d", resp.StatusCode)
	}
	for _, path := range []string{blockPath, streamPath} {
		resp := post(t, e.srv, tokenBob, path+"?thread_id="+thread, msgs)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("bob %s: status %d, want 403", path, resp.StatusCode)
		}
	}
}

func testHITLRoundTrip(t *testing.T, nb newBusFunc) {
	e := newEnv(t, nb)
	resp := post(t, e.srv, tokenAlice, blockPath, `{"messages":[{"role":"user","content":"ask"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	thread := resp.Header.Get("X-Thread-Id")
	req := decodeJSON(t, resp.Body)
	if req["_event_name"] != "HumanInTheLoopInputRequestEvent" || req["question"] != "Which colour?" {
		t.Fatalf("terminal = %v, want the HITL request", req)
	}
	answer, _ := json.Marshal(map[string]any{"response": "blue", "request_event": req})
	path := "/api/v1/acme/agents/classes/EchoAgent/instances/dev_agent/HumanInTheLoopInputResponseEvent/stream"

	// Bob is no member of Alice's thread.
	if resp := post(t, e.srv, tokenBob, path, string(answer)); resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob answering: status %d, want 403", resp.StatusCode)
	}
	// A thread Alice is no member of.
	other := "aaaaaaaaaaaaaaaaaaaaaaaa"
	if resp := post(t, e.srv, tokenAlice, path+"?thread_id="+other, string(answer)); resp.StatusCode != http.StatusForbidden {
		t.Errorf("wrong thread: status %d, want 403", resp.StatusCode)
	}

	resp = post(t, e.srv, tokenAlice, path+"?thread_id="+thread, string(answer))
	datas := dataFrames(readSSE(t, resp.Body))
	if got, want := names(t, datas), []string{"HumanInTheLoopInputResponseEvent", "StopEvent", "[DONE]"}; !slices.Equal(got, want) {
		t.Fatalf("stream = %v, want %v", got, want)
	}
	if !strings.Contains(datas[1], "You chose blue") {
		t.Errorf("stop = %s", datas[1])
	}
	got := e.agent.wait(t, ctxTimeout(t)) // the start
	got = e.agent.wait(t, ctxTimeout(t))  // the response
	if got.subject.Name != "HumanInTheLoopInputResponseEvent" || got.subject.Thread != thread || got.subject.Run != req["topic"].(map[string]any)["run_id"] {
		t.Errorf("response routed to %v", got.subject)
	}
	// As the reference's distributor: the control copy of a HITL response
	// keeps the id of its UserAgent echo.
	var echo map[string]any
	_ = json.Unmarshal([]byte(datas[0]), &echo)
	if echo["event_id"] == nil || echo["event_id"] != got.subject.EventID {
		t.Errorf("echo id %v, control copy id %s: want one id", echo["event_id"], got.subject.EventID)
	}
}
