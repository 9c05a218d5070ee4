package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	agent "github.com/saap-go/agent"
)

// endNotifier tells when spans matching a condition have ended.
type endNotifier struct {
	mu    sync.Mutex
	ended []sdktrace.ReadOnlySpan
	wake  chan struct{}
}

func (n *endNotifier) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (n *endNotifier) OnEnd(s sdktrace.ReadOnlySpan) {
	n.mu.Lock()
	n.ended = append(n.ended, s)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}
func (n *endNotifier) Shutdown(context.Context) error   { return nil }
func (n *endNotifier) ForceFlush(context.Context) error { return nil }

// await returns the ended spans once every name in names has ended.
func (n *endNotifier) await(t *testing.T, names ...string) []sdktrace.ReadOnlySpan {
	t.Helper()
	timeout := time.After(waitLong)
	for {
		n.mu.Lock()
		spans := append([]sdktrace.ReadOnlySpan(nil), n.ended...)
		n.mu.Unlock()
		missing := ""
		for _, name := range names {
			found := false
			for _, s := range spans {
				found = found || s.Name() == name
			}
			if !found {
				missing = name
				break
			}
		}
		if missing == "" {
			return spans
		}
		select {
		case <-n.wake:
		case <-timeout:
			t.Fatalf("span %q never ended; ended: %d spans", missing, len(spans))
		}
	}
}

// An AITL delegation across two runners on NATS is one trace: the gateway's
// request, the caller's run, the delegate's run under the caller's
// delegate span (in its step), and the caller's next step back under the
// caller's run.
func TestTracingAITLOneTrace(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	rec := &endNotifier{wake: make(chan struct{}, 1)}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	caller, worker := uniqueClass("TracedBoss"), uniqueClass("TracedWorker")
	store := storeFor(t, target{natsURL: s.URL()}, c)
	startRunner(t, &doubler{class: worker}, agent.WithNATS(s.URL()), agent.Standalone(), store, agent.WithTracerProvider(tp), quiet(t))
	startRunner(t, &orchestrator{class: caller, worker: worker}, agent.WithNATS(s.URL()), agent.Standalone(), store,
		agent.WithTracerProvider(tp), quiet(t))
	w := watch(t, c, caller)

	ctx, gw := tp.Tracer("gateway").Start(context.Background(), "gateway request")
	run := newRun(caller, "boss")
	if err := publishErr(ctx, c, run, userMessage("8"), nil); err != nil {
		t.Fatal(err)
	}
	gw.End()
	if res, evs := aitlOutcome(t, c, w, run); res.Value != 16 {
		t.Fatalf("Result(%d), want 16; events %s", res.Value, names(evs))
	}
	spans := rec.await(t, "run "+caller, "run "+worker, "step Ask", "delegate "+worker, "step Done", "step Double")

	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	one := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range spans {
		byID[sp.SpanContext().SpanID()] = sp
		one[sp.Name()] = sp
		if sp.SpanContext().TraceID() != gw.SpanContext().TraceID() {
			t.Errorf("span %q in trace %s, want the gateway's %s", sp.Name(), sp.SpanContext().TraceID(), gw.SpanContext().TraceID())
		}
	}
	// runOf is the nearest run span above sp; path lists the way up.
	runOf := func(sp sdktrace.ReadOnlySpan) (string, string) {
		var path []string
		for p := byID[sp.Parent().SpanID()]; p != nil; p = byID[p.Parent().SpanID()] {
			path = append(path, p.Name())
			if strings.HasPrefix(p.Name(), "run ") {
				return p.Name(), strings.Join(path, " < ")
			}
		}
		return "", strings.Join(path, " < ")
	}
	callerRun, workerRun := one["run "+caller], one["run "+worker]
	if callerRun.Parent().SpanID() != gw.SpanContext().SpanID() {
		t.Errorf("the caller's run span is not under the gateway's request")
	}
	if r, path := runOf(workerRun); r != "run "+caller {
		t.Errorf("the delegate's run is under %q, want the caller's run; path %s", r, path)
	}
	// It hangs under the delegation that started it.
	if d := one["delegate "+worker]; d == nil || workerRun.Parent().SpanID() != d.SpanContext().SpanID() {
		_, path := runOf(workerRun)
		t.Errorf("the delegate's run is not under the caller's delegate %s span; path %s", worker, path)
	}
	if r, path := runOf(one["step Double"]); r != "run "+worker {
		t.Errorf("the delegate's step is under %q; path %s", r, path)
	}
	if d := one["delegate "+worker]; d == nil || d.Parent().SpanID() != one["step Ask"].SpanContext().SpanID() {
		t.Errorf("no delegation span under the caller's step Ask: %v", d)
	}
	for _, name := range []string{"step Ask", "step Done"} {
		if r, path := runOf(one[name]); r != "run "+caller {
			t.Errorf("%s is under %q, want the caller's run; path %s", name, r, path)
		}
	}
}
