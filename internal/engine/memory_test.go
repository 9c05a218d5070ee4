package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/semantic"
	memstore "github.com/saap-go/agent/store/memory"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// idTracer makes spans with real ids (a child keeps its parent's trace id,
// a new root gets a fresh one) and records how each was started.

// TestMemoryDelegation: a step's MemoryStorageRequestedEvent is published
// into the caller's run, and its start event goes by JetStream to the
// writer agent on fresh thread, display and run ids, in a trace of its own
// whose root span links to the caller's.
func TestMemoryDelegation(t *testing.T) {
	b := bustest.NewNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	class, writer := "Chatty"+bustest.Unique(), "MemoryWriter"+bustest.Unique()
	for _, c := range []string{class, writer} {
		if err := b.EnsureStream(ctx, bus.AgentStream(c)); err != nil {
			t.Fatal(err)
		}
	}
	remember := step.New(func(ctx step.Context, m *event.UserMessageEvent) ([]event.Event, error) {
		r, err := hitl.StoreMemory(ctx.Run(), hitl.MemoryWriter{Class: writer, ID: "writer"}, m.User, m.Messages)
		if err != nil {
			return nil, err
		}
		return []event.Event{r, &event.StopEvent{}}, nil
	}, step.Name("Remember"), step.Emits((*event.MemoryStorageRequestedEvent)(nil), (*event.StopEvent)(nil)))
	w, err := step.NewWorkflow(class, remember)
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	eng, err := engine.New(w, b, memstore.New(), engine.WithHeartbeat(0),
		engine.WithInterceptors(semantic.New(semantic.WithTracerProvider(tp))))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	cons, err := b.Consume(ctx, bus.RunnerConsumer(class), func(d bus.Delivery) { eng.Handle(ctx, d) })
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Stop()

	got := make(chan *bus.Msg, 4)
	marker := make(chan *bus.Msg, 4)
	for pattern, ch := range map[string]chan *bus.Msg{
		"agent." + writer + ".>": got,
		"agent." + class + ".*.*.*.*.control_event.MemoryStorageRequestedEvent.*": marker,
	} {
		sub, err := b.Subscribe(ctx, pattern, "", func(m *bus.Msg) { ch <- m })
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
	}

	caller := topic.Agent{Class: class, ID: "dev", Thread: event.NewID(), Display: event.NewID(), Run: event.NewID()}
	start := event.New[event.UserMessageEvent]()
	start.User = &event.UserIdentity{ID: "ada", Name: "Ada", Email: "ada@example.com", Roles: []string{}}
	start.Messages = []event.ChatMessage{}
	event.Stamp(start)
	callerTrace := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: callerTrace, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled})
	if _, err := bus.PublishEvent(trace.ContextWithSpanContext(ctx, parent), b, caller, start, nil); err != nil {
		t.Fatal(err)
	}

	var m *bus.Msg
	select {
	case m = <-got:
	case <-ctx.Done():
		t.Fatal("the writer agent got no start event")
	}
	at, err := topic.ParseAgent(m.Subject)
	if err != nil {
		t.Fatal(err)
	}
	if at.ID != "writer" || at.Type != topic.Control || at.Name != "StoreUserMemoryRequestedEvent" {
		t.Errorf("delegated on %s", m.Subject)
	}
	for name, id := range map[string]string{"thread": at.Thread, "display": at.Display, "run": at.Run} {
		if !event.IsObjectID(id) || id == caller.Thread || id == caller.Display || id == caller.Run {
			t.Errorf("%s id %q: want a fresh 24-hex id", name, id)
		}
	}
	var payload struct {
		EventID        string `json:"event_id"`
		OriginThreadID string `json:"origin_thread_id"`
		User           struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	if err := json.Unmarshal(m.Data, &payload); err != nil {
		t.Fatal(err)
	}
	if payload.EventID != at.EventID || payload.User.ID != "ada" || payload.OriginThreadID != caller.Thread {
		t.Errorf("start event %s on %s", m.Data, m.Subject)
	}
	select {
	case <-marker:
	case <-ctx.Done():
		t.Fatal("the marker was not published into the caller's run")
	}

	// A trace of its own: the header names another trace, whose root span
	// links to the caller's trace.
	sc := trace.SpanContextFromContext(bus.ExtractTrace(context.Background(), m.Header))
	if !sc.IsValid() || sc.TraceID() == callerTrace {
		t.Errorf("delegation trace %v: want a valid trace other than the caller's %v", sc.TraceID(), callerTrace)
	}
	// The handling that delegated has returned once the consumer stopped.
	if err := cons.Stop(); err != nil {
		t.Fatal(err)
	}
	var span sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == "memory delegation "+writer {
			span = sp
		}
	}
	if span == nil || span.Parent().IsValid() || len(span.Links()) != 1 || span.Links()[0].SpanContext.TraceID() != callerTrace {
		t.Errorf("delegation span %v: want a new root linked to the caller's trace", span)
	}
	select {
	case extra := <-got:
		t.Errorf("a second delegation: %s", extra.Subject)
	default:
	}
}
