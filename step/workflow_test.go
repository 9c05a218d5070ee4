package step_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// Step functions shared by the workflow tests.
func begin(step.Context, *Start) (*A, error)                    { return &A{}, nil }
func middle(step.Context, *A) (*B, error)                       { return &B{}, nil }
func finish(step.Context, *B) (*Done, error)                    { return &Done{}, nil }
func join(step.Context, *A, *B) (*Done, error)                  { return &Done{}, nil }
func maybeJoin(step.Context, *A, step.Maybe[*B]) (*Done, error) { return &Done{}, nil }
func again(step.Context, *A) (step.Either[*A, *Done], error)    { return step.Either[*A, *Done]{}, nil }
func toB(step.Context, *A) (*B, error)                          { return &B{}, nil }
func backToA(step.Context, *B) (step.Either[*A, *Done], error)  { return step.Either[*A, *Done]{}, nil }
func afterStop(step.Context, *Done) (*A, error)                 { return &A{}, nil }
func sideEffect(step.Context, *A) error                         { return nil }
func startOrStop(step.Context, *Start) (step.Either[*A, *Done], error) {
	return step.Either[*A, *Done]{}, nil
}
func ask(step.Context, *Start) (*Ask, error)      { return &Ask{}, nil }
func replied(step.Context, *Reply) (*Done, error) { return &Done{}, nil }
func onC(step.Context, *C) (*B, error)            { return &B{}, nil }
func onBtoC(step.Context, *B) (*C, error)         { return &C{}, nil }
func display(step.Context, *Disp) (*Done, error)  { return &Done{}, nil }

func named(fn any, name string, opts ...step.Option) *step.Step {
	return step.New(fn, append(opts, step.Name(name))...)
}

// mustFail builds the workflow and returns its problems.
func mustFail(t *testing.T, steps ...*step.Step) *step.ValidationError {
	t.Helper()
	w, err := step.NewWorkflow("Test", steps...)
	var ve *step.ValidationError
	if !errors.As(err, &ve) || w != nil {
		t.Fatalf("NewWorkflow = %v, %v; want a *ValidationError", w, err)
	}
	if !errors.Is(err, step.ErrInvalid) {
		t.Errorf("errors.Is(err, ErrInvalid) = false")
	}
	return ve
}

// problem finds the problem of check about stepName.
func problem(t *testing.T, ve *step.ValidationError, check step.Check, stepName string) step.Problem {
	t.Helper()
	for _, p := range ve.Problems {
		if p.Check == check && p.Step == stepName {
			return p
		}
	}
	t.Fatalf("no %s problem for %q in:\n%v", check, stepName, ve)
	return step.Problem{}
}

func TestWorkflowValid(t *testing.T) {
	w, err := step.NewWorkflow("Test",
		named(finish, "finish"), named(begin, "begin"), named(middle, "middle"), named(maybeJoin, "also"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range w.Steps() {
		names = append(names, s.Name())
	}
	if diff := cmp.Diff([]string{"also", "begin", "finish", "middle"}, names); diff != "" {
		t.Errorf("Steps (-want +got):\n%s", diff)
	}
	cands := func(n string) []string {
		var out []string
		for _, s := range w.Candidates(n) {
			out = append(out, s.Name())
		}
		return out
	}
	if diff := cmp.Diff([]string{"also", "middle"}, cands("A")); diff != "" {
		t.Errorf("Candidates(A) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"also", "finish"}, cands("B")); diff != "" {
		t.Errorf("Candidates(B) (-want +got):\n%s", diff)
	}
	if w.Candidates("Done") != nil || w.Candidates("StartEvent") != nil {
		t.Error("Candidates of an event nobody takes must be nil (exact names, no subclasses)")
	}
	if w.Step("middle") == nil || w.Step("nope") != nil || w.Class() != "Test" {
		t.Error("Step / Class lookup")
	}
	if diff := cmp.Diff([]string{"Start"}, w.StartEvents()); diff != "" {
		t.Errorf("StartEvents: %s", diff)
	}
	if diff := cmp.Diff([]string{"Done"}, w.StopEvents()); diff != "" {
		t.Errorf("StopEvents: %s", diff)
	}
	if len(w.HITLRequests())+len(w.HITLResponses()) != 0 {
		t.Error("no HITL expected")
	}
}

func TestValidationDuplicate(t *testing.T) {
	ve := mustFail(t, named(begin, "begin"), named(finish, "x"), named(middle, "x"))
	p := problem(t, ve, step.CheckDuplicate, "x")
	if !strings.HasPrefix(p.Message, "two steps are named 'x' (") || !strings.Contains(p.Message, "finish") || !strings.Contains(p.Message, "middle") {
		t.Errorf("message = %q", p.Message)
	}
	if p.Hint != `rename one of them with step.Name("..."): the name is the step's identity in idempotency keys` {
		t.Errorf("hint = %q", p.Hint)
	}
}

func TestValidationNoProducer(t *testing.T) {
	ve := mustFail(t, named(begin, "begin"), named(join, "join"))
	p := problem(t, ve, step.CheckNoProducer, "join")
	if p.Message != "Test.join waits for 'arg2: B', but no step on Test produces it, so the run would stall there" {
		t.Errorf("message = %q", p.Message)
	}
	if p.Hint != "return B from some step, or make the input optional with step.Maybe" {
		t.Errorf("hint = %q", p.Hint)
	}
	// The same input as optional is accepted.
	if _, err := step.NewWorkflow("Test", named(begin, "begin"), named(maybeJoin, "join")); err != nil {
		t.Errorf("optional input: %v", err)
	}
	// A precondition's required input counts too.
	ve = mustFail(t, named(begin, "begin"),
		named(maybeJoin, "join", step.Precondition(func(step.Context, []*C) (bool, error) { return true, nil })))
	p = problem(t, ve, step.CheckNoProducer, "join")
	if p.Message != "the precondition of Test.join waits for 'arg1: C', but no step on Test produces it, so the run would stall there" {
		t.Errorf("precondition message = %q", p.Message)
	}
	// Events from outside: HITL responses (and start events) need no producer.
	if ve = mustFail(t, named(replied, "replied")); ve.Has(step.CheckNoProducer) {
		t.Errorf("a HITL response was reported as not produced:\n%v", ve)
	}
}

func TestValidationNoStart(t *testing.T) {
	ve := mustFail(t, named(middle, "middle"), named(finish, "finish"))
	p := problem(t, ve, step.CheckNoStart, "")
	if p.Message != "no step on Test consumes a start event" {
		t.Errorf("message = %q", p.Message)
	}
	if p.Hint != "let the first step take a StartEvent subclass, e.g. msg *event.UserMessageEvent" {
		t.Errorf("hint = %q", p.Hint)
	}
}

func TestValidationStopInput(t *testing.T) {
	ve := mustFail(t, named(startOrStop, "begin"), named(afterStop, "after"), named(finish, "finish"), named(middle, "middle"))
	p := problem(t, ve, step.CheckStopInput, "after")
	if p.Message != "step Test.after takes 'arg1: Done', a terminal event: the run ends when it arrives, so the step could never run on it" {
		t.Errorf("message = %q", p.Message)
	}
	if p.Hint != "nothing may follow a StopEvent or ExceptionEvent; react before the end, e.g. in the step that emits it" {
		t.Errorf("hint = %q", p.Hint)
	}
}

func TestValidationDisplayInput(t *testing.T) {
	ve := mustFail(t, named(startOrStop, "begin"), named(display, "shown"))
	p := problem(t, ve, step.CheckDisplayInput, "shown")
	if !strings.Contains(p.Message, "takes 'arg1: Disp', which is not a control event, so it is never stored and never triggers a step") {
		t.Errorf("message = %q", p.Message)
	}
	if p.Hint != "make Disp embed a control event type (e.g. event.ControlEvent), or only emit it" {
		t.Errorf("hint = %q", p.Hint)
	}
}

func TestValidationUnreachable(t *testing.T) {
	// B and C produce each other, so nobody misses a producer, but no chain
	// from the start event leads there.
	ve := mustFail(t, named(startOrStop, "begin"), named(onC, "onC", step.MaxExecutions(2)), named(onBtoC, "onB"))
	p := problem(t, ve, step.CheckUnreachable, "onC")
	if p.Message != "Test.onC is unreachable: no chain of events from a start event leads to 'arg1: C'" {
		t.Errorf("message = %q", p.Message)
	}
	if p.Hint != "emit the missing input from a reachable step (responses count once a reachable step emits the request), or remove the step" {
		t.Errorf("hint = %q", p.Hint)
	}
	problem(t, ve, step.CheckUnreachable, "onB")
	if ve.Has(step.CheckNoProducer) {
		t.Errorf("unexpected no-producer problem:\n%v", ve)
	}
	// A response with no reachable request is unreachable too.
	ve = mustFail(t, named(startOrStop, "begin"), named(replied, "replied"), named(middle, "middle"), named(finish, "finish"))
	p = problem(t, ve, step.CheckUnreachable, "replied")
	if !strings.Contains(p.Message, "leads to 'arg1: Reply'") {
		t.Errorf("message = %q", p.Message)
	}
}

func TestValidationNoStop(t *testing.T) {
	ve := mustFail(t, named(startOrStop, "begin"), named(sideEffect, "dead"))
	p := problem(t, ve, step.CheckNoStop, "dead")
	if p.Message != "no StopEvent is reachable from Test.dead, so a run that gets there never ends" {
		t.Errorf("message = %q", p.Message)
	}
	if p.Hint != "emit a StopEvent subclass from it, or an event that leads to a step that does (declare event.Event results with step.Emits)" {
		t.Errorf("hint = %q", p.Hint)
	}
	if len(ve.Problems) != 1 {
		t.Errorf("begin can stop, only dead should be reported:\n%v", ve)
	}
}

func TestValidationCycles(t *testing.T) {
	ve := mustFail(t, named(begin, "begin"), named(again, "again"))
	p := problem(t, ve, step.CheckCycle, "again")
	if p.Message != "the step again triggers itself on Test with no bound, so a run could loop forever" {
		t.Errorf("message = %q", p.Message)
	}
	if p.Hint != "cap a step of the cycle with step.MaxExecutions(n), or declare the loop intended with step.Loop()" {
		t.Errorf("hint = %q", p.Hint)
	}
	ve = mustFail(t, named(begin, "begin"), named(toB, "toB"), named(backToA, "backToA"))
	p = problem(t, ve, step.CheckCycle, "backToA")
	if p.Message != "the steps backToA, toB form a cycle on Test with no bound, so a run could loop forever" {
		t.Errorf("message = %q", p.Message)
	}
	// A bound on any step of the cycle, or Loop, makes it acceptable.
	for _, opt := range []step.Option{step.MaxExecutions(5), step.Loop()} {
		if _, err := step.NewWorkflow("Test", named(begin, "begin"), named(toB, "toB", opt), named(backToA, "backToA")); err != nil {
			t.Errorf("bounded cycle: %v", err)
		}
	}
	if _, err := step.NewWorkflow("Test", named(begin, "begin"), named(again, "again", step.MaxExecutions(50))); err != nil {
		t.Errorf("bounded self-loop: %v", err)
	}
}

func TestValidationInTheLoop(t *testing.T) {
	// A HITL request makes its response reachable; the round trip ends.
	w, err := step.NewWorkflow("Test", named(ask, "ask"), named(replied, "replied"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Ask"}, w.HITLRequests()); diff != "" {
		t.Errorf("HITLRequests: %s", diff)
	}
	if diff := cmp.Diff([]string{"Reply"}, w.HITLResponses()); diff != "" {
		t.Errorf("HITLResponses: %s", diff)
	}
}

func TestValidationReportsEverythingAtOnce(t *testing.T) {
	ve := mustFail(t,
		nil,
		named(middle, "x"), named(finish, "x"),
		step.New(func(step.Context, *Unregistered) error { return nil }),
		named(afterStop, "after"),
	)
	for _, c := range []step.Check{step.CheckSignature, step.CheckDuplicate, step.CheckName, step.CheckUnregistered, step.CheckNoStart, step.CheckStopInput} {
		if !ve.Has(c) {
			t.Errorf("missing %s problem in:\n%v", c, ve)
		}
	}
	text := ve.Error()
	if !strings.HasPrefix(text, "Test cannot run:\n- ") || strings.Count(text, "\n- ") != len(ve.Problems) || strings.Count(text, "\n  hint: ") != len(ve.Problems) {
		t.Errorf("Error() =\n%s", text)
	}
}

func TestPartialWorkflow(t *testing.T) {
	// A fragment whose inputs the test publishes: no start, no producer of
	// A or B, and no path from a start event.
	w, err := step.NewPartialWorkflow("Test", named(join, "join"))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Candidates("A")) != 1 {
		t.Error("Candidates(A)")
	}
	// Declaration problems, duplicates, stop inputs and cycles still count.
	_, err = step.NewPartialWorkflow("Test", named(again, "again"), named(afterStop, "after"), named(join, "after"))
	var ve *step.ValidationError
	if !errors.As(err, &ve) || !ve.Has(step.CheckCycle) || !ve.Has(step.CheckStopInput) || !ve.Has(step.CheckDuplicate) {
		t.Errorf("partial: %v", err)
	}
	if ve.Has(step.CheckNoProducer) || ve.Has(step.CheckNoStart) || ve.Has(step.CheckUnreachable) || ve.Has(step.CheckNoStop) {
		t.Errorf("partial workflows skip the whole-agent checks:\n%v", ve)
	}
}

func TestWorkflowClassName(t *testing.T) {
	_, err := step.NewWorkflow("", named(startOrStop, "begin"))
	var ve *step.ValidationError
	if !errors.As(err, &ve) || !ve.Has(step.CheckName) || !strings.HasPrefix(err.Error(), "workflow cannot run:") {
		t.Errorf("empty class: %v", err)
	}
}

func TestValidationAgentInTheLoop(t *testing.T) {
	// Agent-in-the-loop delegation with a wait timeout: the delegation's
	// answers, its exception and its timeout arrive from outside once the
	// request was emitted.
	delegate := named(func(step.Context, *event.UserMessageEvent) (*event.AgentInTheLoopRequestEvent, error) {
		return nil, nil
	}, "start")
	end := named(func(step.Context, step.Either[*event.AgentInTheLoopResponseEvent, *event.AgentInTheLoopTimeoutEvent]) (*Done, error) {
		return nil, nil
	}, "end")
	exc := named(func(step.Context, *event.AgentInTheLoopExceptionEvent) (*Done, error) { return nil, nil }, "exc")
	w, err := step.NewWorkflow("Orchestrator", delegate, end, exc)
	if err != nil {
		t.Fatal(err)
	}
	var links []string
	for _, l := range w.Graph().Links {
		answer := l.EventFullName[strings.LastIndex(l.EventFullName, ".")+1:]
		links = append(links, l.Source+">"+l.Target+":"+l.EventName+":"+answer)
	}
	want := []string{
		"Start>start:UserMessageEvent:UserMessageEvent", "end>End:Done:Done", "exc>End:Done:Done",
		"start>end:AgentInTheLoop:AgentInTheLoopResponseEvent", "start>exc:AgentInTheLoop:AgentInTheLoopExceptionEvent",
		"start>end:AgentInTheLoop:AgentInTheLoopTimeoutEvent",
	}
	if diff := cmp.Diff(want, links); diff != "" {
		t.Errorf("links (-want +got):\n%s", diff)
	}
	// Without the request, a timeout of another family cannot arrive.
	ve := mustFail(t, named(startOrStop, "begin"),
		named(func(step.Context, *event.HumanInTheLoopTimeoutEvent) (*Done, error) { return nil, nil }, "late"),
		named(middle, "middle"), named(finish, "finish"),
		named(func(step.Context, *A) (*event.AgentInTheLoopRequestEvent, error) { return nil, nil }, "delegate"),
		named(func(step.Context, *event.AgentInTheLoopTimeoutEvent) (*Done, error) { return nil, nil }, "timedOut"))
	problem(t, ve, step.CheckUnreachable, "late")
	if len(ve.Problems) != 1 {
		t.Errorf("only late should be unreachable:\n%v", ve)
	}
}

func TestValidationEmptyAndCascades(t *testing.T) {
	ve := mustFail(t)
	problem(t, ve, step.CheckNoStart, "")
	// A step with a broken signature is reported once; its consumers are not
	// reported as unreachable or endless on its account.
	ve = mustFail(t, named(func(step.Context, *Start) (*A, string) { return nil, "" }, "broken",
		step.Emits((*A)(nil))), named(middle, "middle"), named(finish, "finish"))
	if len(ve.Problems) != 1 || ve.Problems[0].Check != step.CheckSignature || ve.Problems[0].Step != "broken" {
		t.Errorf("want only the signature problem:\n%v", ve)
	}
}

func TestValidationNoCascadeFromBadParameter(t *testing.T) {
	ve := mustFail(t, named(begin, "begin"),
		named(func(step.Context, *A, string) (*B, error) { return nil, nil }, "bad"),
		named(finish, "finish"))
	if len(ve.Problems) != 1 || ve.Problems[0].Step != "bad" {
		t.Errorf("want only bad's signature problem:\n%v", ve)
	}
}
