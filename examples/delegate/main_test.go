package main

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/saap-go/agent/internal/exectest"
	"github.com/saap-go/agent/internal/oispec"
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
	t.Run("trace", func(t *testing.T) {
		// An OTLP/HTTP receiver: it decodes the protobuf the exporter sends.
		rcv := &oispec.Receiver{}
		srv := httptest.NewServer(rcv)
		defer srv.Close()
		out, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env("OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL), "-trace", "-ask", "a picnic")
		if err != nil {
			t.Fatalf("exit: %v\n%s\n%s", err, out, stderr)
		}
		if want := "tracing: spans go to " + srv.URL + "/v1/traces (OTLP http/protobuf)"; !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
		spans, errs := rcv.Spans()
		if errs != nil {
			t.Fatalf("receiver: %v", errs)
		}
		byName := map[string]*tracepb.Span{}
		for _, sp := range spans {
			byName[sp.Name] = sp
			// Every span is as the OpenInference specification has it.
			for _, bad := range oispec.Check(sp) {
				t.Errorf("span %q: %s", sp.Name, bad)
			}
		}
		planner := byName["run Planner"]
		for _, name := range []string{"run Planner", "run Researcher", "run Critic", "delegate Researcher", "delegate Critic", "step Combine"} {
			sp := byName[name]
			if sp == nil {
				t.Errorf("no span %q; %d spans\nstderr:\n%s", name, len(spans), stderr)
				continue
			}
			// The delegates' runs continue the planner's trace.
			if planner != nil && string(sp.TraceId) != string(planner.TraceId) {
				t.Errorf("span %q not in the planner's trace", name)
			}
		}
		// Each delegate's run hangs under the delegation that started it.
		for _, class := range []string{"Researcher", "Critic"} {
			run, del := byName["run "+class], byName["delegate "+class]
			if run != nil && del != nil && string(run.ParentSpanId) != string(del.SpanId) {
				t.Errorf("run %s is not under the planner's delegate %s span", class, class)
			}
		}
		if planner != nil {
			in := ""
			for _, kv := range planner.Attributes {
				if kv.Key == "input.value" {
					in = kv.Value.GetStringValue()
				}
			}
			if in != "a picnic" {
				t.Errorf("planner's run span input.value %q, want the question", in)
			}
		}
	})
}
