// Package anthropic is the llm.Provider for Anthropic's messages API,
// built on the official anthropic-sdk-go: the SDK does the transport,
// retries and authentication, this package only translates between llm's
// model and the SDK's types.
//
// Importing the package registers it as "anthropic" (selected by
// ANTHROPIC_API_KEY in llm.FromEnv).
//
// Extended thinking streams as thinking events whose last one carries the
// block's signature; thinking blocks with signatures are sent back
// unchanged on the next turn, as the API requires during tool use.
// Thinking blocks without a signature (from another provider) are not
// sent, and redacted thinking is not kept. Tool results travel in user
// turns, as the API wants; consecutive turns of the same role are merged.
//
// Anthropic has no embeddings API, so this provider is no llm.Embedder:
// pair it with the openai or gemini provider's Embed, or another
// llm.Embedder, for memory and knowledge search.
package anthropic
