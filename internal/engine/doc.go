// Package dispatch is the engine that turns arriving control events into
// step executions, independent of the transport: it runs on the interfaces
// of package bus and keeps shared state behind store.Store.
//
// # Running an engine
//
//	eng, err := engine.New(workflow, b, store)  // workflow from step.NewWorkflow
//	cons, err := b.Consume(ctx, bus.RunnerConsumer(workflow.Class()),
//		func(d bus.Delivery) { eng.Handle(ctx, d) })
//
// Handle processes one delivery and settles it: it acknowledges only after
// every step it started has published its outputs or recorded its failure,
// sends in-progress heartbeats while user code runs, dead-letters messages
// whose subject or payload is unusable or that the run refuses, and Naks with a backoff
// when the store or the bus fails, so the event comes back, for as long as
// the outage budget lasts (WithOutageBudget). A permanent failure
// (IsPermanent), or a transient one past the budget, ends the run with an
// ExceptionEvent and dead-letters the event. Handling an event twice is
// safe: a step's outputs are kept with its claim until they are published,
// so a redelivery publishes them instead of running the step again, and
// skips those the stream already holds (bus.Streams.HasSubject). Give the
// runner consumer MaxDeliver -1, or tell the engine its MaxDeliver
// (WithMaxDeliver), so the server never drops a failing event in silence.
//
// # What happens to one event
//
// In the reference's order: a StopEvent or ExceptionEvent (by parent
// chain, so unknown subclasses count) tears the run down: its
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
// # Timeouts of questions
//
// A question may carry a timeout (QuestionTimeout: the timeout_seconds of
// an AgentInTheLoopRequestEvent, an extra timeout_seconds member of a HITL
// or BITL request). Before it is published, its deadline is recorded in
// the store, counted from its created_at, next to the open question. The
// engine's scheduler (StartTimeouts) serves every deadline of the class
// with one timer; when one passes without an answer it publishes the
// matching timeout event (HumanInTheLoopTimeoutEvent,
// BotInTheLoopTimeoutEvent, AgentInTheLoopTimeoutEvent) into the run, with
// an id derived from the request, so that replicas firing the same
// deadline store one event. The timeout is an answer like any other: the
// first of answer and timeout closes the question, and an accepted answer
// removes the deadline. A restarted engine lists the pending deadlines
// (their keys only) and goes on.
//
// Then the candidates, the steps declaring the event's exact wire name
// (step.Workflow.Candidates), are judged in alphabetical order on a snapshot:
// the run's control events up to the trigger's stream sequence. A step is
// ready when its inputs are available (a fixed-size list needs exactly its
// size), its execution cap is not reached and its precondition holds (a
// precondition's error fails like a step's). Parameters bind the trigger,
// else the latest event of the type by stream sequence; lists are in stream
// order, never in created_at order. Events decoded through the ancestry
// fallback never trigger. docs/compatibility.md in the repository says
// where and why this differs from the Python platform.
//
// Each execution has a claim under a key derived from the ids it binds. On
// the first delivery of its trigger a step without an execution cap runs
// first, and then one store.Store.Record writes its claim completed, with its
// encoded outputs kept in it, before they are published: one store write
// per step. A crash before the record leaves nothing, and the redelivery
// runs the step again; a record another execution wrote first wins, and
// its outputs are published instead. A step with a cap, and any step on a
// redelivery, is claimed atomically before it runs: a claim that exists and
// is completed is skipped (its kept outputs published if any); one that
// exists but was never completed (a crash mid-step) runs again as the same
// execution. Output ids are derived from (class, run, step, sorted input ids,
// output index) with a hash keyed by the run's secret, so a re-run on
// any replica re-publishes the same ids, which the stream de-duplicates,
// while nobody outside can compute them. A failing step publishes an ExceptionEvent
// (stop_on_error, the default) or records the failure as the claim's
// outcome. Once a run has published or received its terminal event, nothing
// more is published for it and no step starts; steps still running see
// their context cancelled with ErrRunEnded.
//
// # State and memory
//
// The engine keeps nothing per run but a bounded cache of run histories
// (WithCacheSize). A history is loaded on demand from the stream
// (bus.Streams.NextMsg on the run's control subject, from the run's start
// sequence), so any replica can take any event of any run, start-up costs
// nothing, and a paused run holds no goroutine and no memory.
//
// A store.Store holds idempotency claims, execution counters, markers and the run
// and thread contexts, all namespaced by agent class. A store that can
// watch markers (store.Watcher: the in-memory and KV stores) spares the
// terminal-marker read per event: the engine reads a run's marker once and
// is told by the watch when it is set. memstore.Store
// serves tests and single-process use; shared stores (NATS KV, Redis) must
// pass the conformance suite in package storetest. A store that can write
// several keys of a scope at once implements store.Contexts; the engine then
// seeds a run context from its StartEvent in one call.
//
// Tests usually drive an engine through package agenttest.
package engine
