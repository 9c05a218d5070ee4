// Package step declares the steps of an agent and checks that they form a
// workflow that can run.
//
// A step is a plain Go function or method whose signature says what it
// consumes and produces. Its first parameter is a Context; every further
// parameter is an input whose Go type says how events bind to it:
//
//	q *Question                    one Question, required: the trigger if it is one, else the latest
//	h step.Maybe[*Hint]            optional: the step runs without it (h.OK == false)
//	rs []*Result                   every Result so far, in arrival order; at least one
//	rs step.Maybe[[]*Result]       every Result so far, possibly none; never blocks
//	ws [2]*Work                    exactly two Works: ready when the second arrives, never again
//	x step.Either[*A, *B]          an A or a B (step.Either3 for three types)
//
// Unions combine with the other kinds: step.Maybe[step.Either[*A, *B]] and
// []step.Either[*A, *B]. Event types are registered pointer types from
// package event; a field-less type such as struct{ event.ControlEvent } is a
// flow carrier. A step fires on the exact types it names, never on
// subclasses (https://github.com/saap-go/agent/blob/main/docs/compatibility.md
// compares this with the Python platform).
//
// Results are error, or a result and an error: *E (nil publishes nothing),
// []*E (published in order), step.Either[*A, *B] (whichever is set), or
// event.Event / []event.Event together with step.Emits declaring the
// possible types:
//
//	func (r *RAG) Retrieve(ctx step.Context, q *Condensed) (*Retrieved, error)
//
//	retrieve := step.New(r.Retrieve)
//	answer := step.New(r.Answer, step.MaxExecutions(1))
//	wf, err := step.NewWorkflow("RAGAgent", retrieve, answer)
//
// New inspects the signature once and caches a call plan; the dispatcher
// then binds events with Call and evaluates preconditions with Check. Steps
// are named after their function (method values lose their receiver and the
// -fm suffix); closures need step.Name. Options set a precondition, a cap on
// executions per run, stop-on-error (on by default), declared outputs and an
// explicit loop.
//
// The Context gives a step the run's identity, the run and thread state
// (JSON values with an atomic Incr), Emit for display events while it works
// (streamed chunks), an idempotency key that is stable across a re-run after
// a crash, a logger, a tracer and the agent configuration (Config[T]). A
// panic in a step or precondition is recovered into a *PanicError and
// treated like any other error. A failing step's ExceptionEvent shows the
// end user only a message the step chose (Userf, WithUserMessage); any other
// error text, and every panic, is logged under a reference that the
// published message names.
//
// A step waits without holding anything by returning a durable timer's
// request, step.Sleep(d) or step.SleepUntil(t); a later step takes the
// *event.TimerFiredEvent that wakes the run, once, on whichever replica is
// running when the time comes (docs/timers.md).
//
// NewWorkflow validates the whole set at once and
// reports every problem in a *ValidationError, each with a hint: invalid
// signatures and unregistered types, duplicate names, required inputs that
// nothing produces and that cannot come from outside, no step taking a start
// event, steps taking a StopEvent, unreachable steps, steps from which no
// StopEvent is reachable, and cycles without MaxExecutions or Loop. A valid
// Workflow answers the dispatcher's questions (Candidates, in the
// reference's alphabetical order) and exports its graph for discovery
// (Graph, the network_graph of the discovery answer) and for people
// (Mermaid).
// NewPartialWorkflow skips the checks that need a whole agent, for tests of
// fragments whose inputs the test publishes itself.
//
// NewProcessWorkflow validates the steps of a business process (package
// process) with the same checks read for processes: steps take work events,
// a ProcessStartEvent opens a walkthrough, a ProcessStopEvent ends it, and
// the work of an agent, a human or a program may arrive once a step emitted
// the matching work request.
package step
