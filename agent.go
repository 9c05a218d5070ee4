package agent

import (
	"reflect"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// An Agent is any value with steps. Optional interfaces add a class name
// (Classer), display texts (Describer), a typed configuration (Configurer)
// and translations (Localizer).
type Agent interface {
	// Steps returns the agent's steps. It is called once, by New.
	Steps() []*step.Step
}

// A Classer names its agent class: the subject token, stream and consumer
// name, and the class the gateway routes to. Without it the class is the Go
// type name of the agent (without package and pointer).
type Classer interface {
	Class() string
}

// A Describer gives the texts and icon the platform shows for the class in
// discovery.
type Describer interface {
	Describe() Description
}

// A Configurer gives the agent's typed configuration: the defaults, as a
// struct value (not a pointer). Each run gets a copy with the instance's
// profile from the platform merged over it (unless Standalone), available to
// steps as step.Context.Config(). A configuration type with a
// `Validate() error` method is validated after the merge.
type Configurer interface {
	DefaultConfig() any
}

// A Localizer gives the translator behind step.Context.Translate: the texts
// its steps show users, by key, in the platform's locales (step.Catalog is a
// map-based one). Without it a key is its own text.
type Localizer interface {
	Translator() step.Translator
}

// Description is what the platform shows for an agent class: its name,
// description and icon. Empty texts fall back to the
// class name; an empty icon to "mage:robot".
type Description struct {
	Name        event.LocaleString
	Description event.LocaleString
	Icon        string
}

// Info describes a runner that is ready.
type Info struct {
	Class    string // the agent class
	Stream   string // the class's JetStream stream, agent_<Class>_stream
	Consumer string // the shared durable, agent_runner_<Class>
	NATSURL  string // the server the runner talks to ("" with WithBus)
	Embedded bool   // whether the runner started its own nats-server
	Store    string // which state store: "jetstream-kv", "redis", "memory" or "custom"
	// Standalone: runs use the agent's default configuration and the
	// platform is never asked (Standalone, SAAP_STANDALONE=1, or the
	// embedded server).
	Standalone bool
}

// ClassOf returns the agent class of a: Classer's answer, else the Go type
// name.
func ClassOf(a Agent) string {
	if c, ok := a.(Classer); ok {
		return c.Class()
	}
	t := reflect.TypeOf(a)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return ""
	}
	return t.Name()
}

func isNilPointer(a Agent) bool {
	v := reflect.ValueOf(a)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return v.IsNil()
	}
	return false
}
