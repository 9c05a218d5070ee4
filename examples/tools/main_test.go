package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/exectest"
)

// The example is built once and run as a process, as a user runs it.
func TestToolsExample(t *testing.T) {
	bin := exectest.Build(t)

	t.Run("demo", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, time.Minute, scriptedEnv())
		if err != nil {
			t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		for _, want := range []string{
			"model: scripted (scripted)",
			"display ThoughtEvent", "control LLMEvent",
			`control ToolEvent                          calculator({"expression":"(17 * 23) + 4"})`,
			`control ToolEvent                          current_time({"timezone":"Europe/Zurich"})`,
			`control ToolEvent                          search({"query":`,
			"display ChunkEvent",
			"answer (LLMStopEvent): (17 * 23) + 4 = 395. In Europe/Zurich it is ",
			"The documentation says: [NATS and JetStream] NATS is the messaging system",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("ask", func(t *testing.T) {
		out, stderr, err := exectest.Run(t, bin, time.Minute, scriptedEnv(), "-ask", "What is 2 * (3 + 4) / 0?")
		if err != nil {
			t.Fatalf("exit: %v\n%s\n%s", err, out, stderr)
		}
		// The tool's error goes back to the model, which reports it.
		if !strings.Contains(out, "answer (LLMStopEvent): The calculator tool failed (division by zero).") {
			t.Errorf("output:\n%s", out)
		}
	})
}

func TestCalculator(t *testing.T) {
	for expr, want := range map[string]string{"1+2*3": "7", "(1+2)*3": "9", "-4/2": "-2", "2.5*2": "5"} {
		got, err := Calculator().Call(context.Background(), []byte(`{"expression":"`+expr+`"}`))
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %s", expr, got, err, want)
		}
	}
	for _, bad := range []string{"", "1+", "(1", "1/0", "2x"} {
		if _, err := Eval(bad); err == nil {
			t.Errorf("Eval(%q) did not fail", bad)
		}
	}
}

// scriptedEnv keeps the scripted model: no provider is configured, even
// when the tester's environment holds API keys.
func scriptedEnv() []string {
	return exectest.Env("LLM_MODEL=", "ANTHROPIC_API_KEY=", "GEMINI_API_KEY=", "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
}
