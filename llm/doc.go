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
// "provider:model" string and FromEnv from the environment.
package llm
