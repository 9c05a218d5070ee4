package process

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Process is a process class: its steps and where its work requests go.
type Process struct {
	// Class is the process class, the subject token process.<Class>.
	Class string
	// Steps are the process steps, declared with step.New.
	Steps []*step.Step
	// Routes say who does the work each work request type asks for.
	Routes []Route
	// Description is shown in discovery and in the graph.
	Description string
	// Config is a value of the process's configuration type holding its
	// defaults (see Config for reading it in a step). Discovery generates
	// the configuration form and schema of a process profile from it, as
	// for agents; a walkthrough's configuration is merged over it. nil: a
	// profile has only the base fields (process_id, name, description,
	// icon).
	Config any
}

// Kind is who does the work of a request.
type Kind string

// The kinds of work.
const (
	AgentWork   Kind = "agent"
	HumanWork   Kind = "human"
	ProgramWork Kind = "program"
)

// Who lists who may submit the answer to a human's or a program's work
// request. A submitter qualifies by id, by email or by one of its roles;
// an empty Who lets nobody submit.
type Who struct {
	IDs    []string `json:"user_ids"`
	Emails []string `json:"user_emails"`
	Roles  []string `json:"user_roles"`
}

// Allows reports whether u may submit.
func (w Who) Allows(u *event.UserIdentity) bool {
	if u == nil {
		return false
	}
	if u.ID != "" && slices.Contains(w.IDs, u.ID) || u.Email != "" && slices.Contains(w.Emails, u.Email) {
		return true
	}
	return slices.ContainsFunc(u.Roles, func(r string) bool { return slices.Contains(w.Roles, r) })
}

func (w Who) empty() bool { return len(w.IDs)+len(w.Emails)+len(w.Roles) == 0 }

// Route is the routing of one work request type: the data the runner fills
// into every request of that type a step returns (fields the step set
// itself are kept), and what comes back.
type Route struct {
	Kind    Kind
	Request string // wire name of the work request type
	// AgentClass and AgentID name the agent that does AgentWork.
	AgentClass, AgentID string
	// Answer is the wire name of the AgentWorkEvent type the agent's stop
	// event comes back as (AgentWork); default AgentWorkEvent.
	Answer string
	// Who may submit HumanWork or ProgramWork; for HumanWork it also fills
	// the request's user_ids, user_emails and user_roles.
	Who Who
	// Quiet clears the notify flag of HumanWork requests (the reference's
	// default is to notify the humans).
	Quiet bool
	// Timeout ends the walkthrough with a ProcessExceptionEvent when the
	// agent has not finished within it (AgentWork; 0: no timeout).
	Timeout time.Duration
}

// Agent routes the work requests of req's type to the agent class and id;
// the agent's stop event comes back as answer's type (an AgentWorkEvent
// subclass; nil for AgentWorkEvent itself).
func Agent(req event.Event, class, id string, answer event.Event) Route {
	r := Route{Kind: AgentWork, Request: nameOf(req), AgentClass: class, AgentID: id, Answer: "AgentWorkEvent"}
	if answer != nil {
		r.Answer = nameOf(answer)
	}
	return r
}

// Human routes the work requests of req's type to the humans who.
func Human(req event.Event, who Who) Route {
	return Route{Kind: HumanWork, Request: nameOf(req), Who: who}
}

// Program routes the work requests of req's type to the programs who
// (identified like users).
func Program(req event.Event, who Who) Route {
	return Route{Kind: ProgramWork, Request: nameOf(req), Who: who}
}

// WithTimeout returns r with a timeout (see Route.Timeout).
func (r Route) WithTimeout(d time.Duration) Route { r.Timeout = d; return r }

// nameOf is the wire name of a registered event type given as a typed nil
// or a value; "" if it is not registered.
func nameOf(e event.Event) string {
	if t, ok := event.TypeOf(e); ok {
		return t.Name
	}
	return ""
}

// compiled is a validated process.
type compiled struct {
	class  string
	wf     *step.Workflow
	routes map[string]Route // by request name
	config any              // the defaults, or nil
}

// Workflow validates p and returns its workflow, for discovery and for
// drawing (Graph, Mermaid). Every problem of the steps and of the routes is
// reported at once.
func (p *Process) Workflow() (*step.Workflow, error) {
	c, err := p.compile()
	if err != nil {
		return nil, err
	}
	return c.wf, nil
}

func (p *Process) compile() (*compiled, error) {
	if p == nil {
		return nil, errors.New("process: nil Process")
	}
	var problems []error
	wf, err := step.NewProcessWorkflow(p.Class, p.Steps...)
	if err != nil {
		problems = append(problems, err)
	}
	routes := map[string]Route{}
	for i, r := range p.Routes {
		if err := r.check(); err != nil {
			problems = append(problems, fmt.Errorf("process %s: route %d: %w", p.Class, i+1, err))
			continue
		}
		if _, dup := routes[r.Request]; dup {
			problems = append(problems, fmt.Errorf("process %s: two routes for %s; keep one", p.Class, r.Request))
			continue
		}
		routes[r.Request] = r
	}
	if wf != nil {
		for _, s := range wf.Steps() {
			for _, out := range s.Outputs() {
				if isA(out, "WorkRequestEvent") {
					if _, ok := routes[out]; !ok {
						problems = append(problems, fmt.Errorf("process %s: step %s returns %s, but no route says who does that work; add process.Agent, process.Human or process.Program for it", p.Class, s.Name(), out))
					}
				}
			}
		}
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return &compiled{class: p.Class, wf: wf, routes: routes, config: p.Config}, nil
}

func (r Route) check() error {
	if r.Request == "" {
		return errors.New("the request type is not a registered event type (register it with event.MustRegister)")
	}
	want := map[Kind]string{AgentWork: "AgentWorkRequestEvent", HumanWork: "HumanWorkRequestEvent", ProgramWork: "ProgramWorkRequestEvent"}[r.Kind]
	if want == "" {
		return fmt.Errorf("%s: unknown kind %q (agent, human or program)", r.Request, r.Kind)
	}
	if !isA(r.Request, want) {
		return fmt.Errorf("%s is not a %s, so it cannot route %s work", r.Request, want, r.Kind)
	}
	switch r.Kind {
	case AgentWork:
		if err := topic.ValidateToken("agent_class", r.AgentClass); err != nil {
			return fmt.Errorf("%s: %w", r.Request, err)
		}
		if err := topic.ValidateToken("agent_id", r.AgentID); err != nil {
			return fmt.Errorf("%s: %w", r.Request, err)
		}
		if r.Answer == "" || !isA(r.Answer, "AgentWorkEvent") {
			return fmt.Errorf("%s: the answer type %q is not a registered AgentWorkEvent", r.Request, r.Answer)
		}
	default:
		if r.Who.empty() {
			return fmt.Errorf("%s: Who is empty, so nobody could submit the work", r.Request)
		}
	}
	if r.Timeout < 0 {
		return fmt.Errorf("%s: negative timeout %v", r.Request, r.Timeout)
	}
	return nil
}

// isA reports whether the registered type name is ancestor or inherits it.
func isA(name, ancestor string) bool {
	t, ok := event.Lookup(name)
	return ok && slices.Contains(t.Parents, ancestor)
}
