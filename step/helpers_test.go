package step_test

import (
	"context"
	"errors"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// Test event types. Start and Done are the lifecycle types; the rest are
// plain control events, one display event and a field-less flow carrier.
type (
	Start struct {
		event.StartEvent
		Question string `json:"question" description:"what the user asked"`
	}
	Done struct {
		event.StopEvent
		Answer string `json:"answer"`
	}
	A struct {
		event.ControlEvent
		N int `json:"n"`
	}
	B struct {
		event.ControlEvent
		N int `json:"n"`
	}
	C struct {
		event.ControlEvent
		N int `json:"n"`
	}
	R struct {
		event.ControlEvent
		N int `json:"n"`
	}
	W struct {
		event.ControlEvent
		N int `json:"n"`
	}
	Go   struct{ event.ControlEvent }
	Disp struct {
		event.DisplayEvent
		Text string `json:"text"`
	}
	Ask struct {
		event.HumanInTheLoopRequestEvent
	}
	Reply struct {
		event.HumanInTheLoopResponseEvent
	}
	// Unregistered is never registered.
	Unregistered struct{ event.ControlEvent }
)

func init() {
	event.MustRegister[Start]()
	event.MustRegister[Done]()
	event.MustRegister[A]()
	event.MustRegister[B]()
	event.MustRegister[C]()
	event.MustRegister[R]()
	event.MustRegister[W]()
	event.MustRegister[Go]()
	event.MustRegister[Disp]()
	event.MustRegister[Ask]()
	event.MustRegister[Reply]()
}

// fakeCtx is a minimal step.Context.
type fakeCtx struct {
	context.Context
	emitted []event.Event
}

func newCtx() *fakeCtx { return &fakeCtx{Context: context.Background()} }

func (c *fakeCtx) Run() step.Run             { return step.Run{Class: "Test", RunID: "r1"} }
func (c *fakeCtx) RunState() step.State      { return nil }
func (c *fakeCtx) ThreadState() step.State   { return nil }
func (c *fakeCtx) IdempotencyKey() string    { return "key" }
func (c *fakeCtx) Logger() *slog.Logger      { return slog.New(slog.DiscardHandler) }
func (c *fakeCtx) Tracer() trace.Tracer      { return noop.NewTracerProvider().Tracer("test") }
func (c *fakeCtx) Config() any               { return "config" }
func (c *fakeCtx) Locale() string            { return step.DefaultLocale }
func (c *fakeCtx) Translate(k string) string { return k }
func (c *fakeCtx) Emit(e event.Event) error {
	if event.IsControl(e) {
		return errors.New("control events are results")
	}
	c.emitted = append(c.emitted, e)
	return nil
}

// evs is shorthand for one parameter's events.
func evs(es ...event.Event) []event.Event { return es }
