// Package agui serves the agent classes a gateway discovered to AG-UI
// clients (CopilotKit, @ag-ui/client's HttpAgent):
//
//	POST /agui/{Class}/{agent_id}
//	POST /api/v1/{tenant}/agui/{Class}/{agent_id}
//
// The body is a RunAgentInput; the answer is Server-Sent Events, one
// `data: <AG-UI event JSON>` each, as the official encoder writes them:
//
//   - RUN_STARTED once the start event is published;
//   - TEXT_MESSAGE_START, _CONTENT, _END from the run's ChunkEvents;
//   - REASONING_START, REASONING_MESSAGE_START, _CONTENT, _END and
//     REASONING_END from ThoughtEvents;
//   - TOOL_CALL_START, _ARGS, _END from ToolEvents, and TOOL_CALL_RESULT
//     when the event carries a result (an extra "result" or "output"
//     member);
//   - STATE_SNAPSHOT and STATE_DELTA from the StateSnapshotEvent and
//     StateDeltaEvent an agent emits when it wants to share its state;
//   - RUN_FINISHED when the run stops (the stop event is the result), or
//     RUN_ERROR for an ExceptionEvent or the gateway's timeout, and
//     RUN_ERROR with code "cancelled" for a run cancelled elsewhere.
//
// AG-UI clients stop a run by aborting its request (HttpAgent.abortRun):
// a client that goes away before the run ended cancels it (the SDK's
// RunCancelRequestedEvent), so the agent's running step sees its context
// cancelled and nothing more of the run starts.
//
// A HITL question ends the AG-UI run with RUN_FINISHED whose outcome is
// {type: "interrupt"}: one interrupt whose id is the question's event id,
// message the question, reason its hitl_type, expiresAt its deadline when
// it has a timeout, and a responseSchema (a string or a boolean). The
// client resumes with a new run on the same threadId whose resume entry
// {interruptId, status: "resolved", payload} answers it; the stream then
// follows the asking run. A "cancelled" entry sends nothing to the agent.
//
// threadId is the protocol's thread id when it is 24 lower-case hex
// characters; any other string (AG-UI clients make UUIDs) names the
// thread whose id is derived from it, so the same threadId always reaches
// the same thread. The client's runId is echoed; the protocol's run id is
// in the metadata of RUN_STARTED (metadata.saap.run_id).
//
// For a class with a chat start event (a UserMessageEvent) the input's
// user, assistant and system messages become its messages. Another start
// event, or extra fields, come from forwardedProps: {"event": name,
// "body": {...}}.
//
// Every request passes the gateway's guard (authentication, rate limits)
// and its thread checks: a user may only start or resume runs in threads
// they are a member of, and may only answer questions of those threads.
package agui
