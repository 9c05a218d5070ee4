package event

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// Persisted is the reference's persisted form of an event:
// the document of the agent_events collection, with EventData kept raw.
// Its event_data carries no type tags; EventName and EventParents supply
// them.
type Persisted struct {
	ID           *string         `json:"_id,omitempty"`
	AgentClass   string          `json:"agent_class"`
	AgentID      string          `json:"agent_id"`
	ThreadID     string          `json:"thread_id"`
	DisplayID    string          `json:"display_id"`
	RunID        string          `json:"run_id"`
	EventID      string          `json:"event_id"`
	EventType    string          `json:"event_type"` // "control_event" or "display_event"
	EventName    string          `json:"event_name"`
	EventData    json.RawMessage `json:"event_data"`
	EventParents []string        `json:"event_parents"`
}

// Event decodes EventData like Unmarshal, taking _event_name and
// _parent_event_names from EventName and EventParents where the data has
// none.
func (p *Persisted) Event() (Event, error) {
	return UnmarshalNamed(p.EventData, p.EventName, p.EventParents)
}

// UnmarshalNamed decodes data like Unmarshal, taking _event_name and
// _parent_event_names from name and parents where the data has none: the
// reference's from_raw_data, for fields that arrive without type tags (a
// stored document, an HTTP body) when the type is known by name only.
func UnmarshalNamed(data []byte, name string, parents []string) (Event, error) {
	d := getDecoder(validUTF8(data))
	defer putDecoder(d)
	d.event, d.defName, d.defParents, d.hasDefs = name, name, parents, true
	return d.eventAs(nil, true)
}

// UnmarshalValue decodes a value type of this package (or any plain Go
// value) with the event codec's tolerances: NaN and Infinity, both datetime
// forms, legacy chat messages, unknown keys ignored. v must be a non-nil
// pointer.
func UnmarshalValue(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("event: UnmarshalValue needs a non-nil pointer, got %T", v)
	}
	c, err := codecFor(rv.Type().Elem())
	if err != nil {
		return fmt.Errorf("event: UnmarshalValue %T: %w", v, err)
	}
	d := decoder{data: validUTF8(data)}
	if err := c.dec(&d, rv.Elem()); err != nil {
		return err
	}
	return d.end()
}

// MarshalValue encodes a value the way Marshal encodes event fields:
// floats with a fraction, every declared field, no HTML escaping.
func MarshalValue(v any) ([]byte, error) {
	if v == nil {
		return []byte("null"), nil
	}
	rv := reflect.ValueOf(v)
	c, err := codecFor(rv.Type())
	if err != nil {
		return nil, fmt.Errorf("event: MarshalValue %T: %w", v, err)
	}
	var e encoder
	if err := c.enc(&e, rv); err != nil {
		return nil, err
	}
	return e.buf, nil
}
