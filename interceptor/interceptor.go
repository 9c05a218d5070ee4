// Package interceptor is the one extension point of an agent's runtime:
// an Interceptor sees each delivery the runtime handles, each step it
// runs, each execution it completes, each run it ends, and each event it
// drops or dead-letters; a Publisher also sees each step result as it is
// published. Tracing (package semantic), metrics and the test
// harness (package agenttest) are interceptors; install your own with
// agent.WithInterceptors.
//
// Interceptors are called in the order given, and the functions they return
// in the reverse order, like nested middleware. Methods may be called from
// several goroutines at once and must not block: they run on the handling's
// path. Embed Base to implement only the methods you need. A runtime without
// interceptors pays nothing for them.
package interceptor

import (
	"context"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Interceptor follows the runtime's work on one agent class.
type Interceptor interface {
	// Deliver is called once a delivery's event is decoded, before it is
	// handled. It returns the context of the handling; done is called with
	// the handling's outcome (nil, or why the event was handed back or
	// given up) once the delivery is settled.
	Deliver(ctx context.Context, d Delivery) (_ context.Context, done func(error))
	// Step is called before a step's function runs (not for its
	// precondition, nor for an execution whose outputs are only published
	// again). It returns the step's context; done is called once the
	// execution's outputs are published or its failure recorded.
	Step(ctx context.Context, s Step) (_ context.Context, done func(StepResult))
	// Executed is called after each execution, including a failed
	// precondition and an execution whose kept outputs were published again,
	// once its outputs are published.
	Executed(ctx context.Context, x Execution)
	// Ended is called for each handling of a run's terminal event: a
	// StopEvent or an ExceptionEvent, by parent chain.
	Ended(ctx context.Context, e End)
	// Dropped is called for each output refused because its run had
	// published or received its terminal event (a protocol violation).
	Dropped(ctx context.Context, d Drop)
	// DeadLettered is called for each delivery put on the dead-letter
	// subject, with the reason.
	DeadLettered(ctx context.Context, subject, reason string)
}

// Publisher is an Interceptor that also sees each result of a step
// execution as it is first published. Publish is called before ev goes
// out, with the context Step returned; the trace context of the context
// it returns goes with the event (a delegation's start continues it), and
// done is called with the publish's error, nil once it is out.
type Publisher interface {
	Publish(ctx context.Context, ev event.Event) (_ context.Context, done func(error))
}

// Delivery describes a delivery of a control event to the runtime.
type Delivery struct {
	Topic        topic.Agent // the event's subject, parsed
	Event        event.Event
	Seq          uint64 // stream sequence
	NumDelivered uint64 // 1 on the first delivery
	Stream       string // the class's stream
	Consumer     string // the durable consumer that delivered it
}

// Step describes a step execution about to run.
type Step struct {
	// Context is the execution's step context: its Run (whose Trigger is
	// the triggering event) and IdempotencyKey.
	Context step.Context
	Name    string
	Inputs  []string // bound event ids, in parameter order
	Rerun   bool     // an interrupted execution runs again
	Attempt int      // 1 for the first try; more when a retry policy runs it again
}

// StepResult is how a step execution ended.
type StepResult struct {
	// Outputs are the events published for the execution, in order: the
	// step's results, or the ExceptionEvent that ends the run.
	Outputs []event.Event
	// Err is the step's error (or an output it may not publish).
	Err error
	// Reference names the failure in the published ExceptionEvent.
	Reference string
}

// Execution describes one completed step execution.
type Execution struct {
	Run     topic.Agent // the run (its event fields are empty)
	Step    string
	Trigger string   // event id of the trigger
	Inputs  []string // event ids bound, in parameter order (list elements in stream order)
	Outputs []string // event ids of the outputs published
	Rerun   bool     // an interrupted execution ran again
	Err     error    // the step's error (or its precondition's)
}

// Run end markers.
const (
	Completed = "completed" // the run ended with a StopEvent
	Crashed   = "crashed"   // the run ended with an ExceptionEvent
)

// End describes the handling of a run's terminal event.
type End struct {
	Run      topic.Agent // the run (its event fields are empty)
	Terminal event.Event // the StopEvent or ExceptionEvent
	Marker   string      // Completed or Crashed
	// Duplicate is true when the run had ended already: this is a second
	// delivery of its terminal event, and nothing was done.
	Duplicate bool
}

// Drop describes an output that was not published because its run had
// ended.
type Drop struct {
	Run   topic.Agent
	Step  string
	Event event.Event
}

// Base implements every method of Interceptor as a no-op: embed it and
// override what you need.
type Base struct{}

// Deliver returns ctx and a done that does nothing.
func (Base) Deliver(ctx context.Context, _ Delivery) (context.Context, func(error)) {
	return ctx, nopDone
}

// Step returns ctx and a done that does nothing.
func (Base) Step(ctx context.Context, _ Step) (context.Context, func(StepResult)) {
	return ctx, nopStep
}

// Executed does nothing.
func (Base) Executed(context.Context, Execution) {}

// Ended does nothing.
func (Base) Ended(context.Context, End) {}

// Dropped does nothing.
func (Base) Dropped(context.Context, Drop) {}

// DeadLettered does nothing.
func (Base) DeadLettered(context.Context, string, string) {}

func nopDone(error)      {}
func nopStep(StepResult) {}

var _ Interceptor = Base{}
