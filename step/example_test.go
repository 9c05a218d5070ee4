package step_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// The events of the examples. Condensed and Retrieved carry data between
// steps; Answered ends a run.
type (
	Condensed struct {
		event.ControlEvent
		Question string `json:"question"`
	}
	Retrieved struct {
		event.ControlEvent
		Passages []string `json:"passages"`
	}
	Answered struct {
		event.StopEvent
		Text string `json:"text"`
	}
	Work struct {
		event.ControlEvent
		Part int `json:"part"`
	}
	Review struct {
		event.ControlEvent
		Approved bool `json:"approved"`
	}
	Query struct {
		event.StartEvent
		Text string `json:"text" description:"the user's question"`
	}
)

func init() {
	event.MustRegister[Condensed]()
	event.MustRegister[Retrieved]()
	event.MustRegister[Answered]()
	event.MustRegister[Work]()
	event.MustRegister[Review]()
	event.MustRegister[Query]()
}

// RAG is a linear agent: each step is a method whose signature says what it
// consumes and produces.
type RAG struct{}

func (r *RAG) Condense(ctx step.Context, msg *event.UserMessageEvent) (*Condensed, error) {
	return &Condensed{Question: "what is NATS?"}, nil
}

func (r *RAG) Retrieve(ctx step.Context, q *Condensed) (*Retrieved, error) {
	return &Retrieved{Passages: []string{"NATS is a messaging system."}}, nil
}

func (r *RAG) Answer(ctx step.Context, q *Condensed, docs *Retrieved) (*Answered, error) {
	// Stream the answer while it is produced; control events are results.
	if err := ctx.Emit(&event.ChunkEvent{Content: "NATS is "}); err != nil {
		return nil, err
	}
	return &Answered{Text: "NATS is a messaging system."}, nil
}

// A linear agent: declare the steps, validate them as a workflow, and look
// at what the dispatcher will use.
func ExampleNewWorkflow() {
	r := &RAG{}
	wf, err := step.NewWorkflow("RAGAgent",
		step.New(r.Condense),
		step.New(r.Retrieve),
		step.New(r.Answer, step.MaxExecutions(1)),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range wf.Steps() {
		fmt.Printf("%s takes %v, emits %v\n", s.Name(), s.Triggers(), s.Outputs())
	}
	fmt.Println("a Condensed event is a candidate for:", stepNames(wf.Candidates("Condensed")))
	fmt.Println("start:", wf.StartEvents(), "stop:", wf.StopEvents())
	fmt.Print(wf.Mermaid())
	// Output:
	// Answer takes [Condensed Retrieved], emits [Answered]
	// Condense takes [UserMessageEvent], emits [Condensed]
	// Retrieve takes [Condensed], emits [Retrieved]
	// a Condensed event is a candidate for: [Answer Retrieve]
	// start: [UserMessageEvent] stop: [Answered]
	// flowchart TD
	//     start(["Start"])
	//     s0["Answer"]
	//     s1["Condense"]
	//     s2["Retrieve"]
	//     stop(["End"])
	//     start -->|"UserMessageEvent"| s1
	//     s1 -->|"Condensed"| s0
	//     s1 -->|"Condensed"| s2
	//     s2 -->|"Retrieved"| s0
	//     s0 -->|"Answered"| stop
}

// Fan-out and fan-in: one step returns a list of events, published in
// order; the aggregating step takes a Go array, so it runs exactly once,
// when the second Work has arrived.
func ExampleNew_fanOutFanIn() {
	split := func(ctx step.Context, q *Condensed) ([]*Work, error) {
		return []*Work{{Part: 1}, {Part: 2}}, nil
	}
	merge := func(ctx step.Context, parts [2]*Work) (*Answered, error) {
		return &Answered{Text: fmt.Sprint(parts[0].Part + parts[1].Part)}, nil
	}
	condense := func(ctx step.Context, msg *event.UserMessageEvent) (*Condensed, error) {
		return &Condensed{}, nil
	}
	wf, err := step.NewWorkflow("FanAgent",
		step.New(condense, step.Name("Condense")),
		step.New(split, step.Name("Split")),
		step.New(merge, step.Name("Merge")),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := wf.Step("Merge").Params()[0]
	fmt.Printf("Merge waits for %s: %v × %d\n", p.Kind, p.Names, p.Size)
	// Output:
	// Merge waits for Fixed: [Work] × 2
}

// An optional input with a precondition: Publish runs on a Retrieved event
// with or without a Review, but its precondition holds it back until a
// Review exists and approves. The precondition also reads Work events,
// which the step does not take: they are loaded for it but never trigger
// Publish.
func ExamplePrecondition() {
	approved := func(ctx step.Context, review step.Maybe[*Review], work step.Maybe[[]*Work]) (bool, error) {
		return review.OK && review.Value.Approved, nil
	}
	publish := func(ctx step.Context, docs *Retrieved, review step.Maybe[*Review]) (*Answered, error) {
		return &Answered{Text: strings.Join(docs.Passages, " ")}, nil
	}
	s := step.New(publish, step.Name("Publish"), step.Precondition(approved), step.MaxExecutions(1))
	for _, p := range s.Params() {
		fmt.Println("input", p.Name, p.Kind, p.Names)
	}
	for _, p := range s.PreconditionParams() {
		fmt.Println("precondition", p.Name, p.Kind, p.Names)
	}
	fmt.Println("triggers:", s.Triggers())
	// Output:
	// input arg1 Single [Retrieved]
	// input arg2 Optional [Review]
	// precondition arg1 Optional [Review]
	// precondition arg2 OptionalList [Work]
	// triggers: [Retrieved Review]
}

// Validation reports every problem at once, each with a hint.
func ExampleValidationError() {
	r := &RAG{}
	_, err := step.NewWorkflow("RAGAgent",
		step.New(r.Retrieve),
		step.New(r.Answer),
		step.New(func(ctx step.Context, a *Answered) error { return nil }, step.Name("AfterEnd")),
	)
	fmt.Println(err)
	var ve *step.ValidationError
	if errors.As(err, &ve) {
		fmt.Println(len(ve.Problems), "problems; the first is a", ve.Problems[0].Check, "problem")
	}
	// Output:
	// RAGAgent cannot run:
	// - step RAGAgent.AfterEnd takes 'arg1: Answered', a terminal event: the run ends when it arrives, so the step could never run on it
	//   hint: nothing may follow a StopEvent or ExceptionEvent; react before the end, e.g. in the step that emits it
	// - RAGAgent.Answer waits for 'arg1: Condensed', but no step on RAGAgent produces it, so the run would stall there
	//   hint: return Condensed from some step, or make the input optional with step.Maybe
	// - RAGAgent.Retrieve waits for 'arg1: Condensed', but no step on RAGAgent produces it, so the run would stall there
	//   hint: return Condensed from some step, or make the input optional with step.Maybe
	// - no step on RAGAgent consumes a start event
	//   hint: let the first step take a StartEvent subclass, e.g. msg *event.UserMessageEvent
	// 4 problems; the first is a stop-input problem
}

// The graph discovery publishes (network_graph): a Start
// and an End node around the steps, and one link per event flowing between
// them, with the fields the event type declares.
func ExampleWorkflow_Graph() {
	ask := func(ctx step.Context, q *Query) (*Condensed, error) { return &Condensed{Question: q.Text}, nil }
	answer := func(ctx step.Context, c *Condensed) (*Answered, error) { return &Answered{}, nil }
	wf, err := step.NewWorkflow("QA",
		step.New(ask, step.Name("Ask"), step.Description("condenses the question")),
		step.New(answer, step.Name("Answer"), step.Icon("mage:message")))
	if err != nil {
		fmt.Println(err)
		return
	}
	g := wf.Graph()
	for _, n := range g.Nodes {
		fmt.Printf("node %s (%s)\n", n.ID, n.Type)
	}
	for _, l := range g.Links {
		fmt.Printf("link %s -> %s: %s\n", l.Source, l.Target, l.EventName)
	}
	data, _ := json.Marshal(g.Links[0])
	fmt.Println(string(data))
	// Output:
	// node Start (start)
	// node Answer (step)
	// node Ask (step)
	// node End (stop)
	// link Start -> Ask: Query
	// link Ask -> Answer: Condensed
	// link Answer -> End: Answered
	// {"source":"Start","target":"Ask","edge_id":0,"event_name":"Query","event_full_name":"github.com/saap-go/agent/step_test.Query","is_start_event":true,"is_stop_event":false,"payload":{"text":{"type":"str","description":"the user's question"}}}
}

func stepNames(steps []*step.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Name())
	}
	return out
}
