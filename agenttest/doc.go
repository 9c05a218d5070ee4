// Package agenttest runs agents and single steps in tests, as
// net/http/httptest runs handlers: on a manual in-memory bus and an
// in-memory store, with the real dispatch engine, deterministically (no
// sleeps, no wall clock: ids and created_at come from the harness).
//
//	h := agenttest.New(t, workflow)
//	res := h.Start(&event.StartEvent{})   // runs to quiescence
//	agenttest.Equal(t, res.Names(), []string{"StartEvent", "A", "StopEvent"})
//	agenttest.Equal(t, res.Steps(), []string{"s1", "s2"})
//	res.Terminal()                          // the StopEvent
//	h.Send(res, &MyResponse{...})           // e.g. a HITL answer into the waiting run
//
// A Result lists the events published for the run (Events, Control,
// Display, in publish order), the terminal event, counts per event type,
// and which step ran with which input event ids (Executions). Equal prints a
// go-cmp diff on failure.
package agenttest
