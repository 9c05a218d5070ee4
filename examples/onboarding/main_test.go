package main

import (
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/exectest"
)

// The example runs as a process and shows the three kinds of work: the
// agent's check, the manager's approval and the program's account.
func TestOnboardingExample(t *testing.T) {
	bin := exectest.Build(t)
	t.Run("onboarded", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env())
		if err != nil {
			t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		for _, want := range []string{
			"work_request  -> CheckDocument    agent DocChecker checks the document",
			"work          <- DocumentChecked  agent DocChecker: valid",
			"work_request  -> ApproveRequest   human with role manager approves",
			"work          <- Approval         human Mia Manager: approved",
			"work_request  -> CreateAccount    program creates an account for Ada Lovelace",
			"work          <- AccountCreated   program accounts-service: account acc-ada",
			"work          <- Onboarded        done",
			"Ada Lovelace is onboarded, account acc-ada",
		} {
			if strings.Count(out, want) != 1 {
				t.Errorf("want %q once in:\n%s", want, out)
			}
		}
	})
	t.Run("document rejected", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env(), "-document", "a selfie")
		if err != nil {
			t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		if !strings.Contains(out, `not onboarded: "a selfie" is no identity document`) || strings.Contains(out, "ApproveRequest") {
			t.Errorf("output:\n%s", out)
		}
	})
	t.Run("refused", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env(), "-refuse")
		if err != nil {
			t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		if !strings.Contains(out, "not onboarded: refused by Mia Manager") || strings.Contains(out, "CreateAccount") {
			t.Errorf("output:\n%s", out)
		}
	})
}
