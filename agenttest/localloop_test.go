package agenttest_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

func TestTerminalAs(t *testing.T) {
	stop := step.New(func(ctx step.Context, a *A) (*MyStop, error) { return &MyStop{Payload: "done"}, nil }, step.Name("stop"))
	res := agenttest.NewStep(t, stop).Start(&A{})
	if s, ok := agenttest.TerminalAs[*MyStop](res); !ok || s.Payload != "done" {
		t.Fatalf("TerminalAs[*MyStop] = %v, %v", s, ok)
	}
	if _, ok := agenttest.TerminalAs[*event.ExceptionEvent](res); ok {
		t.Fatal("TerminalAs[*ExceptionEvent] of a stopped run succeeded")
	}
	// A run without a terminal event: false, no panic.
	open := step.New(func(ctx step.Context, a *A) (*B, error) { return &B{}, nil }, step.Name("open"))
	res = agenttest.NewStep(t, open).Start(&A{})
	if s, ok := agenttest.TerminalAs[*MyStop](res); ok || s != nil {
		t.Fatalf("TerminalAs of an open run = %v, %v", s, ok)
	}
	var nilResult *agenttest.Result
	if nilResult.Terminal() != nil {
		t.Fatal("Terminal of a nil Result is not nil")
	}
}

func TestExecutionCarriesTrigger(t *testing.T) {
	s1 := step.New(func(ctx step.Context, a *A) (*B, error) { return &B{}, nil }, step.Name("s1"))
	s2 := step.New(func(ctx step.Context, a *A, b *B) (*X, error) { return &X{}, nil }, step.Name("s2"))
	h := agenttest.New(t, mustPartial(t, "Triggers", s1, s2))
	res := h.Start(&A{N: 3})
	xs := res.Executions()
	if len(xs) != 2 {
		t.Fatalf("executions %+v", xs)
	}
	if a, ok := xs[0].Trigger.(*A); !ok || a.N != 3 || a.EventID != res.IDs("A")[0] {
		t.Errorf("s1's trigger = %#v, want the A", xs[0].Trigger)
	}
	if xs[1].Trigger == nil || xs[1].Trigger.EventBase().EventID != res.IDs("B")[0] {
		t.Errorf("s2's trigger = %#v, want the B", xs[1].Trigger)
	}
	// Expectations may leave Trigger out, or name it.
	agenttest.Equal(t, xs, []agenttest.Execution{
		{Step: "s1", Inputs: res.IDs("A")},
		{Step: "s2", Inputs: append(res.IDs("A"), res.IDs("B")...), Trigger: res.Get("B")[0]},
	})
	rt := &recTB{TB: t}
	if agenttest.Equal(rt, xs[1:], []agenttest.Execution{{Step: "s2", Inputs: xs[1].Inputs, Trigger: res.Get("A")[0]}}) {
		t.Error("Equal matched s2 against the wrong trigger")
	}
}

// stallWorkflow: s1 turns A into B; join waits for B and C; idle waits for
// D; gated has its input but its precondition says no.
func stallWorkflow(t *testing.T) *step.Workflow {
	s1 := step.New(func(ctx step.Context, a *A) (*B, error) { return &B{}, nil }, step.Name("s1"))
	join := step.New(func(ctx step.Context, b *B, c *C) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("join"))
	idle := step.New(func(ctx step.Context, d *D) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("idle"))
	gated := step.New(func(ctx step.Context, b *B) (*X, error) { return &X{}, nil }, step.Name("gated"),
		step.Precondition(func(ctx step.Context, b *B) (bool, error) { return false, nil }))
	return mustPartial(t, "Stalls", s1, join, idle, gated)
}

func TestStalledReport(t *testing.T) {
	h := agenttest.New(t, stallWorkflow(t))
	res := h.Start(&A{})
	report := res.Stalled()
	for _, want := range []string{
		"run " + res.RunID() + " went quiet",
		"control events: A, B",
		"join has B; waits for C",
		"idle needs D",
		"gated has every input (B) but did not run",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(report, "s1") {
		t.Errorf("report lists s1, which ran:\n%s", report)
	}
	// C arrives: join stops the run, which is no longer stalled.
	h.Send(res, &C{})
	if r := res.Stalled(); r != "" || res.Terminal() == nil {
		t.Fatalf("after C: terminal %v, report %q", res.Terminal(), r)
	}
}

func TestFailOnStall(t *testing.T) {
	rt := &recTB{TB: t}
	h := agenttest.New(rt, stallWorkflow(t), agenttest.FailOnStall())
	res := h.Start(&A{})
	if len(rt.errs) != 1 || !strings.Contains(rt.errs[0], "join has B; waits for C") {
		t.Fatalf("errors %q, want one stall report", rt.errs)
	}
	h.Send(res, &C{})
	if len(rt.errs) != 1 {
		t.Fatalf("a run that ended was reported: %q", rt.errs[1:])
	}
}

// A run waiting for a human is not stalled.
func TestStalledIgnoresOpenRequests(t *testing.T) {
	ask := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.HumanInTheLoopInputRequestEvent, error) {
		req := &event.HumanInTheLoopInputRequestEvent{}
		req.Question, req.HITLType = "name?", "input"
		req.Topic = &event.Topic{EventType: event.Str(string(topic.Control)), EventName: event.Str("HumanInTheLoopInputResponseEvent")}
		return req, nil
	}, step.Name("ask"))
	greet := step.New(func(ctx step.Context, r *event.HumanInTheLoopInputResponseEvent) (*Greeting, error) {
		return &Greeting{Text: r.Response}, nil
	}, step.Name("greet"))
	rt := &recTB{TB: t}
	h := agenttest.New(rt, mustWorkflow(t, "Asker", ask, greet), agenttest.FailOnStall())
	res := h.Start(&event.StartEvent{})
	if r := res.Stalled(); r != "" || len(rt.errs) != 0 {
		t.Fatalf("a run waiting for an answer is reported stalled: %q %q", r, rt.errs)
	}
}

// orderWorkflow publishes B then C from one start; onB and onC record the
// order the engine sees them in.
func orderWorkflow(t *testing.T, seen *[]string) *step.Workflow {
	b := step.New(func(ctx step.Context, a *A) (*B, error) { return &B{}, nil }, step.Name("b"))
	c := step.New(func(ctx step.Context, a *A) (*C, error) { return &C{}, nil }, step.Name("c"))
	onB := step.New(func(ctx step.Context, x *B) (*X, error) { *seen = append(*seen, "B"); return &X{}, nil }, step.Name("onB"))
	onC := step.New(func(ctx step.Context, x *C) (*D, error) { *seen = append(*seen, "C"); return &D{}, nil }, step.Name("onC"))
	return mustPartial(t, "Order", b, c, onB, onC)
}

func TestOrder(t *testing.T) {
	var seen []string
	agenttest.New(t, orderWorkflow(t, &seen)).Start(&A{})
	agenttest.Equal(t, seen, []string{"B", "C"}) // stream order

	seen = nil
	var offered [][]string
	last := agenttest.Order(func(p []agenttest.Pending) int {
		var names []string
		for _, d := range p {
			names = append(names, d.Topic.Name)
		}
		offered = append(offered, names)
		return len(p) - 1
	})
	agenttest.New(t, orderWorkflow(t, &seen), last).Start(&A{})
	agenttest.Equal(t, seen, []string{"C", "B"})
	agenttest.Equal(t, offered[1], []string{"B", "C"}) // after the start: both outputs, in stream order

	// Each seed is one reproducible order; a few seeds reach both.
	orders := map[string]bool{}
	for seed := range uint64(16) {
		var first, again []string
		agenttest.New(t, orderWorkflow(t, &first), agenttest.Shuffle(seed)).Start(&A{})
		agenttest.New(t, orderWorkflow(t, &again), agenttest.Shuffle(seed)).Start(&A{})
		agenttest.Equal(t, again, first)
		orders[strings.Join(first, "")] = true
	}
	if !orders["BC"] || !orders["CB"] {
		t.Errorf("16 seeds gave only the orders %v", orders)
	}
}

func TestStub(t *testing.T) {
	fetch := step.New(func(ctx step.Context, a *A) (*R, error) { return &R{N: 1}, nil }, step.Name("fetch"))
	answer := step.New(func(ctx step.Context, r *R) (*MyStop, error) {
		return &MyStop{Payload: strings.Repeat("x", r.N)}, nil
	}, step.Name("answer"))
	h := agenttest.New(t, mustPartial(t, "Stubbed", fetch, answer))
	h.Stub("fetch", func(ctx step.Context, a *A) (*R, error) { return &R{N: 3}, nil })
	res := h.Start(&A{})
	if s, ok := agenttest.TerminalAs[*MyStop](res); !ok || s.Payload != "xxx" {
		t.Fatalf("terminal %#v, want the stub's R to reach answer", res.Terminal())
	}
	agenttest.Equal(t, res.Steps(), []string{"fetch", "answer"})
}

// fatalTB records a Fatalf and ends the goroutine, as testing does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestStubOfTheWrongTypeFails(t *testing.T) {
	fetch := step.New(func(ctx step.Context, a *A) (*R, error) { return &R{N: 1}, nil }, step.Name("fetch"))
	ft := &fatalTB{TB: t}
	h := agenttest.New(ft, mustPartial(t, "BadStub", fetch))
	for _, c := range []struct {
		name string
		fn   any
		want string
	}{
		{"fetch", func(ctx step.Context, a *A) (*R, bool) { return nil, false }, "(*agenttest_test.R, bool)"},
		{"fetsh", func(ctx step.Context, a *A) (*R, error) { return nil, nil }, "its steps: fetch"},
	} {
		ft.msg = ""
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.Stub(c.name, c.fn)
		}()
		<-done
		if !strings.HasPrefix(ft.msg, "agenttest.Stub: ") || !strings.Contains(ft.msg, c.want) {
			t.Errorf("Stub(%s) failed with %q, want a message containing %q", c.name, ft.msg, c.want)
		}
	}
	// The harness still runs the original step.
	res := h.Start(&A{})
	if r := res.Get("R"); len(r) != 1 || r[0].(*R).N != 1 {
		t.Fatalf("after failed stubs: R = %v", r)
	}
}
