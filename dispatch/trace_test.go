package dispatch_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/dispatch"
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
	h := agenttest.New(t, partial(t, "Traced", s), agenttest.WithEngineOptions(dispatch.WithTracer(tr)))
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
