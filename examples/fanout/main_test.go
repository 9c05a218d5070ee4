package main

import (
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/exectest"
)

func TestReviewers(t *testing.T) {
	cases := []struct {
		aspect, text string
		pass         bool
	}{
		{"length", "one two three", false},
		{"length", "A text of ten words is long enough to pass here.", true},
		{"clarity", strings.Repeat("word ", 30) + ".", false},
		{"clarity", "Short. Clear. Sentences here.", true},
		{"tone", "BUY NOW!!!", false},
		{"tone", "A calm remark about NATS.", true},
	}
	for _, c := range cases {
		score, note := review(c.aspect, c.text)
		if (score >= passMark) != c.pass || note == "" {
			t.Errorf("%s of %q: %d (%s), pass %v", c.aspect, c.text, score, note, c.pass)
		}
	}
}

// The example runs as a process: three tasks fan out, three results fan
// in, and exactly one of the two gathering steps ends the run.
func TestFanoutExample(t *testing.T) {
	bin := exectest.Build(t)
	t.Run("approved", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env())
		if err != nil {
			t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		for name, want := range map[string]int{
			"control ReviewTask ": 3, "control ReviewResult ": 3,
			"control ReviewReport ": 1, "display ReviewReport ": 1,
		} {
			if got := strings.Count(out, name); got != want {
				t.Errorf("%q printed %d times, want %d:\n%s", name, got, want, out)
			}
		}
		if !strings.Contains(out, "review (ReviewReport): Verdict: approved. length 9/10") {
			t.Errorf("output:\n%s", out)
		}
	})
	t.Run("needs work", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env(), "-ask", "BUY NOW!!! BEST AGENTS EVER")
		if err != nil {
			t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		if !strings.Contains(out, "Verdict: needs work.") || strings.Count(out, "control ReviewReport ") != 1 {
			t.Errorf("output:\n%s", out)
		}
	})
}
