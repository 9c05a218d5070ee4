package engine

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/interceptor"
)

// stepStart tells the interceptors, if any, that the execution of p
// begins, and gives the step their context.
func (e *Engine) stepStart(p *plan, x interceptor.Execution) func(interceptor.StepResult) {
	if e.ic == nil {
		return nil
	}
	var done func(interceptor.StepResult)
	p.sc.Context, done = e.ic.Step(p.sc.Context, interceptor.Step{Context: p.sc, Name: x.Step, Inputs: x.Inputs, Rerun: x.Rerun, Attempt: max(p.attempt, 1)})
	return done
}

// stepEnd tells the interceptors how the execution of p ended.
func stepEnd(done func(interceptor.StepResult), p *plan, outs []event.Event, err error) {
	r := interceptor.StepResult{Outputs: outs, Err: err}
	if err != nil {
		r.Reference = p.b.id("exception", 0) // as execute names it
	}
	done(r)
}

func nopPublished(error) {}

// publishing tells the interceptors that o, a result of p's execution, is
// about to be published, and returns ctx with the span they chose for it
// (a delegation's, whose delegate run hangs under it); ctx stays the
// handling's for everything else.
func (e *Engine) publishing(ctx context.Context, p *plan, o event.Event) (context.Context, func(error)) {
	pctx, done := e.ic.Publish(p.sc.Context, o)
	sc := trace.SpanContextFromContext(pctx)
	if sc.IsValid() && sc.SpanID() != trace.SpanContextFromContext(p.sc.Context).SpanID() {
		ctx = trace.ContextWithSpanContext(ctx, sc)
	}
	return ctx, done
}
