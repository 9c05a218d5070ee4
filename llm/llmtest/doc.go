// Package llmtest is a scripted language model for tests and examples: a
// Provider that replays scripted turns as the same StreamEvents a real
// provider's stream yields (text, thinking, parallel tool calls, usage,
// the stop), and can fail mid-stream, end without its stop, or hold the
// stream open until the caller cancels.
//
// A Turn is built step by step; each call adds one content block:
//
//	p := llmtest.New(
//		llmtest.NewTurn().Tool("c1", "add", `{"a":1,"b":2}`).Usage(12, 5),
//		llmtest.NewTurn().Text("The sum ", "is 3.").Usage(20, 4),
//	)
//
// Turns are answered in order (New) or chosen from the request by a
// function (Func), which keeps no state and so gives the same answer to
// the same conversation after a restart. Generate answers the same turn
// without streaming, from the turn's own record of the message rather
// than by folding its stream, so the two can be compared.
package llmtest
