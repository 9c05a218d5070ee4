package step_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

func TestGraphJSON(t *testing.T) {
	w, err := step.NewWorkflow("Test",
		named(begin, "begin", step.Description("starts"), step.Icon("mage:rocket")),
		named(middle, "middle"), named(finish, "finish"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(w.Graph())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	node := func(id, typ, label string, desc, icon any) map[string]any {
		return map[string]any{"id": id, "type": typ, "label": label, "description": desc, "icon": icon}
	}
	link := func(src, dst, name string, edge float64, start, stop bool, payload map[string]any) map[string]any {
		return map[string]any{"source": src, "target": dst, "edge_id": edge, "event_name": name,
			"event_full_name": "github.com/saap-go/agent/step_test." + name,
			"is_start_event":  start, "is_stop_event": stop, "payload": payload}
	}
	field := func(typ string, desc any) map[string]any { return map[string]any{"type": typ, "description": desc} }
	want := map[string]any{
		"directed": true, "multigraph": false, "graph": map[string]any{},
		"nodes": []any{
			node("Start", "start", "Start", nil, nil),
			node("begin", "step", "begin", "starts", "mage:rocket"),
			node("finish", "step", "finish", nil, nil),
			node("middle", "step", "middle", nil, nil),
			node("End", "stop", "End", nil, nil),
		},
		"links": []any{
			link("Start", "begin", "Start", 0, true, false, map[string]any{"question": field("str", "what the user asked")}),
			link("begin", "middle", "A", 0, false, false, map[string]any{"n": field("int", nil)}),
			link("middle", "finish", "B", 0, false, false, map[string]any{"n": field("int", nil)}),
			link("finish", "End", "Done", 0, false, true, map[string]any{"answer": field("str", nil)}),
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("network_graph (-want +got):\n%s\n%s", diff, data)
	}
}

func TestGraphInTheLoopAndEdgeIDs(t *testing.T) {
	// A request is linked to the consumers of the response of the same
	// name, as the reference draws it: labelled with the name before
	// "Request", both full names, an empty payload. Ask and Reply are an
	// in-the-loop pair whose names do not pair: no link, as in the
	// reference.
	askInput := func(step.Context, *Start) (*event.HumanInTheLoopInputRequestEvent, error) { return nil, nil }
	answered := func(step.Context, *event.HumanInTheLoopInputResponseEvent) (*Done, error) { return nil, nil }
	w, err := step.NewWorkflow("Test", named(askInput, "ask"), named(answered, "answered"),
		named(ask, "ask2"), named(replied, "replied"))
	if err != nil {
		t.Fatal(err)
	}
	var synthetic []step.GraphLink
	for _, l := range w.Graph().Links {
		if l.Target == "answered" || l.Target == "replied" {
			synthetic = append(synthetic, l)
		}
	}
	want := step.GraphLink{Source: "ask", Target: "answered", EventName: "HumanInTheLoopInput",
		EventFullName: "github.com/saap-go/agent/event.HumanInTheLoopInputRequestEvent → " +
			"github.com/saap-go/agent/event.HumanInTheLoopInputResponseEvent",
		Payload: map[string]step.PayloadField{}}
	if diff := cmp.Diff([]step.GraphLink{want}, synthetic); diff != "" || synthetic[0].Payload == nil {
		t.Errorf("request→response links (-want +got):\n%s", diff)
	}
	// Parallel links between the same nodes count up.
	w, err = step.NewWorkflow("Test",
		named(func(step.Context, *Start) (step.Either[*A, *B], error) { return step.Either[*A, *B]{}, nil }, "begin"),
		named(func(step.Context, *A, step.Maybe[*B]) (*Done, error) { return nil, nil }, "end"))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string][]int{}
	for _, l := range w.Graph().Links {
		ids[l.Source+">"+l.Target+":"+l.EventName] = append(ids[l.Source+">"+l.Target+":"+l.EventName], l.EdgeID)
	}
	if diff := cmp.Diff(map[string][]int{
		"Start>begin:Start": {0}, "begin>end:A": {0}, "begin>end:B": {1}, "end>End:Done": {0},
	}, ids); diff != "" {
		t.Errorf("edge ids (-want +got):\n%s", diff)
	}
}

func TestMermaid(t *testing.T) {
	w, err := step.NewWorkflow("Test", named(begin, "begin"), named(middle, "middle"), named(finish, "finish"))
	if err != nil {
		t.Fatal(err)
	}
	want := `flowchart TD
    start(["Start"])
    s0["begin"]
    s1["finish"]
    s2["middle"]
    stop(["End"])
    start -->|"Start"| s0
    s0 -->|"A"| s2
    s2 -->|"B"| s1
    s1 -->|"Done"| stop
`
	if diff := cmp.Diff(want, w.Mermaid()); diff != "" {
		t.Errorf("Mermaid (-want +got):\n%s", diff)
	}
}

type Mixin struct {
	Tags []string `json:"tags"`
}

// Rich exercises the payload description of every kind of field.
type Rich struct {
	event.ControlEvent
	Mixin
	Name    string            `json:"name" jsonschema_description:"display name"`
	Count   int64             `json:"count"`
	Score   float64           `json:"score"`
	Flag    bool              `json:"flag,omitempty"`
	Maybe   *string           `json:"maybe"`
	Attrs   map[string]int    `json:"attrs"`
	Blob    []byte            `json:"blob"`
	Any     any               `json:"any"`
	Nested  event.ChatMessage `json:"nested"`
	Skipped string            `json:"-"`
	NoTag   string
	hidden  string
}

func init() { event.MustRegister[Rich]() }

func TestGraphPayloadTypes(t *testing.T) {
	w, err := step.NewWorkflow("Test",
		named(func(step.Context, *Start) (*Rich, error) { return nil, nil }, "begin"),
		named(func(_ step.Context, r *Rich) (*Done, error) { return &Done{Answer: r.hidden}, nil }, "end"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]step.PayloadField
	for _, l := range w.Graph().Links {
		if l.EventName == "Rich" {
			got = l.Payload
		}
	}
	desc := "display name"
	want := map[string]step.PayloadField{
		"tags": {Type: "str[]"}, "name": {Type: "str", Description: &desc}, "count": {Type: "int"},
		"score": {Type: "float"}, "flag": {Type: "bool"}, "maybe": {Type: "Optional[str]"},
		"attrs": {Type: "Dict[str, int]"}, "blob": {Type: "bytes"}, "any": {Type: "Any"},
		"nested": {Type: "ChatMessage"}, "NoTag": {Type: "str"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
}
