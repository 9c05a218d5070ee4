package interceptor_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/interceptor"
	"github.com/saap-go/agent/step"
)

type ctxKey string

// tagger records its calls in a shared log and tags the context it hands
// on, so a test can see the order and what each one was given.
type tagger struct {
	interceptor.Base
	name string
	mu   *sync.Mutex
	log  *[]string
}

func (g tagger) note(s string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	*g.log = append(*g.log, s)
}

func (g tagger) Deliver(ctx context.Context, d interceptor.Delivery) (context.Context, func(error)) {
	prev, _ := ctx.Value(ctxKey("tag")).(string)
	g.note(g.name + ".deliver after " + prev)
	return context.WithValue(ctx, ctxKey("tag"), g.name), func(error) { g.note(g.name + ".done") }
}

func (g tagger) Step(ctx context.Context, s interceptor.Step) (context.Context, func(interceptor.StepResult)) {
	g.note(g.name + ".step " + s.Name)
	return ctx, func(r interceptor.StepResult) { g.note(fmt.Sprintf("%s.stepdone %d", g.name, len(r.Outputs))) }
}

func (g tagger) Ended(_ context.Context, e interceptor.End) { g.note(g.name + ".ended " + e.Marker) }

func TestChainOrder(t *testing.T) {
	var mu sync.Mutex
	var log []string
	c := interceptor.Chain{tagger{name: "a", mu: &mu, log: &log}, tagger{name: "b", mu: &mu, log: &log}}
	ctx, done := c.Deliver(context.Background(), interceptor.Delivery{})
	if got := ctx.Value(ctxKey("tag")); got != "b" {
		t.Errorf("the chain's context carries %v, want the last interceptor's", got)
	}
	_, sdone := c.Step(ctx, interceptor.Step{Name: "Work"})
	sdone(interceptor.StepResult{Outputs: []event.Event{&event.StopEvent{}}})
	c.Ended(ctx, interceptor.End{Marker: interceptor.Completed})
	done(nil)
	want := []string{
		"a.deliver after ", "b.deliver after a",
		"a.step Work", "b.step Work",
		"b.stepdone 1", "a.stepdone 1",
		"a.ended completed", "b.ended completed",
		"b.done", "a.done",
	}
	if !slices.Equal(log, want) {
		t.Errorf("calls\n%q\nwant\n%q", log, want)
	}
}

func TestEmptyChain(t *testing.T) {
	ctx := context.Background()
	got, done := interceptor.Chain{}.Deliver(ctx, interceptor.Delivery{})
	if got != ctx {
		t.Error("an empty chain changed the context")
	}
	done(nil)
	_, sdone := interceptor.Chain{}.Step(ctx, interceptor.Step{})
	sdone(interceptor.StepResult{})
}

type (
	Asked  struct{ event.StartEvent }
	Worked struct{ event.ControlEvent }
	Done   struct{ event.StopEvent }
)

func init() {
	event.MustRegister[Asked]()
	event.MustRegister[Worked]()
	event.MustRegister[Done]()
}

func work(step.Context, *Asked) (*Worked, error)  { return &Worked{}, nil }
func finish(step.Context, *Worked) (*Done, error) { return &Done{}, nil }

// The runtime calls an installed interceptor for each delivery, each step
// and the run's end, in that nesting.
func TestRuntimeCallsInterceptor(t *testing.T) {
	w, err := step.NewWorkflow("Intercepted",
		step.New(work), step.New(finish))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log []string
	h := agenttest.New(t, w, agenttest.WithInterceptors(tagger{name: "x", mu: &mu, log: &log}))
	r := h.Start(&Asked{})
	if r.Ended() != interceptor.Completed {
		t.Fatalf("run ended %q", r.Ended())
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"x.deliver after ", "x.step work", "x.stepdone 1", "x.done",
		"x.deliver after ", "x.step finish", "x.stepdone 1", "x.done",
		"x.deliver after ", "x.ended completed", "x.done",
	}
	if !slices.Equal(log, want) {
		t.Errorf("calls\n%q\nwant\n%q", log, want)
	}
}

// publisher is a tagger that also sees outputs as they are published.
type publisher struct{ tagger }

func (g publisher) Publish(ctx context.Context, ev event.Event) (context.Context, func(error)) {
	prev, _ := ctx.Value(ctxKey("tag")).(string)
	g.note(g.name + ".publish " + event.Name(ev) + " after " + prev)
	return context.WithValue(ctx, ctxKey("tag"), g.name), func(err error) { g.note(fmt.Sprintf("%s.published %v", g.name, err)) }
}

// A chain's Publish calls its Publishers in order, skips the others, and
// calls their done functions in reverse order.
func TestChainPublish(t *testing.T) {
	var mu sync.Mutex
	var log []string
	c := interceptor.Chain{publisher{tagger{name: "a", mu: &mu, log: &log}}, tagger{name: "b", mu: &mu, log: &log},
		publisher{tagger{name: "c", mu: &mu, log: &log}}}
	ctx, done := c.Publish(context.Background(), &event.StopEvent{})
	if got := ctx.Value(ctxKey("tag")); got != "c" {
		t.Errorf("the chain's context carries %v, want the last publisher's", got)
	}
	done(nil)
	want := []string{"a.publish StopEvent after ", "c.publish StopEvent after a", "c.published <nil>", "a.published <nil>"}
	if !slices.Equal(log, want) {
		t.Errorf("calls %v, want %v", log, want)
	}
	ctx, done = interceptor.Chain{tagger{name: "b", mu: &mu, log: &log}}.Publish(context.Background(), &event.StopEvent{})
	done(nil)
	if ctx.Value(ctxKey("tag")) != nil || len(log) != len(want) {
		t.Errorf("a chain without publishers did something: %v", log)
	}
}
