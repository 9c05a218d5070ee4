package agent_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/config"
	"github.com/saap-go/agent/event"
)

// recordingProvider records the names of the spans started through it.
type recordingProvider struct {
	noop.TracerProvider
	mu    sync.Mutex
	spans []string
}

func (p *recordingProvider) Tracer(string, ...trace.TracerOption) trace.Tracer {
	return recordingTracer{p: p}
}

func (p *recordingProvider) names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.spans)
}

type recordingTracer struct {
	noop.Tracer
	p *recordingProvider
}

func (t recordingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t.p.mu.Lock()
	t.p.spans = append(t.p.spans, name)
	t.p.mu.Unlock()
	return t.Tracer.Start(ctx, name, opts...)
}

func TestWithTracerProviderTracesSteps(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("Traced")
	w := watch(t, c, class)
	tp := &recordingProvider{}
	startRunner(t, &linear{class: class}, agent.WithNATS(s.URL()), agent.Standalone(), agent.WithTracerProvider(tp), quiet(t))
	run := newRun(class, "t")
	publish(t, c, run, userMessage("hi"), nil)
	w.terminal(t, run.Run)
	got := tp.names()
	for _, want := range []string{"Ask", "Answer", "Finish"} {
		if !slices.ContainsFunc(got, func(n string) bool { return strings.Contains(n, want) }) {
			t.Errorf("no span for step %s; spans %v", want, got)
		}
	}
}

// TestConfigFailuresEndRun: no config responder, an error reply in the
// reference's {"error","error_type"} shape and found:false each end the run
// with one ExceptionEvent.
func TestConfigFailuresEndRun(t *testing.T) {
	cases := []struct {
		name  string
		reply func(config.Request) any // nil: no responder
		want  string
	}{
		{"no responders", nil, "no responders"},
		{"error reply", func(config.Request) any {
			return map[string]any{"error": "database down", "error_type": "ConnectionError"}
		}, "ConnectionError"},
		{"not found", func(req config.Request) any {
			return map[string]any{"agent_class": req.AgentClass, "agent_id": req.AgentID, "config": nil, "found": false, "error": "no such profile"}
		}, "not found"},
	}
	s := embedded(t)
	c := client(t, s.URL())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			class := uniqueClass("CfgFail")
			if tc.reply != nil {
				respondConfig(t, c, class, tc.reply)
			}
			w := watch(t, c, class)
			startRunner(t, &configured{linear{class: class}}, agent.WithNATS(s.URL()), quiet(t))
			run := newRun(class, "wiki")
			publish(t, c, run, userMessage("hi"), nil)
			exc, ok := w.terminal(t, run.Run).(*event.ExceptionEvent)
			if !ok {
				t.Fatalf("terminal %s, want an ExceptionEvent", names(w.of(run.Run)))
			}
			if !strings.Contains(exc.Message, tc.want) || !strings.Contains(exc.Message, class+"/wiki") {
				t.Errorf("message %q, want it to name the instance and %q", exc.Message, tc.want)
			}
			if n := count(controlEvents(t, c, class, run.Run), "Asked"); n != 0 {
				t.Errorf("%d steps ran without a configuration", n)
			}
		})
	}
}
