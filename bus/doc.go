// Package bus is the SDK's transport: small interfaces over NATS core and
// JetStream, with two implementations that pass one conformance suite —
// natsbus (a real server; the embedded one by default) and memory (in
// process, optionally driven step by step from a test).
//
// The protocol's two tiers map onto the interfaces: control events are
// stored with StreamPublisher.PublishStream (msg id = event_id, so the
// stream drops a re-published copy) and consumed by durable consumers
// (Streams.Consume) that acknowledge after handling (see
// https://github.com/saap-go/agent/blob/main/docs/durability.md); display events go over core NATS (Publisher,
// Subscriber). PublishEvent does that routing for an event:
//
//	ack, err := bus.PublishEvent(ctx, b, topic.Agent{Class: "RAGAgent", ID: "wiki",
//		Thread: thread, Display: display, Run: run}, stop, nil)
//
// A runner consumes its class's control events with the reference's
// settings, decoding and settling through HandleEvents:
//
//	_ = b.EnsureStream(ctx, bus.AgentStream("RAGAgent"))
//	c, err := b.Consume(ctx, bus.RunnerConsumer("RAGAgent"), bus.HandleEvents(ctx, handle))
//
// A Delivery is settled once: Ack, Nak (redeliver, after a delay),
// Term (drop) or DeadLetter (terminate and keep a copy on the dead-letter
// subject "deadletter.<original subject>", captured by "deadletter_stream",
// with the headers Saap-Deadletter-Reason, -Subject, -Stream, -Seq and
// -Deliveries). InProgress holds off the ack wait while work goes on.
// Nothing that cannot be handled is dropped silently.
//
// Subjects follow NATS rules (Match, ValidateSubject): a published literal
// "*" token is matched only by "*" or ">" in a pattern. Invalid subjects
// and payloads over the server's max_payload are refused before any I/O
// with ErrInvalidSubject and ErrPayloadTooLarge (a *PayloadError naming the
// limit).
//
// Headers carry W3C trace context (traceparent, tracestate, baggage, keys
// lower-case) through the OTel propagator API — both buses inject the
// context of every publish and request; handlers call ExtractTrace — and
// pass X-AIHub-* headers through (AIHubHeaders, CopyAIHubHeaders).
//
// Request/reply treats a typed error reply (RespondError) and the
// reference's {"error","error_type"} body alike, as a *RemoteError.
//
// NextMsg reads a stream by subject filter in one round trip: the
// dispatcher loads a run's history on demand with it.
package bus
