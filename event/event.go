package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Base holds the fields every event has; event types embed it, directly or
// through a library type.
type Base struct {
	// EventID identifies the event; any string is accepted when reading,
	// NewID's 24 lower-hex form is written.
	EventID string `json:"event_id"`
	// CreatedAt is the creation time in nanoseconds since the Unix epoch.
	// Readers must not assume the magnitude: tests use tiny values.
	CreatedAt int64 `json:"created_at"`

	meta *meta
}

// meta is decode metadata. It is never serialized as a field of its own.
type meta struct {
	name     string   // wire name of a fallback decode ("" = registered name)
	parents  []string // received parent list of a fallback decode
	fallback bool
	extras   []extra  // unknown members, raw, in wire order
	raws     []extra  // declared members written as raw JSON (SetRaw)
	missing  []string // required fields absent on the wire
	headers  map[string]string
}

type extra struct {
	key string
	raw []byte
}

// EventBase returns the embedded Base. It is what makes a struct an Event.
func (b *Base) EventBase() *Base { return b }

func (b *Base) ensureMeta() *meta {
	if b.meta == nil {
		b.meta = &meta{}
	}
	return b.meta
}

// Event is implemented by every *T whose T embeds Base.
type Event interface{ EventBase() *Base }

// BaseEvent is the last-resort type of Unmarshal, the equivalent of the
// reference's BaseEvent: an event of an unknown name whose parent list names
// no registered type. It is never registered and never matches a step.
type BaseEvent struct{ Base }

// Sentinel errors callers can branch on with errors.Is.
var (
	// ErrSyntax means the input is not JSON, even read tolerantly.
	ErrSyntax = errors.New("invalid JSON")
	// ErrType means a JSON value cannot represent the declared Go field.
	ErrType = errors.New("wrong JSON type")
	// ErrUnregistered means an event's Go type is not in the registry.
	ErrUnregistered = errors.New("event type not registered")
	// ErrDuplicate means a wire name is registered twice.
	ErrDuplicate = errors.New("duplicate event name")
	// ErrTypeMismatch means a payload names a registered type that the
	// requested type cannot hold.
	ErrTypeMismatch = errors.New("event type mismatch")
	// ErrInvalid means an event does not satisfy the reference's
	// constraints for producing.
	ErrInvalid = errors.New("invalid event")
)

// DecodeError reports a decode failure, naming the event and the field.
type DecodeError struct {
	Event string // wire name being decoded, "" when not yet known
	Field string // JSON path of the field, as messages[0].role; "" for the document
	Err   error  // wraps ErrSyntax, ErrType, ...
}

// Error implements error: "event: decode <name>: field <path>: <reason>".
func (e *DecodeError) Error() string {
	ev := e.Event
	if ev == "" {
		ev = "event"
	}
	if e.Field == "" {
		return fmt.Sprintf("event: decode %s: %v", ev, e.Err)
	}
	return fmt.Sprintf("event: decode %s: field %s: %v", ev, e.Field, e.Err)
}

// Unwrap returns the cause, so errors.Is finds ErrSyntax, ErrType, ...
func (e *DecodeError) Unwrap() error { return e.Err }

// ValidationError reports why an event may not be produced.
type ValidationError struct {
	Event string // wire name
	Field string // JSON name of the offending field
	Hint  string // what is wrong and how to fix it
}

// Error implements error: "event: invalid <name>: field <field>: <hint>".
func (e *ValidationError) Error() string {
	return fmt.Sprintf("event: invalid %s: field %s: %s", e.Event, e.Field, e.Hint)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Name returns the event's _event_name: the received name of a fallback
// decode, else the registered name.
func Name(e Event) string {
	if m := e.EventBase().meta; m != nil && m.name != "" {
		return m.name
	}
	if t, ok := TypeOf(e); ok {
		return t.Name
	}
	if _, ok := e.(*BaseEvent); ok {
		return "BaseEvent"
	}
	return ""
}

// Parents returns the event's _parent_event_names: the list as received for
// a fallback decode (possibly empty), else the registered list, self first.
// The result must not be modified.
func Parents(e Event) []string {
	if m := e.EventBase().meta; m != nil && m.fallback {
		return m.parents
	}
	if t, ok := TypeOf(e); ok {
		return t.Parents
	}
	return nil
}

// Has reports whether name is in Parents(e). Every category predicate is
// such a membership test.
func Has(e Event, name string) bool {
	if m := e.EventBase().meta; m != nil && m.fallback {
		return slices.Contains(m.parents, name)
	}
	if t, ok := TypeOf(e); ok {
		_, ok := t.set[name]
		return ok
	}
	return false
}

// IsFallback reports whether e was decoded through the ancestry fallback or
// the last resort. Such an event never triggers a step.
func IsFallback(e Event) bool {
	m := e.EventBase().meta
	return m != nil && m.fallback
}

// Missing returns the required fields that were absent on the wire,
// as dotted JSON paths. It is empty for events built in Go.
func Missing(e Event) []string {
	if m := e.EventBase().meta; m != nil {
		return m.missing
	}
	return nil
}

// Extra returns the raw JSON of an unknown member that was received with
// the event and will be written again.
func Extra(e Event, key string) ([]byte, bool) {
	if m := e.EventBase().meta; m != nil {
		for _, x := range m.extras {
			if x.key == key {
				return x.raw, true
			}
		}
	}
	return nil, false
}

// SetExtra keeps raw, which must be one valid JSON value, as the unknown
// member key of e, written after the declared fields as a received extra
// member is. The reference accepts and keeps such members, so a producer
// can attach data of its own to a standard event. A key that names a
// declared field or a computed key is never written.
func SetExtra(e Event, key string, raw []byte) error {
	if key == "" {
		return errors.New("event: SetExtra: empty key")
	}
	if !json.Valid(raw) {
		return fmt.Errorf("event: SetExtra %q: the value is not valid JSON", key)
	}
	m := e.EventBase().ensureMeta()
	raw = slices.Clone(raw)
	if j := slices.IndexFunc(m.extras, func(x extra) bool { return x.key == key }); j >= 0 {
		m.extras[j].raw = raw
	} else {
		m.extras = append(m.extras, extra{key: key, raw: raw})
	}
	return nil
}

// SetRaw makes Marshal write raw as the value of e's declared member key,
// in place of the Go field's value; decoding is not affected. A form of a
// HumanWorkRequestEvent uses it: the reference carries FormKit elements in
// a form's own members where the Go fields hold data.
func SetRaw(e Event, key string, raw []byte) error {
	t, ok := typeOfValue(e)
	if !ok {
		return fmt.Errorf("event: SetRaw on %T: %w", e, ErrUnregistered)
	}
	if _, declared := t.plan.byName[key]; !declared {
		return fmt.Errorf("event: SetRaw: %s declares no member %q (use SetExtra)", t.Name, key)
	}
	if !json.Valid(raw) {
		return fmt.Errorf("event: SetRaw %q: the value is not valid JSON", key)
	}
	m := e.EventBase().ensureMeta()
	raw = slices.Clone(raw)
	if j := slices.IndexFunc(m.raws, func(x extra) bool { return x.key == key }); j >= 0 {
		m.raws[j].raw = raw
	} else {
		m.raws = append(m.raws, extra{key: key, raw: raw})
	}
	return nil
}

// ExtraKeys lists the unknown members kept with e, in wire order.
func ExtraKeys(e Event) []string {
	m := e.EventBase().meta
	if m == nil {
		return nil
	}
	keys := make([]string, len(m.extras))
	for i, x := range m.extras {
		keys[i] = x.key
	}
	return keys
}

// Headers returns the X-AIHub headers of the message that delivered e.
// They are untrusted client input and never serialized.
func Headers(e Event) map[string]string {
	if m := e.EventBase().meta; m != nil {
		return m.headers
	}
	return nil
}

// SetHeaders records the X-AIHub headers of the delivering message.
func SetHeaders(e Event, h map[string]string) {
	e.EventBase().ensureMeta().headers = h
}

// Clone returns a deep copy of e's decode metadata with a shallow copy of
// its fields, so that metadata changes on one do not show on the other.
func Clone(e Event) Event {
	t, ok := TypeOf(e)
	if !ok {
		if be, ok := e.(*BaseEvent); ok {
			c := *be
			c.meta = be.meta.clone()
			return &c
		}
		return e
	}
	v := newValue(t.Go)
	v.Elem().Set(valueOf(e).Elem())
	c := v.Interface().(Event)
	c.EventBase().meta = e.EventBase().meta.clone()
	return c
}

func (m *meta) clone() *meta {
	if m == nil {
		return nil
	}
	c := *m
	c.parents = slices.Clone(m.parents)
	c.extras = slices.Clone(m.extras)
	c.raws = slices.Clone(m.raws)
	c.missing = slices.Clone(m.missing)
	c.headers = maps.Clone(m.headers)
	return &c
}

// Category and lifecycle predicates: membership tests on Parents.

// IsControl reports whether e is a control event.
func IsControl(e Event) bool { return Has(e, "ControlEvent") }

// IsDisplay reports whether e is a display event.
func IsDisplay(e Event) bool { return Has(e, "DisplayEvent") }

// IsStart reports whether e starts a run.
func IsStart(e Event) bool { return Has(e, "StartEvent") }

// IsStop reports whether e ends a run.
func IsStop(e Event) bool { return Has(e, "StopEvent") }

// IsException reports whether e ends a run with an error.
func IsException(e Event) bool { return Has(e, "ExceptionEvent") }

// IsUserMessage reports whether e is a user message.
func IsUserMessage(e Event) bool { return Has(e, "UserMessageEvent") }

// IsSemantic reports whether e is a semantic (tracing) event.
func IsSemantic(e Event) bool { return Has(e, "SemanticEvent") }

// IsChunk reports whether e is a streamed chunk of an answer.
func IsChunk(e Event) bool { return Has(e, "ChunkEvent") }

// IsThought reports whether e carries reasoning content.
func IsThought(e Event) bool { return Has(e, "ThoughtEvent") }

// IsLLMCost reports whether e reports LLM costs.
func IsLLMCost(e Event) bool { return Has(e, "LLMCostEvent") }

// IsHITLRequest reports whether e asks a human for input.
func IsHITLRequest(e Event) bool { return Has(e, "HumanInTheLoopRequestEvent") }

// IsHITLResponse reports whether e is a human's answer.
func IsHITLResponse(e Event) bool { return Has(e, "HumanInTheLoopResponseEvent") }

// IsAITLRequest reports whether e delegates to another agent.
func IsAITLRequest(e Event) bool { return Has(e, "AgentInTheLoopRequestEvent") }

// IsAITLResponse reports whether e is a delegate's answer.
func IsAITLResponse(e Event) bool { return Has(e, "AgentInTheLoopResponseEvent") }

// IsAITLException reports whether e reports a delegate's failure.
func IsAITLException(e Event) bool { return Has(e, "AgentInTheLoopExceptionEvent") }

// IsBITLRequest reports whether e asks a bot-channel user for input.
func IsBITLRequest(e Event) bool { return Has(e, "BotInTheLoopRequestEvent") }

// IsBITLResponse reports whether e is a bot-channel user's answer.
func IsBITLResponse(e Event) bool { return Has(e, "BotInTheLoopResponseEvent") }

// IsTimeout reports whether e is one of this SDK's wait timeouts.
func IsTimeout(e Event) bool { return Has(e, "WaitTimeoutEvent") }

// IsProcess reports whether e belongs to the process tree.
func IsProcess(e Event) bool { return Has(e, "ProcessEvent") }

// IsProcessStart reports whether e starts a process.
func IsProcessStart(e Event) bool { return Has(e, "ProcessStartEvent") }

// IsProcessStop reports whether e ends a process.
func IsProcessStop(e Event) bool { return Has(e, "ProcessStopEvent") }

// IsProcessException reports whether e ends a process with an error.
func IsProcessException(e Event) bool { return Has(e, "ProcessExceptionEvent") }

// IsWork reports whether e is a work event of a process.
func IsWork(e Event) bool { return Has(e, "WorkEvent") }

// IsWorkRequest reports whether e requests work in a process.
func IsWorkRequest(e Event) bool { return Has(e, "WorkRequestEvent") }

// IsHumanWork reports whether e is work submitted by a human.
func IsHumanWork(e Event) bool { return Has(e, "HumanWorkEvent") }

// IsProgramWork reports whether e is work submitted by a program.
func IsProgramWork(e Event) bool { return Has(e, "ProgramWorkEvent") }
