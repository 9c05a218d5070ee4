// Package agenttest runs agents and single steps in tests, as
// net/http/httptest runs handlers: on a manual in-memory bus and an
// in-memory store, with the real dispatch engine, deterministically (no
// sleeps, no wall clock: ids and created_at come from the harness, and
// every call runs the agent to quiescence in the test's goroutine).
//
//	h := agenttest.New(t, workflow)        // workflow from step.NewWorkflow
//	res := h.Start(&event.StartEvent{})     // a fresh run, run to quiescence
//	agenttest.Equal(t, res.Names(), []string{"StartEvent", "A", "StopEvent"})
//	agenttest.Equal(t, res.Executions(), []agenttest.Execution{
//		{Step: "s1", Inputs: res.IDs("StartEvent")},
//		{Step: "s2", Inputs: res.IDs("A")},
//	})
//	res.Terminal()                          // the StopEvent
//	h.Send(res, answer)                     // e.g. a HITL response into the waiting run
//
// A Result lists the events published for the run (Events, Control,
// Display, in publish order), the terminal event, counts per event type,
// which step ran with which input event ids (Executions), teardowns and
// outputs dropped under D4, and the messages naming the run that the engine
// dead-lettered (DeadLetters; SendOn sends on a subject of your choosing,
// e.g. another thread, to test that the run refuses it). Equal prints a
// go-cmp diff on failure.
//
// One step alone: NewStep(t, s) wraps it in a partial workflow, and Start
// accepts any control event (the run gets an empty configuration, as if a
// start step had run). Failure paths: Redeliver hands a stored event to the
// engine again, as JetStream redelivers; SendRaw publishes a raw payload
// (unknown event types, duplicate copies); Advance moves the bus's clock so
// Nak'ed events come back; WithStore runs on another dispatch.Store;
// Concurrent runs the ready steps of a trigger in parallel, as in
// production.
package agenttest
