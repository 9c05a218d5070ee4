package main

import (
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/exectest"
)

// The example runs as a process: the planner delegates to two agents at
// once and combines both answers, or, with -slow, one answer and one
// timeout.
func TestDelegateExample(t *testing.T) {
	bin := exectest.Build(t)
	t.Run("both answer", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env(), "-ask", "a picnic")
		if err != nil {
			t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		for line, want := range map[string]int{
			"Planner    AgentInTheLoopRequestEvent": 2, "Planner    AgentInTheLoopResponseEvent": 2,
			"Researcher Answer": 1, "Critic     Answer": 1, "Planner    Plan": 1,
		} {
			if got := strings.Count(out, line); got != want {
				t.Errorf("%q printed %d times, want %d:\n%s", line, got, want, out)
			}
		}
		if !strings.Contains(out, `plan: Researcher: three facts about "a picnic". Critic: one risk in "a picnic".`) {
			t.Errorf("output:\n%s", out)
		}
	})
	t.Run("slow critic", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env(), "-ask", "a picnic", "-slow", "-timeout", "300ms")
		if err != nil {
			t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		if !strings.Contains(out, `plan: Researcher: three facts about "a picnic". Critic: no answer within 0.3s.`) ||
			strings.Count(out, "Planner    AgentInTheLoopResponseEvent") != 1 || strings.Contains(out, "Critic     Answer") {
			t.Errorf("output:\n%s", out)
		}
	})
}
