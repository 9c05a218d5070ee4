package engine_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/saap-go/agent/internal/engine"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// recTracer records the names of the spans started.
type recTracer struct {
	embedded.Tracer
	mu    sync.Mutex
	names []string
}

func (r *recTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	r.mu.Lock()
	r.names = append(r.names, name)
	r.mu.Unlock()
	return noop.NewTracerProvider().Tracer("").Start(ctx, name, opts...)
}

func TestTracing(t *testing.T) {
	tr := &recTracer{}
	var stepTracer trace.Tracer
	s := step.New(func(ctx step.Context, in *In) (*Out, error) {
		stepTracer = ctx.Tracer()
		return &Out{}, nil
	}, step.Name("s"))
	h := agenttest.New(t, partial(t, "Traced", s), agenttest.WithEngineOptions(engine.WithTracer(tr)))
	h.Start(&In{})
	want := []string{"agent_runner_Traced.receive In", "agent_runner_Traced.process In", "step s",
		"agent_runner_Traced.receive Out", "agent_runner_Traced.process Out"}
	if !slices.Equal(tr.names, want) {
		t.Fatalf("spans %q, want %q", tr.names, want)
	}
	if stepTracer != tr {
		t.Fatal("Context.Tracer is not the engine's tracer")
	}
}

// errTracer's spans record the errors and attributes they get.
type errTracer struct {
	embedded.Tracer
	mu    sync.Mutex
	attrs map[string]string
	errs  []error
}

type errSpan struct {
	trace.Span
	t *errTracer
}

func (s errSpan) RecordError(err error, opts ...trace.EventOption) {
	cfg := trace.NewEventConfig(opts...)
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	s.t.errs = append(s.t.errs, err)
	for _, kv := range cfg.Attributes() {
		s.t.attrs[string(kv.Key)] = kv.Value.String()
	}
}

func (t *errTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, span := noop.NewTracerProvider().Tracer("").Start(ctx, name, opts...)
	return ctx, errSpan{Span: span, t: t}
}

// A failed step's span gets the full error, the reference the published
// message names and, for a panic, the stack.
func TestFailedStepSpan(t *testing.T) {
	tr := &errTracer{attrs: map[string]string{}}
	s := step.New(func(ctx step.Context, in *In) (*Out, error) { panic("secret value 42") }, step.Name("s"))
	h := agenttest.New(t, partial(t, "TracedFailure", s), agenttest.WithEngineOptions(engine.WithTracer(tr)))
	res := h.Start(&In{})
	exc, ok := agenttest.TerminalAs[*event.ExceptionEvent](res)
	if !ok {
		t.Fatalf("terminal %v, want an ExceptionEvent", res.Terminal())
	}
	if len(tr.errs) != 1 || !strings.Contains(tr.errs[0].Error(), "secret value 42") {
		t.Fatalf("span errors %v, want the panic", tr.errs)
	}
	if tr.attrs["error.reference"] != exc.EventID || !strings.Contains(tr.attrs["exception.stacktrace"], "TestFailedStepSpan") {
		t.Fatalf("span attributes %v, want the reference %s and the panic's stack", tr.attrs, exc.EventID)
	}
}
