package interceptor

import (
	"context"

	"github.com/saap-go/agent/event"
)

// Chain is an Interceptor made of others, called in order, their done
// functions in reverse order.
type Chain []Interceptor

// Deliver calls each interceptor's Deliver in order.
func (c Chain) Deliver(ctx context.Context, d Delivery) (context.Context, func(error)) {
	if len(c) == 1 {
		return c[0].Deliver(ctx, d)
	}
	dones := make([]func(error), len(c))
	for i, ic := range c {
		ctx, dones[i] = ic.Deliver(ctx, d)
	}
	return ctx, func(err error) {
		for i := len(dones) - 1; i >= 0; i-- {
			dones[i](err)
		}
	}
}

// Step calls each interceptor's Step in order.
func (c Chain) Step(ctx context.Context, s Step) (context.Context, func(StepResult)) {
	if len(c) == 1 {
		return c[0].Step(ctx, s)
	}
	dones := make([]func(StepResult), len(c))
	for i, ic := range c {
		ctx, dones[i] = ic.Step(ctx, s)
	}
	return ctx, func(r StepResult) {
		for i := len(dones) - 1; i >= 0; i-- {
			dones[i](r)
		}
	}
}

// Publish calls the Publish of each interceptor that is a Publisher, in
// order.
func (c Chain) Publish(ctx context.Context, ev event.Event) (context.Context, func(error)) {
	var first func(error)
	var rest []func(error)
	for _, ic := range c {
		p, ok := ic.(Publisher)
		if !ok {
			continue
		}
		var done func(error)
		ctx, done = p.Publish(ctx, ev)
		if first == nil {
			first = done
		} else {
			rest = append(rest, done)
		}
	}
	if first == nil {
		return ctx, nopDone
	}
	if rest == nil {
		return ctx, first
	}
	return ctx, func(err error) {
		for i := len(rest) - 1; i >= 0; i-- {
			rest[i](err)
		}
		first(err)
	}
}

var _ Publisher = Chain(nil)

// Executed calls each interceptor's Executed in order.
func (c Chain) Executed(ctx context.Context, x Execution) {
	for _, ic := range c {
		ic.Executed(ctx, x)
	}
}

// Ended calls each interceptor's Ended in order.
func (c Chain) Ended(ctx context.Context, e End) {
	for _, ic := range c {
		ic.Ended(ctx, e)
	}
}

// Dropped calls each interceptor's Dropped in order.
func (c Chain) Dropped(ctx context.Context, d Drop) {
	for _, ic := range c {
		ic.Dropped(ctx, d)
	}
}

// DeadLettered calls each interceptor's DeadLettered in order.
func (c Chain) DeadLettered(ctx context.Context, subject, reason string) {
	for _, ic := range c {
		ic.DeadLettered(ctx, subject, reason)
	}
}
