package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/saap-go/agent/internal/exectest"
	"github.com/saap-go/agent/internal/oispec"
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

	t.Run("trace", func(t *testing.T) {
		rcv := &oispec.Receiver{}
		srv := httptest.NewServer(rcv)
		defer srv.Close()
		out, stderr, err := exectest.Run(t, bin, time.Minute, append(scriptedEnv(), "OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL),
			"-trace", "-ask", "What is 2 * (3 + 4) / 0, and what time is it in Zurich?")
		if err != nil {
			t.Fatalf("exit: %v\n%s\n%s", err, out, stderr)
		}
		spans, errs := rcv.Spans()
		if errs != nil {
			t.Fatalf("receiver: %v", errs)
		}
		kinds := map[string]int{}
		failed := 0
		var step *tracepb.Span
		for _, sp := range spans {
			kinds[oispec.Kind(sp)]++
			// Every span is as the OpenInference specification has it.
			for _, bad := range oispec.Check(sp) {
				t.Errorf("span %q: %s", sp.Name, bad)
			}
			if sp.Name == "step llm_answer" {
				step = sp
			}
		}
		for _, sp := range spans {
			if oispec.Kind(sp) != "TOOL" {
				continue
			}
			if sp.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
				failed++
			}
			// A tool's span lasts its call, within the step that made it.
			if step != nil && (sp.StartTimeUnixNano < step.StartTimeUnixNano || sp.EndTimeUnixNano > step.EndTimeUnixNano) {
				t.Errorf("TOOL span %d-%d outside its step's %d-%d", sp.StartTimeUnixNano, sp.EndTimeUnixNano,
					step.StartTimeUnixNano, step.EndTimeUnixNano)
			}
		}
		if step == nil || kinds["TOOL"] != 2 || kinds["LLM"] != 2 || failed != 1 {
			t.Errorf("step span %v, span kinds %v, %d failed tools; want 2 TOOL (1 failed) and 2 LLM spans\nstderr:\n%s",
				step != nil, kinds, failed, stderr)
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
