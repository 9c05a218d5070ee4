package step

import (
	"fmt"
	"slices"
	"strings"
)

// Workflow is a validated set of steps of one agent class: what the
// dispatcher runs and what discovery describes. It is immutable and safe for
// concurrent use.
type Workflow struct {
	r          *rules
	class      string
	steps      []*Step // alphabetical
	byName     map[string]*Step
	candidates map[string][]*Step
	starts     []string
	stops      []string
	hitlReq    []string
	hitlResp   []string
}

// NewWorkflow validates the steps of an agent class and returns the
// workflow. Every problem found is reported at once in
// a *ValidationError, each with a hint; the workflow is nil then.
func NewWorkflow(class string, steps ...*Step) (*Workflow, error) {
	return build(agentRules, class, steps, false)
}

// NewPartialWorkflow is NewWorkflow without the checks that need a whole
// agent: inputs nobody produces, a step consuming a start event,
// reachability and termination. Tests use it for fragments whose inputs the
// test itself publishes.
func NewPartialWorkflow(class string, steps ...*Step) (*Workflow, error) {
	return build(agentRules, class, steps, true)
}

// NewProcessWorkflow validates the steps of a process class, with the
// checks of NewWorkflow read for processes: steps take work events
// (subclasses of event.WorkEvent), a ProcessStartEvent subclass starts a
// walkthrough, a ProcessStopEvent subclass ends it, and an agent's, a
// human's or a program's work may arrive once a step emitted the matching
// work request.
func NewProcessWorkflow(class string, steps ...*Step) (*Workflow, error) {
	return build(processRules, class, steps, false)
}

// Process reports whether w was built by NewProcessWorkflow.
func (w *Workflow) Process() bool { return w.r.process }

func build(r *rules, class string, steps []*Step, relaxed bool) (*Workflow, error) {
	v := validator{r: r, class: class}
	if err := checkName(class); err != "" {
		v.add(Problem{Check: CheckName, Message: fmt.Sprintf("the agent class %q %s", class, err),
			Hint: "use the class name that becomes the subject token, e.g. \"RAGAgent\""})
		if class == "" {
			v.class = "workflow"
		}
	}
	var good []*Step
	for i, s := range steps {
		if s == nil {
			v.add(Problem{Check: CheckSignature, Message: fmt.Sprintf("step %d is nil", i+1),
				Hint: "pass the result of step.New"})
			continue
		}
		v.problems = append(v.problems, s.resolve().problems...)
		good = append(good, s)
	}
	slices.SortStableFunc(good, func(a, b *Step) int { return strings.Compare(a.name, b.name) })
	w := &Workflow{
		r:          r,
		class:      class,
		steps:      good,
		byName:     make(map[string]*Step, len(good)),
		candidates: make(map[string][]*Step),
	}
	for _, s := range good {
		if s.name == "" {
			continue
		}
		if first, dup := w.byName[s.name]; dup {
			v.add(Problem{Check: CheckDuplicate, Step: s.name,
				Message: fmt.Sprintf("two steps are named '%s' (%s and %s)", s.name, originOf(first), originOf(s)),
				Hint:    "rename one of them with step.Name(\"...\"): the name is the step's identity in idempotency keys"})
			continue
		}
		w.byName[s.name] = s
	}
	for _, s := range good {
		for _, n := range s.triggers {
			w.candidates[n] = append(w.candidates[n], s)
		}
	}
	w.describe()
	v.inputs(good)
	g := newFlow(r, good)
	if !relaxed {
		v.producers(good)
		if len(w.starts) == 0 && r.process {
			v.add(Problem{Check: CheckNoStart,
				Message: fmt.Sprintf("no step on %s consumes a process start event", v.class),
				Hint:    "let the first step take a ProcessStartEvent subclass, e.g. s *Application embedding event.ProcessStartEvent"})
		} else if len(w.starts) == 0 {
			v.add(Problem{Check: CheckNoStart,
				Message: fmt.Sprintf("no step on %s consumes a start event", v.class),
				Hint:    "let the first step take a StartEvent subclass, e.g. msg *event.UserMessageEvent"})
		}
		unreachable := v.reachability(good)
		v.termination(good, g, unreachable)
	}
	v.cycles(g)
	if len(v.problems) > 0 {
		return nil, &ValidationError{Class: v.class, Problems: v.problems}
	}
	return w, nil
}

func originOf(s *Step) string {
	if s.origin != "" {
		return s.origin
	}
	return "a step"
}

// describe computes the discovery lists.
func (w *Workflow) describe() {
	var starts, stops, req, resp []string
	for _, s := range w.steps {
		for _, n := range s.triggers {
			if w.r.isStart(n) {
				starts = append(starts, n)
			}
			if isA(n, nameHITLResponse) {
				resp = append(resp, n)
			}
		}
		for _, n := range s.outputs {
			if w.r.isStop(n) {
				stops = append(stops, n)
			}
			if isA(n, nameHITLRequest) {
				req = append(req, n)
			}
		}
	}
	w.starts, w.stops, w.hitlReq, w.hitlResp = sortUnique(starts), sortUnique(stops), sortUnique(req), sortUnique(resp)
}

func sortUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// Class returns the agent class.
func (w *Workflow) Class() string { return w.class }

// Steps returns the steps in alphabetical order of their names, the order in
// which the reference evaluates candidates. The slice is shared: do not
// modify it.
func (w *Workflow) Steps() []*Step { return w.steps }

// Step returns the step named name, or nil.
func (w *Workflow) Step(name string) *Step { return w.byName[name] }

// Candidates returns the steps that take the event name as an input (exact
// name), alphabetically; nil if none. Events only a
// precondition reads are not included.
func (w *Workflow) Candidates(name string) []*Step { return w.candidates[name] }

// StartEvents returns the start event names the steps consume.
func (w *Workflow) StartEvents() []string { return w.starts }

// StopEvents returns the stop event names the steps may emit.
func (w *Workflow) StopEvents() []string { return w.stops }

// HITLRequests returns the human-in-the-loop request names the steps may
// emit.
func (w *Workflow) HITLRequests() []string { return w.hitlReq }

// HITLResponses returns the human-in-the-loop response names the steps
// consume.
func (w *Workflow) HITLResponses() []string { return w.hitlResp }
