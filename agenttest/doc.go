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
//	stop, ok := agenttest.TerminalAs[*event.StopEvent](res)
//	h.Send(res, answer)                     // e.g. a HITL response into the waiting run
//
// A Result lists the events published for the run (Events, Control,
// Display, in publish order), the terminal event (TerminalAs gives it
// typed), counts per event type, which step ran with which input event ids
// and on which trigger (Executions), teardowns and outputs dropped after
// the run's terminal event, and the messages naming the run that the engine
// dead-lettered (DeadLetters; SendOn sends on a subject of your choosing,
// e.g. another thread, to test that the run refuses it). Equal prints a go-cmp diff on failure.
//
// A run that goes quiet without a terminal event or an open request hangs
// in production; Stalled says which steps wait for which inputs, and the
// FailOnStall option fails the test with that report. Stub replaces a
// step's function (type-checked against the step's) to test an agent
// without the services its steps call. Order and Shuffle choose the order
// in which pending control events reach the engine, for the interleavings
// of a parallel consumer.
//
// One step alone: NewStep(t, s) wraps it in a partial workflow, and Start
// accepts any control event (the run gets an empty configuration, as if a
// start step had run). Failure paths: Redeliver hands a stored event to the
// engine again, as JetStream redelivers; SendRaw publishes a raw payload
// (unknown event types, duplicate copies); Advance moves the bus's clock so
// Nak'ed events come back; WithStore runs on another dispatch.Store;
// Concurrent runs the ready steps of a trigger in parallel, as in
// production.
//
// Processes (package process): NewProcess runs the real process runner and
// agent delegator on a manual in-memory bus, with fake agents (Agent,
// answering at once or held open until Finish), humans and programs
// submitting through the real Submitter (Submit, with its checks), and each
// walkthrough's events in order (Walkthrough).
//
// Replay is a regression check for a changed workflow: record a run in
// production or dev mode (`saap run show -json RUN > run.json`, or
// RecordRun straight from the class's JetStream stream), then
//
//	rec, err := agenttest.LoadRecording("testdata/run.json")
//	...
//	agenttest.Replay(t, wf, rec) // go-cmp diff (-recorded +replayed) of the outputs
//
// sends the run's inputs (its start and the answers it got, each pointed at
// the replayed question) into the current code and compares what the
// steps publish, without ids and timestamps.
package agenttest
