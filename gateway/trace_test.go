package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/semantic"
	"github.com/saap-go/agent/step"
)

// A request with a W3C traceparent starts a run that continues the
// caller's trace: the run span is the caller's span's child. A tracestate
// entry under the SDK's key does not pass; the caller's others do.
func testCallerTraceContinues(t *testing.T, nb newBusFunc) {
	b := nb(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	class := "Traced" + bustest.Unique()
	engineAgent(t, b, workflow(t, class, func(step.Context, *event.UserMessageEvent) (*event.StopEvent, error) {
		return &event.StopEvent{}, nil
	}), engine.WithInterceptors(semantic.New(semantic.WithTracerProvider(tp))))
	gw, err := gateway.New(gateway.Config{Bus: b, Auth: gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice}),
		DiscoveryWindow: 10 * time.Second, RateLimit: -1, AuthFailureRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gw.Discover(ctxTimeout(t), class); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	path := "/agents/" + class + "/dev/UserMessageEvent"

	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	resp := post(t, srv, tokenAlice, path, msgs, "traceparent", caller, "tracestate", "saap=00f067aa0ba902b7-deadbeef,congo=t61rcWkgMzE")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("traced request: %d %v", resp.StatusCode, decodeJSON(t, resp.Body))
	}
	// Without one, the run is a trace of its own.
	if resp := post(t, srv, tokenAlice, path, msgs); resp.StatusCode != http.StatusOK {
		t.Fatalf("untraced request: %d %v", resp.StatusCode, decodeJSON(t, resp.Body))
	}
	// The run span starts before its step runs, which is before the answer
	// came back.
	var runs []sdktrace.ReadOnlySpan
	for _, s := range rec.Started() {
		if s.Name() == "run "+class {
			runs = append(runs, s)
		}
	}
	if len(runs) != 2 {
		t.Fatalf("%d run spans, want 2", len(runs))
	}
	traced, untraced := runs[0], runs[1]
	if got := traced.SpanContext().TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("run span trace id %s, want the caller's", got)
	}
	if p := traced.Parent(); p.SpanID().String() != "00f067aa0ba902b7" || !p.IsRemote() {
		t.Errorf("run span parent %s (remote %v), want the caller's span 00f067aa0ba902b7", p.SpanID(), p.IsRemote())
	}
	ts := traced.SpanContext().TraceState()
	if ts.Get("congo") != "t61rcWkgMzE" || strings.Contains(ts.Get("saap"), "deadbeef") {
		t.Errorf("run span trace state %q, want the caller's congo entry and not its saap one", ts.String())
	}
	if p := untraced.Parent(); p.IsValid() || untraced.SpanContext().TraceID() == traced.SpanContext().TraceID() {
		t.Errorf("untraced run: parent %v, trace %s; want a root span in a trace of its own", p.SpanID(), untraced.SpanContext().TraceID())
	}
}
