// Package agent is a Go SDK for the Swiss AI Agent Protocol: the event-driven
// contract by which AI agents, an API gateway and user interfaces cooperate
// over NATS.
//
// A developer writes an agent as a set of typed steps (package step), each a
// plain Go function whose signature says which events it consumes and
// produces. The runner's engine runs a step when the events it needs exist
// in the run, exactly as the protocol's reference platform
// (https://github.com/bbvch-ai/aihub-core) does, but durably: control events are acknowledged only after they are handled,
// interrupted steps run again after a crash, and outputs carry deterministic
// ids so duplicates are absorbed.
//
// An agent is a value whose Steps method lists its steps; Run serves it
// until the context is cancelled. A complete program:
//
//	package main
//
//	import (
//		"context"
//		"log"
//		"os"
//		"os/signal"
//		"syscall"
//
//		"github.com/saap-go/agent"
//		_ "github.com/saap-go/agent/embedded" // a NATS server in the process when NATS_URL is unset
//		"github.com/saap-go/agent/event"
//		"github.com/saap-go/agent/step"
//	)
//
//	// EchoAgent streams the user's last message back and ends the run.
//	type EchoAgent struct{}
//
//	func (a EchoAgent) Steps() []*step.Step { return []*step.Step{step.New(a.Answer)} }
//
//	func (EchoAgent) Answer(ctx step.Context, msg *event.UserMessageEvent) (*event.StopEvent, error) {
//		if n := len(msg.Messages); n > 0 {
//			if err := ctx.Emit(&event.ChunkEvent{Content: msg.Messages[n-1].Content()}); err != nil {
//				return nil, err
//			}
//		}
//		return &event.StopEvent{}, nil
//	}
//
//	func main() {
//		// Stop on Ctrl-C and on SIGTERM: Run shuts down gracefully and returns nil.
//		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//		defer stop()
//		if err := agent.Run(ctx, EchoAgent{}, agent.Standalone()); err != nil {
//			log.Fatal(err)
//		}
//	}
//
// Standalone makes the agent run on its defaults without the platform's
// configuration API (see "Configuration and discovery" below).
//
// Run needs no configuration: it starts an embedded nats-server and keeps
// run state in JetStream KV. The environment joins real servers instead:
// NATS_URL (or the reference's NATS_ENDPOINT) with NATS_TOKEN, NATS_CREDS,
// NATS_NKEY_SEED, NATS_TLS_CERT, NATS_TLS_KEY and NATS_TLS_CA (see
// bus/natsbus); REDIS_URL keeps run state in Redis. Options (WithNATS,
// WithRedis, WithBus, WithStore, ...) take precedence over the environment.
//
// # The runner
//
// Run (or New plus Runner.Run, for programs and tests that need to know
// when the runner takes events) connects, ensures the class's stream
// agent_<Class>_stream, and consumes its control events on the durable
// queue consumer agent_runner_<Class> (AckWait 30 s as the reference, but
// MaxDeliver -1 where the reference has 5: the runner, not the server,
// decides when to give up on an event; drift is reconciled at start, and a
// consumer the server refuses to update is logged and used as it is). The class is the
// agent's Class method (Classer), else its Go type name.
//
// Moving a class from the reference's Python runner to a Go runner needs no
// manual step: the Python runner's consumer of the same name is a push
// consumer, and the first Go runner to start replaces it by its pull
// consumer starting right after the Python runner's acknowledged events, so
// the events it handled are not replayed and none it left is skipped. The
// runner logs the take-over. Stop the Python runners of the class first.
//
// Each control event is acknowledged only after it was handled: every
// step it started has published its outputs or recorded its failure. Long
// steps send in-progress heartbeats, so they are not redelivered while they
// run. After a crash the event comes back, to this or another replica, and
// an interrupted step runs again with the same idempotency key
// (step.Context.IdempotencyKey) and the same output event ids, which the
// stream's de-duplication and the downstream claims absorb. A step whose
// outputs could not all be published does not run again: its outputs are
// kept with its claim, and the redelivery publishes those the stream does
// not hold yet.
//
// A message that cannot be handled (an unparsable subject, a payload that
// does not decode) is terminated and kept on the dead-letter subject with
// the reason. A failure that retrying cannot fix (an output over the
// server's max payload, a subject over topic.MaxSubjectLen) ends the run at
// once with an ExceptionEvent and dead-letters its trigger; a transient one
// (the store or NATS unavailable) is retried with backoff for the outage
// budget (OutageBudget, default 10 minutes), then handled the same way.
// Nothing is dropped in silence. If the NATS connection closes for good, Run
// returns an error.
//
// Start-up reads no history: a run's past events are loaded from the stream
// when one of its events arrives, and cached with a bound (WithCacheSize).
// A paused run (waiting for a human or another agent) holds no goroutine in
// the process.
//
// Cancelling the context shuts down gracefully: the runner stops taking
// events and answering discovery, lets the events in hand finish within the
// shutdown timeout (WithShutdownTimeout, default 25 s), hands the rest back
// to the stream for another replica, and closes what it opened. Run then
// returns nil.
//
// # Configuration and discovery
//
// An agent with a DefaultConfig method (Configurer) has a typed
// configuration. On each run's StartEvent the runner asks the platform for
// the instance's profile over the configuration RPC
// (aihub.rpc.config.agent.<Class>.<agent_id>), merges it over the defaults,
// validates it (a Validate method on the type is called) and gives it to the
// run's steps as step.Context.Config (typed: step.Config[T]). A failure ends
// the run with an ExceptionEvent that says "configuration is invalid" and
// names the failing fields, never their values. With Standalone the runner
// makes no RPC at all and every run gets the defaults: use it for local
// development and for agents that run without the platform's API. A runner
// on its own embedded NATS server is standalone by itself (no platform can
// reach that server), and SAAP_STANDALONE=1 makes any runner standalone
// without a code change. When a runner joined to a real NATS server gets no
// answer to the configuration request, the run's ExceptionEvent says so and
// names these two remedies.
//
// The runner answers the gateway's class discovery with the class's events,
// configuration schema, configuration form and workflow graph; a Describer
// adds the display name, description and icon. It also announces the class
// once, unsolicited, when it starts
// (class_discovery.agent.<Class>.*.announce.<event_id>), so that a gateway
// listening there need not wait for its next discovery cycle.
// Discoverable(false) turns both off for internal agents, which still
// consume their control events.
//
// # Scaling out
//
// Start the same agent in more processes. The replicas share the consumer's
// messages like a queue group and keep all shared state in the store
// (JetStream KV or Redis), so any replica can take any event of any run; no
// other coordination is needed.
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
