package a2a_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// rpc posts one JSON-RPC request as the user of token and returns the
// response's data lines (one for a plain answer, one per event of a stream).
func rpc(t *testing.T, e *env, token, method, params string) []map[string]any {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	req, err := http.NewRequestWithContext(ctxTimeout(t), http.MethodPost, e.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	for sc.Scan() {
		line := sc.Text()
		if stream {
			var ok bool
			if line, ok = strings.CutPrefix(line, "data: "); !ok {
				continue
			}
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: not JSON: %s", method, line)
		}
		out = append(out, m)
	}
	return out
}

func result(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result: %v", m)
	}
	return r
}

// The v1.0 method names take and give the v1.0 shapes: enum roles and
// states, parts without a kind, results wrapped by what they are.
func TestV1Methods(t *testing.T) {
	e := newEnv(t)
	msg := `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"world"}]}}`
	res := rpc(t, e, tokenAlice, "SendMessage", msg)
	if len(res) != 1 {
		t.Fatalf("SendMessage: %v", res)
	}
	task, ok := result(t, res[0])["task"].(map[string]any)
	if !ok {
		t.Fatalf("SendMessage result %v: want {task: ...}", res[0])
	}
	status := task["status"].(map[string]any)
	if status["state"] != "TASK_STATE_COMPLETED" || task["kind"] != nil {
		t.Fatalf("task %v", task)
	}
	part := task["artifacts"].([]any)[0].(map[string]any)["parts"].([]any)[0].(map[string]any)
	if part["text"] != "Hello, world" || part["kind"] != nil {
		t.Fatalf("artifact part %v", part)
	}
	got := result(t, rpc(t, e, tokenAlice, "GetTask", `{"id":"`+task["id"].(string)+`"}`)[0])
	if got["id"] != task["id"] || got["status"].(map[string]any)["state"] != "TASK_STATE_COMPLETED" {
		t.Fatalf("GetTask: %v", got)
	}
	if hist := got["history"].([]any); hist[0].(map[string]any)["role"] != "ROLE_USER" {
		t.Errorf("history %v: want ROLE_USER", hist)
	}

	events := rpc(t, e, tokenAlice, "SendStreamingMessage", strings.Replace(msg, "world", "ask", 1))
	var kinds []string
	for _, ev := range events {
		for k := range result(t, ev) {
			kinds = append(kinds, k)
		}
	}
	last := result(t, events[len(events)-1])["statusUpdate"].(map[string]any)
	if kinds[0] != "statusUpdate" || last["status"].(map[string]any)["state"] != "TASK_STATE_INPUT_REQUIRED" || last["final"] != nil {
		t.Fatalf("stream kinds %v, last %v", kinds, last)
	}
	// Another user's GetTask is refused like an unknown id.
	bob := rpc(t, e, tokenBob, "GetTask", `{"id":"`+last["taskId"].(string)+`"}`)
	if errObj, ok := bob[0]["error"].(map[string]any); !ok || errObj["code"] != float64(-32001) {
		t.Fatalf("bob GetTask: %v, want error -32001 (task not found)", bob)
	}
}
