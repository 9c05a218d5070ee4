// Package semantic traces runs as OpenInference spans and counts them with
// OTel metrics, so that Arize Phoenix, Langfuse or any OTLP backend shows
// what an agent did.
//
// # Attributes
//
// Attributes and Convention map each semantic event (LLM, retriever,
// reranker, embedding, tool, chain, agent, guard events and their
// subclasses, and ExceptionEvent) to OpenInference attributes, mostly as
// the Python platform produces them: JSON strings with Python's
// json.dumps spacing and ASCII escapes, unset values dropped. Where the
// platform strays from the OpenInference spec, the spec wins, so that
// Phoenix and Langfuse show the spans as they should: tools and tool
// calls are flattened (llm.tools.N.tool.json_schema,
// message.tool_calls.M.tool_call.*), llm.invocation_parameters,
// tool.json_schema and metadata are written only when set,
// llm.prompt_template.variables is a JSON string, llm.system names the AI product, a
// message is either message.content (one text) or message.contents.N
// (several parts), exception.type is a string, every span has a kind
// (CHAIN for exceptions and the consumer's spans) and a TOOL span has
// input.value, output.value (the ToolEvent's "result" member) and
// tool.id; a ToolEvent with an "error" member marks its span failed, and
// one with "started_at" and "ended_at" (Unix nanoseconds) gives its span
// the call's own start and end, as does a guard event (a GUARDRAIL span:
// package guard sets them, so guards that ran in parallel overlap).
//
// # Spans
//
// Tracing implements the engine's hooks (dispatch.Hooks). A run is a trace:
//
//	run <class>                  the run: agent class and id, thread as session.id, user as user.id, run id,
//	                             input.value the user's last message, output.value the stop event's content
//	  <consumer>.receive <event>  one per delivery, from the engine
//	    <consumer>.process <event>
//	      step <name>             one per execution: trigger, attempt, idempotency key, re-run, outcome
//	        LLMEvent …            one per semantic event the step published
//	        delegate <class>      one per agent-in-the-loop request it published
//
// A semantic event's span ends at the event's created_at and starts where
// the previous semantic event of the same execution ended (the step's
// start for the first). A failed step records its error on its span; an
// ExceptionEvent's span records the exception. Every hop over NATS carries
// the W3C trace headers, so a run continues its trace on any replica, and
// a delegated run (agent in the loop) continues its caller's, under the
// caller's delegate span (Tracing is an interceptor.Publisher: that span
// goes out with the request): one trace shows the conversation across
// agents. A run a gateway request starts continues the trace of the
// request's traceparent. The run span's id rides along in
// the trace state (key "saap"), so later hops of the run hang under it;
// an event from outside the run (a human's answer through a gateway)
// continues whatever trace its publisher sent.
// The run span stays open in the process that started the run until the
// run ends there, within bounds (WithRunSpans); past them it ends early,
// marked saap.run.open.
//
// # Setup
//
// Tracing is off unless a tracer or meter provider is given: New with
// no-op providers does nothing, and an engine without hooks has no tracing
// code on its path. WithTracerProvider and WithMeterProvider take any OTel
// provider; by default the global ones are used. Package semantic/otlp
// configures OTLP exporters (HTTP or gRPC) from the standard OTEL_*
// environment variables; it is the only package that links exporters.
// WithLangfuse adds the langfuse.* attributes Langfuse reads.
//
// # Metrics
//
// Runs started, completed and crashed, step executions and re-runs, step
// duration, dead letters and waits on humans, bots or delegates, each by
// agent class (the Metric* names).
package semantic
