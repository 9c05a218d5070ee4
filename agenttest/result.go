package agenttest

import (
	"slices"
	"sync"

	"github.com/saap-go/agent/dispatch"
	"github.com/saap-go/agent/event"
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
// success; a precondition's error counts, D11) and whether it was a re-run.
type Execution struct {
	Step   string
	Inputs []string
	Err    error
	// Rerun is set when the execution re-ran a claimed but uncompleted one
	// (after a crash or a failed completion, D1).
	Rerun bool
}

// Result is what happened in one run so far. It grows as the harness sends
// more events into the run.
type Result struct {
	h     *Harness
	topic topic.Agent // the run's identity; Type, Name and EventID unset

	mu        sync.Mutex
	events    []Published
	execs     []Execution
	teardowns []dispatch.Teardown
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
func (r *Result) RunKey() dispatch.RunKey {
	return dispatch.RunKey{Class: r.topic.Class, Run: r.topic.Run}
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

// Terminal returns the run's first StopEvent or ExceptionEvent (by parent
// chain) on the control subject, or nil.
func (r *Result) Terminal() event.Event {
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
	return slices.Clone(r.execs)
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
func (r *Result) Teardowns() []dispatch.Teardown {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.teardowns)
}

// Dropped returns the outputs the engine refused to publish because the run
// had already published its terminal event (D4).
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

// Ended reports the run's end marker ("completed", "crashed" or "" while the
// run is open), read from the store.
func (r *Result) Ended() string {
	v, _, err := r.h.store.Marker(r.h.ctx, r.RunKey(), dispatch.MarkerEnd)
	if err != nil {
		r.h.t.Fatalf("agenttest: read end marker: %v", err)
	}
	return v
}
