package step

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// validator collects the problems of one workflow.
type validator struct {
	r        *rules
	class    string
	problems []Problem
}

func (v *validator) add(p Problem) { v.problems = append(v.problems, p) }

// where names a step in messages as the reference does: "Class.step".
func (v *validator) where(s *Step) string {
	if s.name == "" {
		return originOf(s)
	}
	return v.class + "." + s.name
}

// paramLabel renders a parameter like the reference: "arg1: A | B".
func paramLabel(p Param) string { return p.Name + ": " + p.typeString() }

// inputs flags inputs that can never trigger: terminal events and
// events that are not control events.
func (v *validator) inputs(steps []*Step) {
	for _, s := range steps {
		seen := map[string]bool{}
		check := func(ps []Param, who, what string) {
			for _, p := range ps {
				for _, n := range p.Names {
					if seen[n] || !registered(n) {
						continue
					}
					seen[n] = true
					switch {
					case v.r.isStop(n) || isA(n, v.r.exception):
						v.add(Problem{Check: CheckStopInput, Step: s.name,
							Message: fmt.Sprintf("%s %s takes '%s', a terminal event: the run ends when it arrives, so the %s could never run on it", who, v.where(s), paramLabel(p), what),
							Hint:    "nothing may follow a StopEvent or ExceptionEvent; react before the end, e.g. in the step that emits it"})
					case !isA(n, v.r.input):
						v.add(Problem{Check: CheckDisplayInput, Step: s.name,
							Message: fmt.Sprintf("%s %s takes '%s', which is not a control event, so it is never stored and never triggers a step", who, v.where(s), paramLabel(p)),
							Hint:    fmt.Sprintf("make %s embed a control event type (e.g. event.ControlEvent), or only emit it", n)})
					}
				}
			}
		}
		check(s.pub, "step", "step")
		check(s.PreconditionParams(), "the precondition of", "precondition")
	}
}

// produced is the set of every declared output.
func produced(steps []*Step) map[string]bool {
	out := map[string]bool{}
	for _, s := range steps {
		for _, n := range s.outputs {
			out[n] = true
		}
	}
	return out
}

// producers flags required inputs that no step produces and that cannot
// come from outside (reference: workflow_validation._inputs_nobody_produces).
func (v *validator) producers(steps []*Step) {
	made := produced(steps)
	for _, s := range steps {
		check := func(ps []Param, prefix string) {
			for _, p := range ps {
				// A wrong or unregistered type was reported already.
				if !p.Kind.Required() || !slices.ContainsFunc(p.Names, registered) {
					continue
				}
				ok := slices.ContainsFunc(p.Names, func(n string) bool {
					ext, _, _ := v.r.externalFamily(n)
					return made[n] || ext
				})
				if ok {
					continue
				}
				v.add(Problem{Check: CheckNoProducer, Step: s.name,
					Message: fmt.Sprintf("%s%s waits for '%s', but no step on %s produces it, so the run would stall there", prefix, v.where(s), paramLabel(p), v.class),
					Hint:    fmt.Sprintf("return %s from some step, or make the input optional with step.Maybe", strings.Join(p.Names, " or "))})
			}
		}
		check(s.pub, "")
		check(s.PreconditionParams(), "the precondition of ")
	}
}

// reachability runs the event flow forward from the start events: a step
// becomes reachable when each of its required inputs (its precondition's
// included) can exist; its outputs then exist, and a request makes its
// family's responses and timeouts possible. It returns the steps the
// termination check should skip: those reported unreachable or whose inputs
// were already reported.
func (v *validator) reachability(steps []*Step) map[string]bool {
	explained := map[string]bool{} // steps whose inputs were already reported
	for _, p := range v.problems {
		switch p.Check {
		case CheckNoProducer, CheckStopInput, CheckDisplayInput:
			explained[p.Step] = true
		}
	}
	avail := map[string]bool{}
	fams := map[family]bool{}
	can := func(n string) bool {
		if avail[n] {
			return true
		}
		ext, fam, timeout := v.r.externalFamily(n)
		switch {
		case !ext:
			return false
		case fam == noFamily && !timeout:
			return true // a start event
		case fam == noFamily:
			return len(fams) > 0
		default:
			return fams[fam]
		}
	}
	ready := func(s *Step) bool {
		required := false
		for _, ps := range [][]Param{s.pub, s.PreconditionParams()} {
			for _, p := range ps {
				if !p.Kind.Required() {
					continue
				}
				required = true
				if !slices.ContainsFunc(p.Names, can) {
					return false
				}
			}
		}
		return required || slices.ContainsFunc(s.triggers, can)
	}
	reached := map[*Step]bool{}
	reach := func(s *Step) {
		reached[s] = true
		for _, n := range s.outputs {
			avail[n] = true
			if f := v.r.requestFamily(n); f != noFamily {
				fams[f] = true
			}
		}
	}
	// Steps with problems already reported are assumed to run, so that the
	// steps after them are not reported as unreachable too.
	for _, s := range steps {
		if len(s.problems) > 0 || explained[s.name] {
			reach(s)
		}
	}
	for changed := true; changed; {
		changed = false
		for _, s := range steps {
			if reached[s] || !ready(s) {
				continue
			}
			reach(s)
			changed = true
		}
	}
	skip := maps.Clone(explained) // for the termination check
	for _, s := range steps {
		if reached[s] && !explained[s.name] {
			continue
		}
		skip[s.name] = true
		if explained[s.name] {
			continue
		}
		var missing []string
		for _, ps := range [][]Param{s.pub, s.PreconditionParams()} {
			for _, p := range ps {
				if (p.Kind.Required() || len(s.triggers) == 0) && !slices.ContainsFunc(p.Names, can) {
					missing = append(missing, "'"+paramLabel(p)+"'")
				}
			}
		}
		if len(missing) == 0 {
			missing = append(missing, "any of its inputs")
		}
		v.add(Problem{Check: CheckUnreachable, Step: s.name,
			Message: fmt.Sprintf("%s is unreachable: no chain of events from a start event leads to %s", v.where(s), strings.Join(missing, " and ")),
			Hint:    "emit the missing input from a reachable step (responses count once a reachable step emits the request), or remove the step"})
	}
	return skip
}

// flow is the step graph: an edge s→t when an output of s triggers t, or
// when s emits a request whose response or timeout t takes.
type flow struct {
	steps []*Step
	succ  [][]int
}

func newFlow(r *rules, steps []*Step) *flow {
	g := &flow{steps: steps, succ: make([][]int, len(steps))}
	for i, s := range steps {
		var fams []family
		for _, n := range s.outputs {
			if f := r.requestFamily(n); f != noFamily {
				fams = append(fams, f)
			}
		}
		for j, t := range steps {
			if slices.ContainsFunc(t.triggers, func(n string) bool {
				if s.Declares(n) {
					return true
				}
				ext, fam, timeout := r.externalFamily(n)
				if !ext || (fam == noFamily && !timeout) {
					return false
				}
				return (fam == noFamily && len(fams) > 0) || slices.Contains(fams, fam)
			}) {
				g.succ[i] = append(g.succ[i], j)
			}
		}
	}
	return g
}

// termination flags steps from which no StopEvent can be emitted.
func (v *validator) termination(steps []*Step, g *flow, skip map[string]bool) {
	ends := make([]bool, len(steps))
	for i, s := range steps {
		ends[i] = slices.ContainsFunc(s.outputs, v.r.isStop)
	}
	for changed := true; changed; {
		changed = false
		for i := range steps {
			if ends[i] {
				continue
			}
			if slices.ContainsFunc(g.succ[i], func(j int) bool { return ends[j] }) {
				ends[i], changed = true, true
			}
		}
	}
	for i, s := range steps {
		if ends[i] || skip[s.name] || len(s.problems) > 0 {
			continue
		}
		v.add(Problem{Check: CheckNoStop, Step: s.name,
			Message: fmt.Sprintf("no StopEvent is reachable from %s, so a run that gets there never ends", v.where(s)),
			Hint:    "emit a StopEvent subclass from it, or an event that leads to a step that does (declare event.Event results with step.Emits)"})
	}
}

// cycles flags strongly connected components of the flow without a bound.
func (v *validator) cycles(g *flow) {
	for _, comp := range g.components() {
		i := comp[0]
		if len(comp) == 1 && !slices.Contains(g.succ[i], i) {
			continue
		}
		bounded := slices.ContainsFunc(comp, func(j int) bool {
			return g.steps[j].maxExec > 0 || g.steps[j].loop
		})
		if bounded {
			continue
		}
		names := make([]string, len(comp))
		for k, j := range comp {
			names[k] = g.steps[j].name
		}
		slices.Sort(names)
		desc := "step " + names[0] + " triggers itself"
		if len(names) > 1 {
			desc = "steps " + strings.Join(names, ", ") + " form a cycle"
		}
		v.add(Problem{Check: CheckCycle, Step: names[0],
			Message: fmt.Sprintf("the %s on %s with no bound, so a run could loop forever", desc, v.class),
			Hint:    "cap a step of the cycle with step.MaxExecutions(n), or declare the loop intended with step.Loop()"})
	}
}

// components returns the strongly connected components (Tarjan), each
// sorted, in order of their smallest step index.
func (g *flow) components() [][]int {
	n := len(g.steps)
	index := make([]int, n)
	low := make([]int, n)
	on := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var out [][]int
	next := 0
	var visit func(int)
	visit = func(u int) {
		index[u], low[u] = next, next
		next++
		stack = append(stack, u)
		on[u] = true
		for _, w := range g.succ[u] {
			if index[w] < 0 {
				visit(w)
				low[u] = min(low[u], low[w])
			} else if on[w] {
				low[u] = min(low[u], index[w])
			}
		}
		if low[u] == index[u] {
			var comp []int
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				comp = append(comp, w)
				if w == u {
					break
				}
			}
			slices.Sort(comp)
			out = append(out, comp)
		}
	}
	for i := range n {
		if index[i] < 0 {
			visit(i)
		}
	}
	slices.SortFunc(out, func(a, b []int) int { return a[0] - b[0] })
	return out
}
