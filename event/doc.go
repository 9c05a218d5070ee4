// Package event is the wire-compatible event model of the Swiss AI Agent
// Protocol: the base fields, the categories (control, display, both), the
// registry keyed by wire name, the JSON codec and the core event library.
//
// An event type is a Go struct named like its wire name that embeds its
// parent type (and through it Base):
//
//	type CondensedEvent struct {
//		event.ControlEvent
//		Question string `json:"question" event:"required"`
//	}
//
//	func init() { event.MustRegister[CondensedEvent]() }
//
// Registration computes _parent_event_names from the embedded event types
// (plus WithParents for multiple inheritance and opaque generic names):
// the type itself first, then its ancestors deepest first, names of equal
// depth in byte order, so ControlEvent comes before DisplayEvent. BaseEvent
// is never listed.
//
// Marshal writes what the reference writes: every declared field, floats
// always with a fraction, unknown members received with the event, then
// _event_name and _parent_event_names. A field left at its Go zero value is
// written as the reference's default where the two differ, so that an event
// built as a struct literal (&event.ChunkEvent{Content: s}) reads back in
// Python as the same event: lists as [] (never null), model_name "aihub",
// http_status_code 500, a HITL subtype's hitl_type, a request's reply
// topic; other unset fields are null.
// Unmarshal reads everything Python producers emit (spaced separators,
// \uXXXX escapes, NaN and Infinity, both datetime forms, legacy chat
// messages, any string as event_id) and resolves the Go type the way the
// reference does: exact wire name first, else the first registered name of
// the received parent list, else *BaseEvent. An event decoded through that
// fallback keeps its wire name, parents and unknown fields, answers the
// category predicates (IsStop, IsControl, ...) from the received list, and
// never triggers a step (IsFallback).
// https://github.com/saap-go/agent/blob/main/docs/compatibility.md lists where
// reading differs from the Python platform.
//
// New builds an event with the reference's defaults applied and a fresh id
// (NewID: 24 lower-hex characters, ObjectId-compatible, sortable by time);
// Stamp fills only the id and the time. UnmarshalAs decodes with a chosen
// last resort, like calling deserialize_event on a class; UnmarshalNamed
// supplies the name and parents of fields that arrive without them (an HTTP
// body, from_raw_data), and Persisted reads the reference's stored
// documents with it; UnmarshalValue and MarshalValue apply the same codec to
// value types such as ChatMessage. A *DecodeError names the event and the
// field's path down to the list element (messages[1].blocks[0].text).
//
// Reading is lenient and producing strict: a missing required field is not
// a decode error but is reported by Missing, and Validate checks an event
// before it is produced, reporting every problem with the event's name and
// the field's path. Each type's defaults form one table, read once at
// registration: struct tags declare what the reference declares,
// `event:"required"` for a field without default, `event:"default=<json or
// text>"` for the default applied when the key is absent on the wire and
// written for a zero value, `event:"oneof=a|b"` for a fixed set of values;
// the registration options WithDefault, WithLiteral and WithReply change an
// inherited field, as a Python subclass redeclares it. Booleans are the
// exception: false is written as false, since it is a value a producer may
// set (SearchKnowledgeEvent.CiteSources defaults to true when read).
package event
