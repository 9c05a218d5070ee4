package engine

import (
	"context"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Hooks let tracing and metrics follow the engine's work (package semantic
// implements them). An engine without hooks pays nothing for them. Methods
// may be called from several goroutines at once and must not block.
type Hooks interface {
	// Deliver is called when Handle has decoded a delivery, before the
	// engine's own spans start. It returns the context of the handling;
	// done is called with the handling's outcome once it is settled.
	Deliver(ctx context.Context, d Delivered) (_ context.Context, done func(error))
	// Step is called before a step runs (not for its precondition, nor for
	// an execution whose outputs are only published again). It returns the
	// step's context; done is called once the execution's outputs are
	// published or its failure recorded.
	Step(ctx context.Context, s StepCall) (_ context.Context, done func(StepResult))
	// Ended is called when the engine tears a run down (not for a
	// duplicate delivery of its terminal event).
	Ended(ctx context.Context, t Teardown, terminal event.Event)
	// DeadLettered is called for each delivery the engine dead-letters.
	DeadLettered(ctx context.Context, subject, reason string)
}

// Delivered describes a delivery to Hooks.Deliver.
type Delivered struct {
	Topic        topic.Agent
	Event        event.Event
	Seq          uint64 // stream sequence
	NumDelivered uint64 // 1 on the first delivery
}

// StepCall describes a step execution about to run, to Hooks.Step.
type StepCall struct {
	// Context is the execution's step context: its Run (whose Trigger is
	// the triggering event) and IdempotencyKey, computed when asked for.
	Context step.Context
	Step    string
	Inputs  []string // bound event ids, in parameter order
	Rerun   bool     // the claim was pending: a re-run after an interrupted execution
}

// StepResult is how a step execution ended, for Hooks.Step.
type StepResult struct {
	// Outputs are the events published for the execution, in order: the
	// step's results, or the ExceptionEvent that ends the run.
	Outputs []event.Event
	// Err is the step's error (or an output it may not publish).
	Err error
	// Reference names the failure in the published ExceptionEvent.
	Reference string
}

// WithHooks installs h (default none).
func WithHooks(h Hooks) Option { return func(e *Engine) { e.hooks = h } }

// stepStart calls the Step hook, if any, for the execution of p, and
// gives the step the hook's context.
func (e *Engine) stepStart(p *plan, x Execution) func(StepResult) {
	if e.hooks == nil {
		return nil
	}
	var done func(StepResult)
	p.sc.Context, done = e.hooks.Step(p.sc.Context, StepCall{Context: p.sc, Step: x.Step, Inputs: x.Inputs, Rerun: x.Rerun})
	return done
}

// stepEnd tells the Step hook how the execution of p ended.
func stepEnd(done func(StepResult), p *plan, outs []event.Event, err error) {
	r := StepResult{Outputs: outs, Err: err}
	if err != nil {
		r.Reference = p.b.id("exception", 0) // as execute names it
	}
	done(r)
}
