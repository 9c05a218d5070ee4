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
// An agent is a value whose Steps method lists its steps; Run serves it
// until the context is cancelled:
//
//	func (a *ChatAgent) Steps() []*step.Step { return []*step.Step{step.New(a.Answer)} }
//
//	func (a *ChatAgent) Answer(ctx step.Context, msg *event.UserMessageEvent) (*event.LLMStopEvent, error)
//
//	err := agent.Run(ctx, &ChatAgent{})
//
// Run needs no configuration: it starts an embedded nats-server and keeps
// run state in JetStream KV. The environment joins real servers instead:
// NATS_URL (or the reference's NATS_ENDPOINT) with NATS_TOKEN, NATS_CREDS,
// NATS_NKEY_SEED, NATS_TLS_CERT, NATS_TLS_KEY and NATS_TLS_CA (see
// bus/natsbus); REDIS_URL keeps run state in Redis. Options (WithNATS,
// WithRedis, WithBus, WithStore, ...) take precedence over the environment.
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
//   - config: an instance's configuration, fetched by RPC and merged over
//     the agent's typed defaults.
//   - discovery: answering the gateway's class discovery.
//   - gateway: an HTTP gateway that turns REST and OpenAI-style requests
//     into events and streams the answers back.
//   - agenttest: a test harness for steps and agents, like net/http/httptest.
//
// Runnable agents are in examples/.
package agent
