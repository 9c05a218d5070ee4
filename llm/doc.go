// Package llm is one model of requests, responses and streams over every
// language-model provider, and the tool loop an agent runs on top of it.
//
// A Request (messages of content blocks, system instructions, tools
// with JSON Schemas, sampling options) goes to a Provider; its Stream
// yields StreamEvents of one type whatever the provider: text deltas,
// tool uses opening, their argument fragments and their ends, thinking,
// usage and the stop. An Accumulator folds a stream into the Response a
// non-streaming call returns.
//
// Providers live in subpackages built on each provider's official SDK
// and register themselves when imported; Open picks one from a
// "provider:model" string and FromEnv from the environment. Package
// llmtest is a scripted provider for tests and examples.
//
// In a step, StreamTo streams a call into the run: text deltas become
// ChunkEvents, reasoning (native, or inlined in <think> tags) becomes
// ThoughtEvents, the finished call an LLMEvent, its price an LLMCostEvent
// (WithPrices), and Call.StopEvent the run's LLMStopEvent. A provider's
// *Error ends the run with an ExceptionEvent of a fitting HTTP status.
//
// GenerateObject asks for a value of a Go type: the JSON Schema made from
// the type goes to the provider as its own structured-output field
// (Request.ResponseSchema), and the answer is checked against the schema
// and decoded, or reported as an *ObjectError holding the raw answer.
//
// Images and documents are content blocks (BlockImage, BlockDocument)
// in requests, in the tool loop's conversation and in answers; images a
// model makes arrive whole as EventBlock.
//
// Loop is the tool loop: tools are Go functions with typed arguments
// (Func, the schema generated from the type) or raw schemas (Raw); the
// loop runs the tools the model asks for, in parallel, feeds the results
// back, and repeats up to a limit. Tools marked with RequireApproval are
// asked about with a ToolApprovalRequestEvent; the conversation waits in
// the run state, so the answer is taken up by whichever process receives
// it. Loop.Guards checks a turn at three points (the input before the
// first call, the final answer, each tool call): package guard provides
// the guards.
package llm
