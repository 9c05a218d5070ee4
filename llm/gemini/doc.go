// Package gemini is the llm.Provider for Google's Gemini API, built on
// the official google.golang.org/genai SDK: the SDK does the transport
// and authentication, this package only translates between llm's model
// and the SDK's types.
//
// Importing the package registers it as "gemini" (selected by
// GEMINI_API_KEY in llm.FromEnv; the SDK also reads GOOGLE_API_KEY).
//
// Gemini sends each function call whole; it becomes a tool-use start,
// one argument delta and an end. Calls without an id get one made up
// here ("gemini-call-N"), which is not sent back. Gemini's thought
// signatures ride on the part that follows the thinking: they become a
// thinking block holding only the signature, and go back on the part
// after it. A prompt the API blocks ends with StopRefusal.
package gemini
