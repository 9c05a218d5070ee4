package agenttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// Contracts is the snapshot of an agent's event contracts: every event its
// steps consume or produce, with its parents and its JSON Schema. A project
// commits it (WriteContracts) and a test compares the code against it
// (CheckContracts), so that a change which would break a deployed peer
// fails before it ships, as `buf breaking` does for protobuf.
type Contracts struct {
	Class  string          `json:"agent_class"`
	Events []EventContract `json:"events"` // sorted by name
}

// EventContract is one event of Contracts.
type EventContract struct {
	Name     string          `json:"name"`
	Parents  []string        `json:"parents"`
	Consumed bool            `json:"consumed,omitempty"` // a step takes it
	Produced bool            `json:"produced,omitempty"` // a step returns it
	Schema   json.RawMessage `json:"schema"`
}

// ContractsOf builds the contracts of workflow w from its steps' inputs
// (and preconditions') and declared outputs.
func ContractsOf(w *step.Workflow) (Contracts, error) {
	byName := map[string]*EventContract{}
	add := func(name string, consumed bool) error {
		c, ok := byName[name]
		if !ok {
			t, found := event.Lookup(name)
			if !found {
				return fmt.Errorf("agenttest: event %s of %s is not registered", name, w.Class())
			}
			schema, err := discovery.Schema(t.Go)
			if err != nil {
				return fmt.Errorf("agenttest: schema of %s: %w", name, err)
			}
			raw, err := json.Marshal(schema)
			if err != nil {
				return fmt.Errorf("agenttest: schema of %s: %w", name, err)
			}
			c = &EventContract{Name: name, Parents: slices.Clone(t.Parents), Schema: raw}
			byName[name] = c
		}
		if consumed {
			c.Consumed = true
		} else {
			c.Produced = true
		}
		return nil
	}
	for _, s := range w.Steps() {
		for _, p := range append(slices.Clone(s.Params()), s.PreconditionParams()...) {
			for _, n := range p.Names {
				if err := add(n, true); err != nil {
					return Contracts{}, err
				}
			}
		}
		for _, n := range s.Outputs() {
			if err := add(n, false); err != nil {
				return Contracts{}, err
			}
		}
	}
	out := Contracts{Class: w.Class(), Events: make([]EventContract, 0, len(byName))}
	for _, c := range byName {
		out.Events = append(out.Events, *c)
	}
	sort.Slice(out.Events, func(i, j int) bool { return out.Events[i].Name < out.Events[j].Name })
	return out, nil
}

// Marshal encodes c as the committed file holds it: indented JSON, keys
// sorted, a final newline, so that diffs stay small.
func (c Contracts) Marshal() ([]byte, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var v any // through a generic value: map keys come out sorted
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteContracts writes the contracts of w to path (for a test run with
// UpdateContractsEnv set, or a command such as `saap contracts`).
func WriteContracts(path string, w *step.Workflow) error {
	c, err := ContractsOf(w)
	if err != nil {
		return err
	}
	data, err := c.Marshal()
	if err != nil {
		return fmt.Errorf("agenttest: encode contracts of %s: %w", w.Class(), err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("agenttest: write contracts: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("agenttest: write contracts: %w", err)
	}
	return nil
}

// ReadContracts reads a snapshot written by WriteContracts.
func ReadContracts(path string) (Contracts, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Contracts{}, fmt.Errorf("agenttest: read contracts: %w", err)
	}
	var c Contracts
	if err := json.Unmarshal(data, &c); err != nil {
		return Contracts{}, fmt.Errorf("agenttest: contracts file %s: %w", path, err)
	}
	return c, nil
}

// UpdateContractsEnv is the environment variable that makes CheckContracts
// rewrite the snapshot instead of comparing (after a deliberate change).
const UpdateContractsEnv = "SAAP_UPDATE_CONTRACTS"

// CheckContracts compares the contracts of w with the snapshot at path and
// fails t with one line per breaking change, naming the change and why a
// deployed peer would break. Additions pass. A missing snapshot is written
// (a first snapshot breaks nothing); with UpdateContractsEnv=1 the
// snapshot is rewritten.
func CheckContracts(t testing.TB, w *step.Workflow, path string) {
	t.Helper()
	_, statErr := os.Stat(path)
	if os.Getenv(UpdateContractsEnv) == "1" || errors.Is(statErr, os.ErrNotExist) {
		if err := WriteContracts(path, w); err != nil {
			t.Fatal(err)
		}
		t.Logf("agenttest: wrote the event contracts of %s to %s", w.Class(), path)
		return
	}
	old, err := ReadContracts(path)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := ContractsOf(w)
	if err != nil {
		t.Fatal(err)
	}
	if changes := Breaking(old, cur); len(changes) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "the event contracts of %s break %s:", w.Class(), path)
		for _, c := range changes {
			b.WriteString("\n- ")
			b.WriteString(c.String())
		}
		fmt.Fprintf(&b, "\nif the change is deliberate and every peer is ready for it, rewrite the snapshot with %s=1", UpdateContractsEnv)
		t.Error(b.String())
	}
}

// Change is one breaking difference between two contract snapshots.
type Change struct {
	Event string
	Field string // "" for the event as a whole
	Kind  ChangeKind
	// Why says how a deployed peer breaks.
	Why string
}

// ChangeKind names a kind of breaking change.
type ChangeKind string

// Kinds of breaking changes.
const (
	EventRemoved    ChangeKind = "event removed or renamed"
	ParentRemoved   ChangeKind = "parent removed"
	FieldRemoved    ChangeKind = "field removed"
	FieldTypeChange ChangeKind = "field type changed"
	FieldRequired   ChangeKind = "field made required"
)

// String renders the change for a test failure.
func (c Change) String() string {
	where := c.Event
	if c.Field != "" {
		where += "." + c.Field
	}
	return fmt.Sprintf("%s: %s: %s", where, c.Kind, c.Why)
}

// Breaking lists the changes from old to cur that would break a peer built
// against old: an event no longer consumed or produced (removed or
// renamed), a parent dropped, and for each event both know a field removed,
// a field whose type changed, or a field that became required (or a new
// required field of a consumed event). Added events, optional fields and
// parents pass.
func Breaking(old, cur Contracts) []Change {
	now := map[string]EventContract{}
	for _, e := range cur.Events {
		now[e.Name] = e
	}
	var out []Change
	for _, o := range old.Events {
		n, ok := now[o.Name]
		if o.Consumed && (!ok || !n.Consumed) {
			out = append(out, Change{Event: o.Name, Kind: EventRemoved,
				Why: "deployed peers still send it, and no step takes it any more: their requests go unanswered"})
		}
		if o.Produced && (!ok || !n.Produced) {
			out = append(out, Change{Event: o.Name, Kind: EventRemoved,
				Why: "deployed peers wait for it or take it as input, and it is no longer published: they hang or never fire"})
		}
		if !ok {
			continue
		}
		for _, p := range o.Parents {
			if !slices.Contains(n.Parents, p) {
				out = append(out, Change{Event: o.Name, Kind: ParentRemoved,
					Why: fmt.Sprintf("peers match it by its parent chain (as a %s); they no longer recognise it", p)})
			}
		}
		out = append(out, compareSchemas(o, n)...)
	}
	return out
}

// schemaDoc is the part of a JSON Schema the comparison reads.
type schemaDoc struct {
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
	Defs       map[string]schemaDoc       `json:"$defs"`
}

func compareSchemas(o, n EventContract) []Change {
	var was, is schemaDoc
	if json.Unmarshal(o.Schema, &was) != nil || json.Unmarshal(n.Schema, &is) != nil {
		return []Change{{Event: o.Name, Kind: FieldTypeChange, Why: "a schema does not decode, so compatibility cannot be told"}}
	}
	out := compareObject(o, n, "", was, is)
	names := make([]string, 0, len(was.Defs))
	for name := range was.Defs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, d := range names {
		if nd, ok := is.Defs[d]; ok {
			out = append(out, compareObject(o, n, d+".", was.Defs[d], nd)...)
		}
	}
	return out
}

// compareObject compares the properties of one object schema; prefix names
// a nested definition.
func compareObject(o, n EventContract, prefix string, was, is schemaDoc) []Change {
	var out []Change
	fields := make([]string, 0, len(was.Properties))
	for f := range was.Properties {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	for _, f := range fields {
		np, ok := is.Properties[f]
		if !ok {
			why := "deployed consumers read it and get nothing"
			if !o.Produced {
				why = "deployed peers send it and the agent drops it in silence"
			}
			out = append(out, Change{Event: o.Name, Field: prefix + f, Kind: FieldRemoved, Why: why})
			continue
		}
		if ot, nt := typeOf(was.Properties[f]), typeOf(np); ot != nt {
			out = append(out, Change{Event: o.Name, Field: prefix + f, Kind: FieldTypeChange,
				Why: fmt.Sprintf("it was %s and is %s: a peer built against the old type fails to decode it or sends a value the agent refuses", ot, nt)})
		}
	}
	for _, f := range is.Required {
		if slices.Contains(was.Required, f) {
			continue
		}
		_, existed := was.Properties[f]
		if !existed && !n.Consumed {
			continue // a new field the agent always sends
		}
		why := "deployed peers that leave it out have their events refused"
		if !existed {
			why = "it is new and required: deployed peers do not send it, and their events are refused"
		}
		out = append(out, Change{Event: o.Name, Field: prefix + f, Kind: FieldRequired, Why: why})
	}
	return out
}

// typeOf is a property schema without its documentation and default: what
// a peer's decoder depends on.
func typeOf(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	strip(v)
	b, _ := json.Marshal(v)
	return string(b)
}

func strip(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range []string{"title", "description", "default", "examples"} {
			delete(x, k)
		}
		for _, e := range x {
			strip(e)
		}
	case []any:
		for _, e := range x {
			strip(e)
		}
	}
}
