// Package agent is a Go SDK for the Swiss AI Agent Protocol: the event-driven
// contract by which AI agents, an API gateway and user interfaces cooperate
// over NATS.
//
// A developer writes an agent as a set of typed steps (package step), each a
// plain Go function whose signature says which events it consumes and
// produces. The dispatcher (package dispatch) runs a step when the events it
// needs exist in the run, exactly as the protocol's reference platform does,
// but durably: control events are acknowledged only after they are handled,
// interrupted steps run again after a crash, and outputs carry deterministic
// ids so duplicates are absorbed.
//
// The packages, from the bottom up:
//
//   - event: the event model, the registry, the JSON codec and the core event
//     library, wire-compatible with the reference platform.
//   - topic: the subject grammars (agent, process, RPC, discovery).
//   - bus: publishing, subscribing, durable consumption and RPC over NATS
//     (and an in-memory bus with the same semantics for tests).
//   - step: declaring steps and validating a workflow.
//   - dispatch: the engine that turns control events into step executions.
//   - agenttest: a test harness for steps and agents, like net/http/httptest.
package agent
