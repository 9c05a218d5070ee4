package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/exectest"
)

// The example is built once and run as a process, as a user runs it.
func TestApprovalExample(t *testing.T) {
	bin := exectest.Build(t)

	t.Run("demo", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, 2*time.Minute, exectest.Env(), "-wait", "1s")
		if err != nil {
			t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		for _, want := range []string{
			`decision (ExpenseDecided): approved automatically: CHF 80.00`,
			"control HumanInTheLoopConfirmationRequestEvent",
			`decision (ExpenseDecided): approved by the approver`,
			`decision (ExpenseDecided): rejected by the approver`,
			"control HumanInTheLoopTimeoutEvent",
			"decision (ExpenseDecided): escalated to finance: the approver did not answer within 1s",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if n := strings.Count(out, "control HumanInTheLoopTimeoutEvent"); n != 1 {
			t.Errorf("%d timeout events, want exactly one (for the unanswered claim)", n)
		}
	})

	t.Run("serve", func(t *testing.T) {
		p := exectest.Start(t, bin, exectest.Env(), "-serve", "127.0.0.1:0")
		line := p.WaitLine(t, "gateway listening on ", time.Minute)
		base := strings.Fields(strings.TrimPrefix(line, "gateway listening on "))[0]
		post := func(path, body string) (int, map[string]any) {
			t.Helper()
			resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, raw)
			}
			return resp.StatusCode, m
		}
		// The README's curl lines.
		st, question := post("/agents/ExpenseAgent/demo/ExpenseClaim", `{"description":"Team dinner","amount":1200}`)
		if st != http.StatusOK || question["_event_name"] != "HumanInTheLoopConfirmationRequestEvent" {
			t.Fatalf("claim: %d %v, want the confirmation question", st, question)
		}
		q, _ := json.Marshal(question)
		answer := `{"response":true,"request_event":` + string(q) + `}`
		st, decided := post("/agents/ExpenseAgent/demo/HumanInTheLoopConfirmationResponseEvent", answer)
		if st != http.StatusOK || decided["_event_name"] != "ExpenseDecided" || decided["decision"] != "approved" {
			t.Fatalf("answer: %d %v, want the approval", st, decided)
		}
		st, again := post("/agents/ExpenseAgent/demo/HumanInTheLoopConfirmationResponseEvent", answer)
		if st != http.StatusConflict || !strings.Contains(again["detail"].(string), "already answered") {
			t.Errorf("second answer: %d %v, want 409", st, again)
		}
		p.Signal(t, syscall.SIGTERM)
		if err := p.Wait(t, time.Minute); err != nil {
			t.Fatalf("exit after SIGTERM: %v\nstderr:\n%s", err, p.Stderr())
		}
	})
}
