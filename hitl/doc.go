// Package hitl builds the questions an agent asks while a run waits: a
// human's input, a yes or no, a chat answer or the approval of a tool call.
// The helpers fill a request as the Python platform's factories do: the
// question, the hitl_type, and a topic naming the event that answers it
// (event_type "control_event", event_name the response's wire name). When a
// step returns the request, the engine completes the rest of the topic
// (agent class, agent id, thread, display, run and the request's event id,
// keeping what the step set) and publishes it on the run's control and
// display subjects, where a gateway shows it. A later step takes the typed
// answer as its input; the run holds nothing while it waits.
//
//	func (a *Expenses) Ask(ctx step.Context, c *Claim) (*event.HumanInTheLoopConfirmationRequestEvent, error) {
//		return hitl.Confirm("Approve "+c.Amount+"?", hitl.Timeout(24*time.Hour))
//	}
//
//	func (a *Expenses) Decide(ctx step.Context, r *event.HumanInTheLoopConfirmationResponseEvent) (*event.StopEvent, error) {
//		...  // r.Response is the human's yes or no
//	}
//
//	func (a *Expenses) Escalate(ctx step.Context, t *event.HumanInTheLoopTimeoutEvent) (*event.StopEvent, error) {
//		...  // nobody answered within t.TimeoutSeconds
//	}
//
// # Timeouts
//
// Timeout gives a question a deadline, counted from the moment the engine
// publishes the request. A HITL or BITL request carries it as an extra
// timeout_seconds member, which the Python platform accepts and keeps; an
// AgentInTheLoopRequestEvent has the field itself. Because it is part of
// the request the step returned, it is kept with the step's outputs and
// survives a crash before the request goes out.
//
// When the engine publishes such a request it records the deadline in its
// state store. If no answer has arrived when the deadline passes, exactly
// one timeout event enters the run: HumanInTheLoopTimeoutEvent,
// BotInTheLoopTimeoutEvent or AgentInTheLoopTimeoutEvent, matching the
// request, with request_event_id and timeout_seconds. That holds with
// several replicas and across crashes: the timeout's event id is derived
// from the request, so replicas that fire the same deadline store one
// event, and the run accepts only the first of answer and timeout; the
// other is refused with a log line and dead-lettered. A runner loads only
// the pending deadlines when it starts and serves them all with one timer.
//
// Without a step that takes the timeout event, a timed-out run stays
// paused: declare one for every question with a timeout.
//
// # Delegation
//
// Delegate asks another agent instead of a human: it returns an
// AgentInTheLoopRequestEvent naming the delegate's class and instance and
// the start event for it. The caller's runner starts the delegate's run and
// brings its first stop event back as an AgentInTheLoopResponseEvent, or
// its exception as an AgentInTheLoopExceptionEvent, both with
// request_event_id; with DelegateTimeout, an AgentInTheLoopTimeoutEvent
// comes instead when the delegate is too slow: an AgentInTheLoopExceptionEvent
// subclass ("did not answer"), so a Python caller sees the failure the
// reference publishes (a Go step still takes the two by their own types).
// Both legs go through durable
// JetStream consumers, so a restart of the caller loses no answer.
//
// # Bots
//
// A BotInTheLoopRequestEvent asks someone on a bot channel (Slack, Teams,
// a webhook). A Bot carries the question to its channel; Webhook posts it,
// signed with a shared secret, to any URL. The gateway delivers the
// questions it sees to its configured Bot and takes the signed answers on
// its bot answer route, checked as a human's answer is (only an open
// question of a live run), as the BotInTheLoopResponseEvent of the run.
// AskBot builds the request.
//
// # Memory
//
// StoreMemory builds the MemoryStorageRequestedEvent a step returns to have
// a thread's messages stored by a memory-writer agent: fire and forget, on
// fresh ids, in a trace of its own; nothing comes back into the run.
package hitl
