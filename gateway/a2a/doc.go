// Package a2a serves the agent classes of a gateway over the Agent2Agent
// (A2A) protocol, built on the official Go SDK (github.com/a2aproject/a2a-go).
//
// Mount adds, for every class the gateway serves and any agent instance id:
//
//	GET  /a2a/<Class>/<id>/.well-known/agent-card.json   the agent card (public)
//	POST /a2a/<Class>/<id>                               JSON-RPC (authenticated)
//	GET  /.well-known/agent-card.json                    the default agent's card
//
// A card names the class and describes it from discovery: one skill per
// start event, streaming, bearer authentication, and the JSON-RPC URL.
// The endpoint takes message/send, message/stream, tasks/get, tasks/cancel
// and tasks/resubscribe, and the same methods under their v1.0 names
// (SendMessage, SendStreamingMessage, GetTask, CancelTask,
// SubscribeToTask).
//
// A task is a run. Its first message starts a run through the class's
// conversational start event, on the gateway's own streaming endpoint, so
// thread membership, rate limits and the open-question checks apply as
// for any REST client. The context id is the thread: a 24-hex context id
// is used as is, any other is hashed into a thread id. While the run
// works, its ChunkEvents stream as appends to the task's "answer"
// artifact; its stop event's output replaces that artifact and completes
// the task. An exception fails the task with the exception's message. A
// HITL question ends the stream with the task in input-required: the
// status message holds the question and a data part "hitl" with its id
// and type; the next message to the task answers it (its text, read as yes
// or no for a confirmation, or a data part's "response" member) and the
// task follows the run on. tasks/cancel cancels the task's run (the SDK's
// RunCancelRequestedEvent: the running step's context is cancelled and
// nothing more of the run starts) and ends the task as canceled; a run
// cancelled by other means ends its task as canceled too.
//
// Every task belongs to the user who created it: a task id of another
// user (or of another agent than the URL's) answers "task not found", for
// reading, resubscribing, cancelling and continuing alike. Tasks live in
// the process's memory, so a restarted or other replica does not know
// them. The cards come in the v0.3 shape, or in the v1.0 shape for a
// client that asks with an A2A-Version: 1.x header.
// https://github.com/saap-go/agent/blob/main/docs/a2a.md describes the mapping in full.
package a2a
