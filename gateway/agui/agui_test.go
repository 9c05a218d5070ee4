package agui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/gateway/agui"
	"github.com/saap-go/agent/gateway/internal/adaptertest"
	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/step"
)

// shareState makes the test agent share its state with AG-UI clients.
func shareState(ctx step.Context) error {
	s, err := agui.Snapshot(map[string]any{"mood": "cheerful"})
	if err != nil {
		return err
	}
	if err := ctx.Emit(s); err != nil {
		return err
	}
	d, err := agui.Delta(agui.PatchOp{Op: "add", Path: "/greeted", Value: true})
	if err != nil {
		return err
	}
	return ctx.Emit(d)
}

func start(t testing.TB) *adaptertest.Env {
	return adaptertest.Start(t, shareState, agui.Mount)
}

type frame map[string]any

func (f frame) typ() string { s, _ := f["type"].(string); return s }

// post sends a RunAgentInput and returns the status and the AG-UI events.
func post(t testing.TB, e *adaptertest.Env, token, body string) (int, []frame, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.Server.URL+"/agui/"+adaptertest.Class+"/dev", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := e.Server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, nil, string(data)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var frames []frame
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var f frame
			if err := json.Unmarshal([]byte(data), &f); err != nil {
				t.Fatalf("data line %q: %v", data, err)
			}
			frames = append(frames, f)
		}
	}
	return resp.StatusCode, frames, ""
}

func types(fs []frame) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.typ()
	}
	return out
}

func input(thread, text string) string {
	b, _ := json.Marshal(map[string]any{"threadId": thread, "runId": "run-1", "state": nil, "tools": []any{}, "context": []any{},
		"messages": []any{map[string]any{"id": "m1", "role": "user", "content": text}}})
	return string(b)
}

func resume(thread, id string, payload any) string {
	b, _ := json.Marshal(map[string]any{"threadId": thread, "runId": "run-2", "messages": []any{},
		"resume": []any{map[string]any{"interruptId": id, "status": "resolved", "payload": payload}}})
	return string(b)
}

func TestEvents(t *testing.T) {
	e := start(t)
	status, fs, body := post(t, e, adaptertest.TokenAlice, input("thread-events", "hi"))
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	want := []string{"RUN_STARTED", "STATE_SNAPSHOT", "STATE_DELTA",
		"REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END",
		"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
		"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"RUN_FINISHED"}
	if got := types(fs); !slices.Equal(got, want) {
		t.Fatalf("events\n got %q\nwant %q", got, want)
	}
	var text strings.Builder
	for _, f := range fs {
		if f.typ() == "TEXT_MESSAGE_CONTENT" {
			text.WriteString(f["delta"].(string))
		}
	}
	if text.String() != "Hello, world" {
		t.Errorf("text %q, want the chunks and the stop's rest", text.String())
	}
	if fs[0]["threadId"] != "thread-events" || fs[0]["runId"] != "run-1" {
		t.Errorf("RUN_STARTED %v: want the client's ids", fs[0])
	}
	meta, _ := fs[0]["metadata"].(map[string]any)["saap"].(map[string]any)
	if meta["thread_id"] != agui.ThreadID(adaptertest.Alice.ID, "thread-events") || len(meta["run_id"].(string)) != 24 {
		t.Errorf("RUN_STARTED metadata %v", meta)
	}
	if snap, _ := fs[1]["snapshot"].(map[string]any); snap["mood"] != "cheerful" {
		t.Errorf("STATE_SNAPSHOT %v", fs[1])
	}
	if d, _ := fs[2]["delta"].([]any); len(d) != 1 || d[0].(map[string]any)["path"] != "/greeted" {
		t.Errorf("STATE_DELTA %v", fs[2])
	}
	if fs[5]["delta"] != "the user greets me" {
		t.Errorf("reasoning %v", fs[5])
	}
	if fs[8]["toolCallId"] != "call_1" || fs[8]["toolCallName"] != "lookup" || fs[9]["delta"] != `{"q":"greeting"}` || fs[11]["content"] != "hello" {
		t.Errorf("tool call %v %v %v", fs[8], fs[9], fs[11])
	}
	last := fs[len(fs)-1]
	if o, _ := last["outcome"].(map[string]any); o["type"] != "success" {
		t.Errorf("RUN_FINISHED %v", last)
	}
}

// TestClientNamedThreadsAreTheUsers: a threadId the client names is the
// user's own: two users of one name get two threads, so the first does
// not own the name and the second is not refused.
func TestClientNamedThreadsAreTheUsers(t *testing.T) {
	e := start(t)
	threadOf := func(token string) string {
		t.Helper()
		status, fs, body := post(t, e, token, input("my-chat", "hi"))
		if status != http.StatusOK || len(fs) == 0 {
			t.Fatalf("status %d: %s", status, body)
		}
		meta, _ := fs[0]["metadata"].(map[string]any)["saap"].(map[string]any)
		id, _ := meta["thread_id"].(string)
		return id
	}
	alice, bob := threadOf(adaptertest.TokenAlice), threadOf(adaptertest.TokenBob)
	if alice == "" || bob == "" || alice == bob {
		t.Fatalf("threads of \"my-chat\": alice %q, bob %q: want two threads", alice, bob)
	}
	if again := threadOf(adaptertest.TokenAlice); again != alice {
		t.Errorf("alice's \"my-chat\" moved from %s to %s", alice, again)
	}
}

func TestInterruptResume(t *testing.T) {
	e := start(t)
	thread := "0123456789abcdef01234567"
	before := time.Now()
	status, fs, body := post(t, e, adaptertest.TokenAlice, input(thread, adaptertest.Ask))
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	if got := types(fs); !slices.Equal(got, []string{"RUN_STARTED", "RUN_FINISHED"}) {
		t.Fatalf("events %q", got)
	}
	o := fs[1]["outcome"].(map[string]any)
	its, _ := o["interrupts"].([]any)
	if o["type"] != "interrupt" || len(its) != 1 {
		t.Fatalf("outcome %v", o)
	}
	it := its[0].(map[string]any)
	id, _ := it["id"].(string)
	if len(id) != 24 || it["message"] != adaptertest.Question || it["reason"] != "input" {
		t.Fatalf("interrupt %v", it)
	}
	exp, err := time.Parse(time.RFC3339Nano, it["expiresAt"].(string))
	if err != nil || exp.Before(before.Add(time.Hour-time.Minute)) || exp.After(time.Now().Add(time.Hour+time.Minute)) {
		t.Fatalf("expiresAt %v (%v): want about an hour from now", it["expiresAt"], err)
	}

	// Bob may not resume Alice's question, nor start runs in her thread.
	if status, _, body := post(t, e, adaptertest.TokenBob, resume(thread, id, "Mallory")); status != http.StatusForbidden {
		t.Fatalf("Bob resumes: %d %s, want 403", status, body)
	}
	if status, _, body := post(t, e, adaptertest.TokenBob, input(thread, "hi")); status != http.StatusForbidden {
		t.Fatalf("Bob starts a run in Alice's thread: %d %s, want 403", status, body)
	}
	// An unknown interrupt id is 404.
	if status, _, body := post(t, e, adaptertest.TokenAlice, resume(thread, "ffffffffffffffffffffffff", "x")); status != http.StatusNotFound {
		t.Fatalf("unknown interrupt: %d %s, want 404", status, body)
	}

	// A cancelled interrupt sends nothing: the question stays open.
	cancelled, _ := json.Marshal(map[string]any{"threadId": thread, "runId": "run-c", "messages": []any{},
		"resume": []any{map[string]any{"interruptId": id, "status": "cancelled"}}})
	status, fs, body = post(t, e, adaptertest.TokenAlice, string(cancelled))
	if got := types(fs); status != http.StatusOK || !slices.Equal(got, []string{"RUN_STARTED", "RUN_FINISHED"}) {
		t.Fatalf("cancelled resume: %d %s %q", status, body, got)
	}
	if status, _, _ := post(t, e, adaptertest.TokenBob, string(cancelled)); status != http.StatusForbidden {
		t.Fatalf("Bob cancels in Alice's thread: %d, want 403", status)
	}

	status, fs, body = post(t, e, adaptertest.TokenAlice, resume(thread, id, "Ada"))
	if status != http.StatusOK {
		t.Fatalf("resume: %d %s", status, body)
	}
	if got := types(fs); !slices.Equal(got, []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}) {
		t.Fatalf("resumed run events %q", got)
	}
	if fs[2]["delta"] != "Hello, Ada!" {
		t.Errorf("answer %v", fs[2])
	}
	if status, _, body := post(t, e, adaptertest.TokenAlice, resume(thread, id, "Eve")); status != http.StatusConflict {
		t.Fatalf("second answer: %d %s, want 409", status, body)
	}
}

func TestRunError(t *testing.T) {
	e := start(t)
	status, fs, body := post(t, e, adaptertest.TokenAlice, input("thread-fail", adaptertest.Fail))
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	if got := types(fs); !slices.Equal(got, []string{"RUN_STARTED", "RUN_ERROR"}) {
		t.Fatalf("events %q", got)
	}
	if msg, _ := fs[1]["message"].(string); !strings.Contains(msg, "reference") || fs[1]["code"] != "500" {
		t.Errorf("RUN_ERROR %v", fs[1])
	}
}

func TestRefusals(t *testing.T) {
	e := start(t)
	if status, _, _ := post(t, e, "nobody", input("t", "hi")); status != http.StatusUnauthorized {
		t.Errorf("unauthenticated: %d, want 401", status)
	}
	if status, _, body := post(t, e, adaptertest.TokenAlice, `{"runId":"r"}`); status != http.StatusBadRequest || !strings.Contains(body, "threadId") {
		t.Errorf("no threadId: %d %s", status, body)
	}
	if status, _, body := post(t, e, adaptertest.TokenAlice, `[1]`); status != http.StatusBadRequest {
		t.Errorf("not an object: %d %s", status, body)
	}
}

// TestOfficialClient runs interop/agui/run.mjs: @ag-ui/client's HttpAgent
// against the gateway.
func TestOfficialClient(t *testing.T) {
	e := start(t)
	out := adaptertest.RunNode(t, "agui", e.Server.URL)
	type result struct {
		Types   []string `json:"types"`
		Outcome *struct {
			Outcome    string           `json:"outcome"`
			Interrupts []map[string]any `json:"interrupts"`
		} `json:"outcome"`
		Error *string        `json:"error"`
		Text  string         `json:"text"`
		State map[string]any `json:"state"`
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	get := func(name string) result {
		var r result
		if err := json.Unmarshal(res[name], &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	if string(res["invalid"]) != "[]" {
		t.Errorf("events the AG-UI schema rejects: %s", res["invalid"])
	}
	hello := get("hello")
	if hello.Error != nil || hello.Text != "Hello, world" || hello.Outcome == nil || hello.Outcome.Outcome != "success" {
		t.Errorf("hello: %s", res["hello"])
	}
	if hello.State["mood"] != "cheerful" || hello.State["greeted"] != true {
		t.Errorf("hello state: %v, want the snapshot with the delta applied", hello.State)
	}
	ask := get("ask")
	if ask.Outcome == nil || ask.Outcome.Outcome != "interrupt" || len(ask.Outcome.Interrupts) != 1 ||
		ask.Outcome.Interrupts[0]["message"] != adaptertest.Question {
		t.Errorf("ask: %s", res["ask"])
	}
	if bob := get("bobResume"); bob.Error == nil || !strings.Contains(*bob.Error, "403") {
		t.Errorf("Bob resuming Alice's question: %s, want a 403 error", res["bobResume"])
	}
	if r := get("resume"); r.Error != nil || !strings.Contains(r.Text, "Hello, Ada!") || r.Outcome == nil || r.Outcome.Outcome != "success" {
		t.Errorf("resume: %s", res["resume"])
	}
	if again := get("again"); again.Error == nil || !strings.Contains(*again.Error, "409") {
		t.Errorf("answering twice: %s, want a 409 error", res["again"])
	}
	if f := get("fail"); f.Error == nil || !slices.Contains(f.Types, "RUN_ERROR") {
		t.Errorf("fail: %s", res["fail"])
	}
	if u := get("unauthenticated"); u.Error == nil || !strings.Contains(*u.Error, "401") {
		t.Errorf("unauthenticated: %s", res["unauthenticated"])
	}
	// abortRun stopped the agent: its step's context was cancelled.
	if ab := get("abort"); !slices.Contains(ab.Types, "TEXT_MESSAGE_CONTENT") || slices.Contains(ab.Types, "RUN_FINISHED") {
		t.Errorf("abort: %s", res["abort"])
	}
	select {
	case cause := <-e.Stopped:
		if !errors.Is(cause, step.ErrRunEnded) {
			t.Errorf("the aborted run's step ended with %v, want step.ErrRunEnded", cause)
		}
	case <-time.After(30 * time.Second):
		t.Error("abortRun did not stop the agent's step")
	}
}

// A client that goes away in the middle of a run (AG-UI's way to stop one)
// cancels it: the agent's step sees its context cancelled and the run's
// status turns cancelled. A run cancelled elsewhere ends the AG-UI run
// with RUN_ERROR, code "cancelled".
func TestAbortCancelsRun(t *testing.T) {
	e := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.Server.URL+"/agui/"+adaptertest.Class+"/dev", strings.NewReader(input("abort", adaptertest.Wait)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adaptertest.TokenAlice)
	resp, err := e.Server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "TEXT_MESSAGE_CONTENT") {
	}
	run := <-e.Working
	cancel() // the client goes away
	resp.Body.Close()
	select {
	case cause := <-e.Stopped:
		if !errors.Is(cause, step.ErrRunEnded) {
			t.Errorf("the step's context ended with %v, want step.ErrRunEnded", cause)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the client's abort did not stop the agent's step")
	}
	rq := e.Bus.(bus.Requester)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		st, err := status.Request(adaptertest.Ctx(t), rq, adaptertest.Class, run)
		if err == nil && st.State == status.Cancelled {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("run %s: status %+v, %v; want cancelled", run, st, err)
		}
	}

	// Cancelled through the gateway while a client follows it.
	done := make(chan []frame, 1)
	go func() {
		var frames []frame
		defer func() { done <- frames }()
		req, err := http.NewRequestWithContext(adaptertest.Ctx(t), http.MethodPost, e.Server.URL+"/agui/"+adaptertest.Class+"/dev",
			strings.NewReader(input("elsewhere", adaptertest.Wait)))
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer "+adaptertest.TokenAlice)
		resp, err := e.Server.Client().Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var f frame
				if json.Unmarshal([]byte(data), &f) == nil {
					frames = append(frames, f)
				}
			}
		}
	}()
	run = <-e.Working
	if _, err := e.Gateway.Cancel(adaptertest.Ctx(t), gateway.CancelRequest{User: &adaptertest.Alice, Class: adaptertest.Class, Run: run, Reason: "stop"}); err != nil {
		t.Fatal(err)
	}
	<-e.Stopped
	select {
	case frames := <-done:
		var last frame
		if len(frames) > 0 {
			last = frames[len(frames)-1]
		}
		if last.typ() != "RUN_ERROR" || last["code"] != "cancelled" || last["message"] != "the run was cancelled: stop" {
			t.Errorf("a run cancelled elsewhere ended with %v", last)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the AG-UI stream of a cancelled run did not end")
	}
}

var _ = gateway.ErrTimeout
