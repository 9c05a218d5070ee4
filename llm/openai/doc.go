// Package openai is the llm.Provider for OpenAI's chat completions, built
// on the official openai-go SDK: the SDK does the transport, retries and
// authentication, this package only translates between llm's model and
// the SDK's types.
//
// Importing the package registers it as "openai" (selected by
// OPENAI_API_KEY in llm.FromEnv). The same translation serves any server
// that speaks the chat-completions protocol; package openaicompat
// registers that use under its own name.
//
// Reasoning text that OpenAI-compatible servers stream as
// "reasoning_content" (or "reasoning") becomes thinking events; thinking
// blocks of earlier turns are not sent back, since chat completions has
// no field for them. A refusal arrives as text with StopRefusal.
package openai
