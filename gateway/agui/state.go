package agui

import (
	"encoding/json"
	"fmt"

	"github.com/saap-go/agent/event"
)

// StateSnapshotEvent is a display event an agent emits to share its state
// with AG-UI clients: it becomes STATE_SNAPSHOT. Agents that do not emit
// it share no state.
type StateSnapshotEvent struct {
	event.DisplayEvent
	// Snapshot is the whole state, any JSON value.
	Snapshot json.RawMessage `json:"snapshot" event:"required"`
}

// StateDeltaEvent is a display event carrying a change of the state shared
// by a StateSnapshotEvent, as an RFC 6902 JSON Patch: it becomes
// STATE_DELTA.
type StateDeltaEvent struct {
	event.DisplayEvent
	// Delta is the JSON Patch operations.
	Delta []json.RawMessage `json:"delta" event:"required"`
}

func init() {
	event.MustRegister[StateSnapshotEvent]()
	event.MustRegister[StateDeltaEvent]()
}

// Snapshot returns a StateSnapshotEvent holding state encoded as JSON;
// emit it from a step (step.Context.Emit).
func Snapshot(state any) (*StateSnapshotEvent, error) {
	raw, err := json.Marshal(state)
	if err != nil {
		return nil, fmt.Errorf("agui: state snapshot: %w", err)
	}
	e := event.New[StateSnapshotEvent]()
	e.Snapshot = raw
	return e, nil
}

// PatchOp is one JSON Patch operation of a StateDeltaEvent.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from,omitempty"`
	Value any    `json:"value,omitempty"`
}

// Delta returns a StateDeltaEvent holding ops.
func Delta(ops ...PatchOp) (*StateDeltaEvent, error) {
	e := event.New[StateDeltaEvent]()
	for i, op := range ops {
		switch op.Op {
		case "add", "remove", "replace", "move", "copy", "test":
		default:
			return nil, fmt.Errorf("agui: state delta: operation %d: unknown op %q", i, op.Op)
		}
		raw, err := json.Marshal(op)
		if err != nil {
			return nil, fmt.Errorf("agui: state delta: operation %d: %w", i, err)
		}
		e.Delta = append(e.Delta, raw)
	}
	return e, nil
}
