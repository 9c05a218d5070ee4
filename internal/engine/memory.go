package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// delegateMemory sends the start event of a MemoryStorageRequestedEvent,
// just published into the caller's run as a marker, to the memory-writer
// agent it names, as the reference does: fire and forget, on fresh thread,
// display and run ids, by JetStream, in a trace of its own (a new root
// span linked to the caller's), so the writer's work does not extend the
// caller's trace. Nothing comes back into the caller's run.
//
// The ids derive from the marker's event id, which is the same for every
// execution of the step with the same inputs: a marker published again
// after a crash sends the same start event, which the stream's duplicate
// window drops.
func (e *Engine) delegateMemory(ctx context.Context, caller topic.Agent, marker event.Event) {
	m, ok := marker.(*event.MemoryStorageRequestedEvent)
	if !ok {
		data, err := event.Marshal(marker)
		if err == nil {
			m, err = event.UnmarshalAs[event.MemoryStorageRequestedEvent](data)
		}
		if err != nil {
			e.log.WarnContext(ctx, "dispatch: memory delegation: cannot read the marker", "run_id", caller.Run, "error", err)
			return
		}
	}
	if m.StartEvent == nil || m.TargetAgentClass == "" || m.TargetAgentID == "" {
		e.log.WarnContext(ctx, "dispatch: memory delegation: the marker names no start event or target agent",
			"run_id", caller.Run, "event_id", m.EventID)
		return
	}
	start := event.Clone(m.StartEvent)
	markerID := marker.EventBase().EventID
	b := start.EventBase()
	b.EventID = derivedID(markerID, "event")
	if b.CreatedAt == 0 {
		b.CreatedAt = e.now().UnixNano()
	}
	to := topic.Agent{Class: m.TargetAgentClass, ID: m.TargetAgentID, Thread: derivedID(markerID, "thread"),
		Display: derivedID(markerID, "display"), Run: derivedID(markerID, "run"),
		Type: topic.Control, Name: event.Name(start), EventID: b.EventID}
	subj, err := to.Subject()
	if err != nil {
		e.log.WarnContext(ctx, "dispatch: memory delegation: bad target", "run_id", caller.Run,
			"target_class", m.TargetAgentClass, "target_id", m.TargetAgentID, "error", err)
		return
	}
	data, err := event.Marshal(start)
	if err != nil {
		e.log.WarnContext(ctx, "dispatch: memory delegation: cannot encode the start event", "run_id", caller.Run, "error", err)
		return
	}
	// A detached context: the caller's span and baggage stay behind, the
	// new root span only links to the caller's.
	link := trace.LinkFromContext(ctx, attribute.String("saap.link", "memory delegation caller"))
	dctx := trace.ContextWithSpanContext(baggage.ContextWithoutBaggage(ctx), trace.SpanContext{})
	if sp := trace.SpanFromContext(ctx); sp.SpanContext().IsValid() {
		var span trace.Span
		dctx, span = sp.TracerProvider().Tracer(tracerName).Start(dctx, "memory delegation "+m.TargetAgentClass,
			trace.WithNewRoot(), trace.WithLinks(link), trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(attribute.String("saap.caller.run_id", caller.Run), attribute.String("saap.target.run_id", to.Run)))
		defer span.End()
	}
	if _, err := e.bus.PublishStream(dctx, &bus.Msg{Subject: subj, Data: data}, b.EventID); err != nil {
		// Fire and forget, as in the reference: the caller's run goes on.
		e.log.WarnContext(ctx, "dispatch: memory delegation: the start event could not be sent", "run_id", caller.Run,
			"target_class", m.TargetAgentClass, "subject", subj, "error", err)
		return
	}
	e.log.DebugContext(ctx, "dispatch: memory delegated", "run_id", caller.Run, "target_class", m.TargetAgentClass, "target_run_id", to.Run)
}

// derivedID is a 24-hex id derived from id and purpose: the same inputs
// give the same id. It keeps the leading timestamp of an ObjectId.
func derivedID(id, purpose string) string {
	sum := sha256.Sum256([]byte(purpose + "\x00" + id))
	h := hex.EncodeToString(sum[:12])
	if event.IsObjectID(id) {
		return id[:8] + h[:16]
	}
	return h
}
