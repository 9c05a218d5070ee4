package discovery

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// DefaultIcon is the reference's default icon of an agent class.
const DefaultIcon = "mage:robot"

// DefaultProcessIcon is the reference's default icon of a process class.
const DefaultProcessIcon = "mage:broadcast"

// Class is what discovery tells about an agent class beyond its workflow:
// display texts, the configuration and the UI hints of the reference.
type Class struct {
	// Name and Description are the class's display texts. A zero Name
	// becomes the class name in every locale.
	Name, Description event.LocaleString
	// Icon is an Iconify name; empty means DefaultIcon.
	Icon string
	// Features are the chat toggles the class serves.
	Features []event.ChatFeature
	// Form is the configuration UI: FormKit element objects. nil: the form
	// is generated (see Form) from Config, with the base fields every
	// profile has.
	Form []json.RawMessage
	// Config is a value of the configurable part of the agent's
	// configuration type, holding its defaults. Its JSON Schema (see
	// ConfigSchema), after the base fields every profile has (agent_id,
	// name, description, icon, and cron for a schedulable class), is what
	// the API validates instance configurations with. nil: the class has
	// only the base fields.
	Config any
	// ConfigClass names the configuration type; empty means the Go type
	// name of Config.
	ConfigClass string
	// Templates are profile templates ({name, description, icon?, ...}).
	Templates []json.RawMessage
}

// Build returns the AgentClassDiscoveryResponseEvent that describes the
// agent class of wf: its start, stop and HITL events with
// their JSON Schemas (see Schema), whether it is conversational (a start
// event is a UserMessageEvent or a subclass) or schedulable (a start event
// is a CronStartEvent), its configuration schema and its network graph. The
// event has a new id; Serve stamps a fresh one on every answer.
func Build(wf *step.Workflow, c Class) (*event.AgentClassDiscoveryResponseEvent, error) {
	if wf == nil {
		return nil, errors.New("discovery: Build needs a workflow")
	}
	class := wf.Class()
	r := &event.AgentClassDiscoveryResponseEvent{
		AgentClass:        class,
		Name:              c.Name.Ptr(),
		Description:       c.Description.Ptr(),
		Icon:              c.Icon,
		SupportedFeatures: slices.Clone(c.Features),
		Form:              slices.Clone(c.Form),
		Templates:         slices.Clone(c.Templates),
	}
	if c.Name == (event.LocaleString{}) {
		r.Name = event.L(class, class, class, class).Ptr()
	}
	if r.Icon == "" {
		r.Icon = DefaultIcon
	}
	if r.SupportedFeatures == nil {
		r.SupportedFeatures = []event.ChatFeature{}
	}
	slices.Sort(r.SupportedFeatures) // the reference sends them sorted
	if r.Templates == nil {
		r.Templates = []json.RawMessage{}
	}

	var errs []error
	specs := func(names []string) []event.EventSpecs {
		out := make([]event.EventSpecs, 0, len(names))
		for _, n := range names {
			s, err := EventSpec(n)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, s)
		}
		return out
	}
	r.StartEvents = specs(wf.StartEvents())
	r.StopEvents = specs(wf.StopEvents())
	r.HITLRequestEvents = specs(wf.HITLRequests())
	r.HITLResponseEvents = specs(wf.HITLResponses())
	for _, n := range wf.StartEvents() {
		if t, ok := event.Lookup(n); ok {
			r.IsConversational = r.IsConversational || t.IsA("UserMessageEvent")
			r.IsSchedulable = r.IsSchedulable || t.IsA("CronStartEvent")
		}
	}

	cs, err := configSpecs(c, class, r.IsSchedulable)
	if err != nil {
		errs = append(errs, err)
	}
	r.AgentConfigSpecs = cs
	if c.Form == nil {
		form, err := Form(c.Config, r.IsSchedulable)
		if err != nil {
			errs = append(errs, err)
		}
		r.Form = form
	}
	graph, err := json.Marshal(wf.Graph())
	if err != nil {
		errs = append(errs, fmt.Errorf("discovery: network graph: %w", err))
	}
	r.NetworkGraph = graph
	if r.Form == nil {
		r.Form = []json.RawMessage{}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	event.Stamp(r)
	return r, nil
}

// ProcessConfigSpecs returns the configuration specs of a process class:
// its configuration class (configClass, or the Go type name of config, or
// the process class) and the JSON Schema the platform validates a process
// profile with: the base fields (process_id, name, description, icon)
// followed by the fields of config (a value holding the defaults, or nil).
func ProcessConfigSpecs(config any, processClass, configClass string) (*event.ConfigSpecs, error) {
	return configSpecsOf(processProfile, Class{Config: config, ConfigClass: configClass}, processClass, false)
}

func configSpecs(c Class, class string, schedulable bool) (*event.ConfigSpecs, error) {
	return configSpecsOf(agentProfile, c, class, schedulable)
}

func configSpecsOf(p profile, c Class, class string, schedulable bool) (*event.ConfigSpecs, error) {
	cs := &event.ConfigSpecs{ConfigClass: c.ConfigClass}
	if cs.ConfigClass == "" {
		// The Go type's name, or without one the agent class, as the
		// reference names the configuration of a class.
		cs.ConfigClass = class
		if c.Config != nil {
			t := reflect.TypeOf(c.Config)
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			cs.ConfigClass = t.Name()
		}
	}
	s, err := p.configurableSchema(c.Config, cs.ConfigClass, schedulable)
	if err != nil {
		return nil, err
	}
	cs.ConfigSchema = s
	return cs, nil
}

// EventSpec returns the discovery description of the registered event type
// name: {event_name, event_schema, event_parents}.
func EventSpec(name string) (event.EventSpecs, error) {
	t, ok := event.Lookup(name)
	if !ok || t.Go == nil {
		return event.EventSpecs{}, fmt.Errorf("discovery: event type %q is not registered", name)
	}
	s, err := Schema(t.Go)
	if err != nil {
		return event.EventSpecs{}, err
	}
	return event.EventSpecs{EventName: t.Name, EventSchema: s, EventParents: slices.Clone(t.Parents)}, nil
}
