package engine_test

import (
	"slices"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/semantic"
	"github.com/saap-go/agent/step"
)

// tracedHarness is a harness whose runtime traces with package semantic
// into a span recorder.
func tracedHarness(t *testing.T, w *step.Workflow) (*agenttest.Harness, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	return agenttest.New(t, w, agenttest.WithInterceptors(semantic.New(semantic.WithTracerProvider(tp)))), rec
}

// Tracing is an interceptor: each delivery gets the reference's consumer
// spans, each execution a step span, and a step's Context.Tracer starts
// spans of the same provider, under its step's span.
func TestTracing(t *testing.T) {
	s := step.New(func(ctx step.Context, in *In) (*Out, error) {
		_, span := ctx.Tracer().Start(ctx, "inside")
		span.End()
		return &Out{}, nil
	}, step.Name("s"))
	h, rec := tracedHarness(t, partial(t, "Traced", s))
	h.Start(&In{})
	var names []string
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		names = append(names, sp.Name())
		byName[sp.Name()] = sp
	}
	for _, want := range []string{"agent_runner_Traced.receive In", "agent_runner_Traced.process In", "step s",
		"agent_runner_Traced.receive Out", "agent_runner_Traced.process Out", "inside"} {
		if !slices.Contains(names, want) {
			t.Errorf("spans %q lack %q", names, want)
		}
	}
	if in, st := byName["inside"], byName["step s"]; in == nil || st == nil || in.Parent().SpanID() != st.SpanContext().SpanID() {
		t.Fatal("the step's own span does not hang under its step span")
	}
}

// A failed step's span gets the full error, the reference the published
// message names and, for a panic, the stack.
func TestFailedStepSpan(t *testing.T) {
	s := step.New(func(ctx step.Context, in *In) (*Out, error) { panic("secret value 42") }, step.Name("s"))
	h, rec := tracedHarness(t, partial(t, "TracedFailure", s))
	res := h.Start(&In{})
	exc, ok := agenttest.TerminalAs[*event.ExceptionEvent](res)
	if !ok {
		t.Fatalf("terminal %v, want an ExceptionEvent", res.Terminal())
	}
	var step sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == "step s" {
			step = sp
		}
	}
	if step == nil {
		t.Fatal("no step span")
	}
	attrs := map[string]string{}
	var errs []string
	for _, ev := range step.Events() {
		for _, kv := range ev.Attributes {
			attrs[string(kv.Key)] = kv.Value.String()
			if kv.Key == "exception.message" {
				errs = append(errs, kv.Value.String())
			}
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "secret value 42") {
		t.Fatalf("span errors %v, want the panic", errs)
	}
	if attrs["error.reference"] != exc.EventID || !strings.Contains(attrs["exception.stacktrace"], "TestFailedStepSpan") {
		t.Fatalf("span attributes %v, want the reference %s and the panic's stack", attrs, exc.EventID)
	}
}
