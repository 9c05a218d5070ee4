package agenttest

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/saap-go/agent/interceptor"
	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Published is one message published for a run, with its subject.
// Control-and-display events (StartEvent, StopEvent, ExceptionEvent, HITL
// requests, ...) appear twice: once per subject, control first.
type Published struct {
	Topic topic.Agent
	Event event.Event
}

// Execution is one step execution: the step, the ids of the events bound to
// it (in parameter order, list elements in stream order), its error (nil on
// success; a precondition's error counts) and whether it was a re-run.
type Execution struct {
	Step   string
	Inputs []string
	Err    error
	// Rerun is set when the execution re-ran a claimed but uncompleted one
	// (after a crash or a failed completion).
	Rerun bool
	// Trigger is the control event whose arrival ran the step, as
	// published; nil if the harness did not see it. Equal compares
	// triggers by wire name and event id, and ignores a nil Trigger on
	// either side, so expectations may leave it out.
	Trigger event.Event
}

// Result is what happened in one run so far. It grows as the harness sends
// more events into the run.
type Result struct {
	h     *Harness
	topic topic.Agent // the run's identity; Type, Name and EventID unset

	mu        sync.Mutex
	events    []Published
	execs     []Execution
	triggers  []string // event id of each execution's trigger
	teardowns []interceptor.End
	dropped   []event.Event
	dead      []DeadLetter
}

// DeadLetter is a control message the engine dead-lettered: a refused
// event, or one it could not read.
type DeadLetter struct {
	Subject string // the message's original subject
	Reason  string // the engine's reason
}

// Topic returns the run's identity (class, agent, thread, display, run).
func (r *Result) Topic() topic.Agent { return r.topic }

// RunID returns the run id.
func (r *Result) RunID() string { return r.topic.Run }

// RunKey returns the run's state namespace in the store.
func (r *Result) RunKey() store.RunKey {
	return store.RunKey{Class: r.topic.Class, Run: r.topic.Run}
}

// Events returns every message published on the run's subjects, in publish
// order, including the events the harness sent.
func (r *Result) Events() []Published {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Control returns the events published on the run's control subject, in
// publish (stream) order.
func (r *Result) Control() []event.Event { return r.ofType(topic.Control) }

// Display returns the events published on the run's display subject, in
// publish order.
func (r *Result) Display() []event.Event { return r.ofType(topic.Display) }

func (r *Result) ofType(t topic.EventType) []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.Event
	for _, p := range r.events {
		if p.Topic.Type == t {
			out = append(out, p.Event)
		}
	}
	return out
}

// Names returns the wire names of the control events, in stream order.
func (r *Result) Names() []string {
	var out []string
	for _, e := range r.Control() {
		out = append(out, event.Name(e))
	}
	return out
}

// TerminalAs returns the run's terminal event (see Result.Terminal) as a T,
// and false if the run has none or it is of another type; it never
// panics, unlike a type assertion on a nil Terminal:
//
//	stop, ok := agenttest.TerminalAs[*event.StopEvent](res)
func TerminalAs[T event.Event](r *Result) (T, bool) {
	t, ok := r.Terminal().(T)
	return t, ok
}

// Terminal returns the run's first StopEvent or ExceptionEvent (by parent
// chain) on the control subject, or nil. TerminalAs gives it typed.
func (r *Result) Terminal() event.Event {
	if r == nil {
		return nil
	}
	for _, e := range r.Control() {
		if event.IsStop(e) || event.IsException(e) {
			return e
		}
	}
	return nil
}

// Count returns the number of distinct events named name (by wire name)
// published for the run, on either subject.
func (r *Result) Count(name string) int { return len(r.IDs(name)) }

// IDs returns the ids of the distinct events named name, in publish order.
func (r *Result) IDs(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for _, p := range r.events {
		if event.Name(p.Event) == name && !slices.Contains(ids, p.Event.EventBase().EventID) {
			ids = append(ids, p.Event.EventBase().EventID)
		}
	}
	return ids
}

// Get returns the events named name (first copy of each id), in publish
// order.
func (r *Result) Get(name string) []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.Event
	seen := map[string]bool{}
	for _, p := range r.events {
		id := p.Event.EventBase().EventID
		if event.Name(p.Event) == name && !seen[id] {
			seen[id] = true
			out = append(out, p.Event)
		}
	}
	return out
}

// Executions returns the run's step executions in the order they ran.
func (r *Result) Executions() []Execution {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.execs)
	for i := range out {
		out[i].Trigger = r.eventLocked(r.triggers[i])
	}
	return out
}

// eventLocked returns the first published copy of the event id, or nil.
func (r *Result) eventLocked(id string) event.Event {
	if id == "" {
		return nil
	}
	for _, p := range r.events {
		if p.Event.EventBase().EventID == id {
			return p.Event
		}
	}
	return nil
}

// Steps returns the names of the executed steps in the order they ran.
func (r *Result) Steps() []string {
	var out []string
	for _, x := range r.Executions() {
		out = append(out, x.Step)
	}
	return out
}

// Teardowns returns how the engine handled the run's terminal events (one
// entry per delivery of a terminal event).
func (r *Result) Teardowns() []interceptor.End {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.teardowns)
}

// Dropped returns the outputs the engine refused to publish because the run
// had already published its terminal event.
func (r *Result) Dropped() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.dropped)
}

// DeadLetters returns the control messages naming the run that the engine
// dead-lettered, in order.
func (r *Result) DeadLetters() []DeadLetter {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.dead)
}

// Ended reports how the run ended ("completed", "crashed" or "" while the
// run is open), read from the store.
func (r *Result) Ended() string {
	v, _, err := engine.RunEnd(r.h.ctx, r.h.store, r.RunKey())
	if err != nil {
		r.h.t.Fatalf("agenttest: read the run's end: %v", err)
	}
	return v
}

// Stalled describes a run that went quiet without ending, and returns ""
// for a run that published its terminal event or waits for an answer to an
// open HITL, BITL or AITL request. The description lists the run's control
// events and, per step that has not run, which inputs it has and which it
// still waits for, so a workflow that hangs says where:
//
//	run 6955b9000000000000000002 went quiet without a terminal event or an open request
//	  control events: StartEvent, A
//	  Join has A; waits for B
//	  Other needs C (none of its inputs is there)
//
// FailOnStall makes every Start and Send check it.
func (r *Result) Stalled() string {
	if r.Terminal() != nil {
		return ""
	}
	ctrl := r.Control()
	open := 0
	counts := map[string]int{}
	var names []string
	for _, e := range ctrl {
		switch {
		case event.IsHITLRequest(e), event.IsBITLRequest(e), event.IsAITLRequest(e):
			open++
		case event.IsHITLResponse(e), event.IsBITLResponse(e), event.IsAITLResponse(e), event.IsAITLException(e):
			open = max(open-1, 0)
		}
		n := event.Name(e)
		if counts[n] == 0 {
			names = append(names, n)
		}
		if !event.IsFallback(e) {
			counts[n]++
		}
	}
	if open > 0 {
		return ""
	}
	ran := map[string]bool{}
	var failed []string
	for _, x := range r.Executions() {
		ran[x.Step] = true
		if x.Err != nil {
			failed = append(failed, fmt.Sprintf("  %s failed: %v", x.Step, x.Err))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "run %s went quiet without a terminal event or an open request\n", r.topic.Run)
	list := make([]string, len(names))
	for i, n := range names {
		list[i] = n
		if c := counts[n]; c > 1 {
			list[i] = fmt.Sprintf("%s ×%d", n, c)
		}
	}
	fmt.Fprintf(&b, "  control events: %s\n", cmpOr(strings.Join(list, ", "), "none"))
	for _, s := range r.h.w.Steps() {
		if ran[s.Name()] {
			continue
		}
		var has, missing []string
		for _, p := range s.Params() {
			n := 0
			for _, name := range p.Names {
				n += counts[name]
			}
			label := strings.Join(p.Names, " | ")
			switch p.Kind {
			case step.Fixed:
				switch {
				case n == p.Size:
					has = append(has, fmt.Sprintf("%d %s", n, label))
				case n < p.Size:
					missing = append(missing, fmt.Sprintf("%d more %s (has %d of %d)", p.Size-n, label, n, p.Size))
				default:
					missing = append(missing, fmt.Sprintf("exactly %d %s (has %d)", p.Size, label, n))
				}
			default:
				if n > 0 {
					has = append(has, label)
				} else if p.Kind.Required() {
					missing = append(missing, label)
				}
			}
		}
		switch {
		case len(missing) == 0:
			fmt.Fprintf(&b, "  %s has every input (%s) but did not run: its precondition said no or MaxExecutions was reached\n",
				s.Name(), strings.Join(has, ", "))
		case len(has) == 0:
			fmt.Fprintf(&b, "  %s needs %s (none of its inputs is there)\n", s.Name(), strings.Join(missing, ", "))
		default:
			fmt.Fprintf(&b, "  %s has %s; waits for %s\n", s.Name(), strings.Join(has, ", "), strings.Join(missing, ", "))
		}
	}
	for _, f := range failed {
		b.WriteString(f + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
