// Package dispatch is the engine that turns arriving control events into
// step executions (spec/dispatch.md), independent of the transport: it runs
// on the interfaces of package bus and keeps shared state behind Store.
//
// # Running an engine
//
//	eng, err := dispatch.New(workflow, b, store)  // workflow from step.NewWorkflow
//	cons, err := b.Consume(ctx, bus.RunnerConsumer(workflow.Class()),
//		func(d bus.Delivery) { eng.Handle(ctx, d) })
//
// Handle processes one delivery and settles it: it acknowledges only after
// every step it started has published its outputs or recorded its failure
// (D1), sends in-progress heartbeats while user code runs, dead-letters
// messages whose subject or payload is unusable or that the run refuses, and
// Naks with a backoff
// when the store or the bus fails, so the event comes back. Handling an
// event twice is safe.
//
// # What happens to one event
//
// In the reference's order (dispatch.md §2): a StopEvent or ExceptionEvent
// (by parent chain, so unknown subclasses count) tears the run down: its
// claims, counters and run context are deleted, its history is evicted and
// an end marker ("completed" or "crashed") is kept; a second delivery only
// logs a duplicate. A StartEvent of a run not torn down resolves the
// configuration (WithConfig; the default is empty) and seeds the run context
// with the event's public fields; any other event needs the stored
// configuration, else the run ends with an ExceptionEvent saying
// ConfigMissing.
//
// # Who may send into a run
//
// A run belongs to the agent id and thread of its StartEvent: the start
// records them, once, in MarkerIdentity, together with a random secret. An
// event whose subject names the run with another agent id or thread is
// refused, and so is a second StartEvent for the run from elsewhere. A
// question the run publishes (a HITL, BITL or AITL request) is recorded as
// open before it goes out; an answer (a response, an AITL exception or a
// wait's timeout) is accepted only for an open question of the run whose
// reply topic it repeats, and closes it, so of two answers one wins.
// Refusals wrap ErrRefused; Handle dead-letters them with the reason, and
// nothing is stored or published for them. The identity is cached with the
// run's history, so checking it costs no store call while the run is cached.
//
// Then the candidates, the steps declaring the event's exact wire name
// (step.Workflow.Candidates), are judged in alphabetical order on a snapshot:
// the run's control events up to the trigger's stream sequence. Readiness
// follows §5 (availability with exact FixedList sizes, D3; max executions;
// then the precondition, whose errors fail like a step, D11); binding follows
// §6 (the trigger, else the latest by stream sequence; lists in stream order,
// D10). Events decoded through the ancestry fallback never trigger (D14).
//
// A ready step is claimed atomically under a key derived from the ids it
// binds (D2): a claim that exists and is completed is skipped; one that
// exists but was never completed (a crash mid-step) runs again as the same
// execution. Output ids are derived from (class, run, step, sorted input ids,
// output index) with a hash keyed by the run's secret (D1), so a re-run on
// any replica re-publishes the same ids, which the stream de-duplicates
// (D15), while nobody outside can compute them. A failing step publishes an ExceptionEvent
// (stop_on_error, the default) or records the failure as the claim's
// outcome. Once a run has published or received its terminal event, nothing
// more is published for it and no step starts (D4); steps still running see
// their context cancelled with ErrRunEnded.
//
// # State and memory
//
// The engine keeps nothing per run but a bounded cache of run histories
// (WithCacheSize). A history is loaded on demand from the stream
// (bus.Streams.NextMsg on the run's control subject, from the run's start
// sequence), so any replica can take any event of any run, start-up costs
// nothing (D7), and a paused run holds no goroutine and no memory.
//
// A Store holds idempotency claims, execution counters, markers and the run
// and thread contexts, all namespaced by agent class (D5). MemoryStore
// serves tests and single-process use; shared stores (NATS KV, Redis) must
// pass the conformance suite in package storetest. A store that can write
// several keys of a scope at once implements BatchSetter; the engine then
// seeds a run context from its StartEvent in one call.
//
// Tests usually drive an engine through package agenttest.
package dispatch
