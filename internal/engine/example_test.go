package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/saap-go/agent/internal/engine"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Events of the examples.
type (
	Question struct {
		event.StartEvent
		Text string `json:"text"`
	}
	Retrieved struct {
		event.ControlEvent
		Docs []string `json:"docs"`
	}
	Answer struct {
		event.StopEvent
		Text string `json:"text"`
	}
	Work struct {
		event.ControlEvent
		Part int `json:"part"`
	}
	Hint struct {
		event.ControlEvent
		Text string `json:"text"`
	}
	Query struct {
		event.ControlEvent
		Text string `json:"text"`
	}
)

func init() {
	event.MustRegister[Question]()
	event.MustRegister[Retrieved]()
	event.MustRegister[Answer]()
	event.MustRegister[Work]()
	event.MustRegister[Hint]()
	event.MustRegister[Query]()
}

// runner wires an engine to a manual in-memory bus, as agenttest does, and
// prints the control events of the class as they are published.
type runner struct {
	b   *memory.Bus
	run topic.Agent
}

func newRunner(w *step.Workflow) *runner {
	ctx := context.Background()
	b := memory.New(memory.Options{Manual: true})
	eng, err := engine.New(w, b, memstore.New(),
		engine.Sequential(), engine.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	class := w.Class()
	if err := b.EnsureStream(ctx, bus.AgentStream(class)); err != nil {
		panic(err)
	}
	if _, err := b.Consume(ctx, bus.RunnerConsumer(class), func(d bus.Delivery) { eng.Handle(ctx, d) }); err != nil {
		panic(err)
	}
	pattern, _ := topic.ClassControl(class)
	if _, err := b.Subscribe(ctx, pattern, "", func(m *bus.Msg) {
		e, err := event.Unmarshal(m.Data)
		if err != nil {
			panic(err)
		}
		fmt.Println(describe(e))
	}); err != nil {
		panic(err)
	}
	run := event.NewID()
	return &runner{b: b, run: topic.Agent{Class: class, ID: "demo", Thread: event.NewID(), Display: run, Run: run}}
}

// send publishes a control event into the run and runs to quiescence.
func (r *runner) send(e event.Event) {
	ctx := context.Background()
	event.Stamp(e)
	data, err := event.Marshal(e)
	if err != nil {
		panic(err)
	}
	subject, err := r.run.Event(topic.Control, event.Name(e), e.EventBase().EventID).Subject()
	if err != nil {
		panic(err)
	}
	if _, err := r.b.PublishStream(ctx, &bus.Msg{Subject: subject, Data: data}, e.EventBase().EventID); err != nil {
		panic(err)
	}
	r.b.DeliverAll(ctx)
}

func describe(e event.Event) string {
	switch e := e.(type) {
	case *Question:
		return "Question " + e.Text
	case *Retrieved:
		return "Retrieved " + strings.Join(e.Docs, ",")
	case *Answer:
		return "Answer " + e.Text
	case *Work:
		return fmt.Sprint("Work ", e.Part)
	case *Hint:
		return "Hint " + e.Text
	case *Query:
		return "Query " + e.Text
	}
	return event.Name(e)
}

// A linear agent: Question → retrieve → Retrieved → answer → Answer (a
// StopEvent), which ends the run.
func Example_linear() {
	retrieve := step.New(func(ctx step.Context, q *Question) (*Retrieved, error) {
		return &Retrieved{Docs: []string{"doc1", "doc2"}}, nil
	}, step.Name("retrieve"))
	answer := step.New(func(ctx step.Context, r *Retrieved) (*Answer, error) {
		return &Answer{Text: fmt.Sprintf("found %d docs", len(r.Docs))}, nil
	}, step.Name("answer"))
	w, err := step.NewWorkflow("RAGAgent", retrieve, answer)
	if err != nil {
		panic(err)
	}
	newRunner(w).send(&Question{Text: "why?"})
	// Output:
	// Question why?
	// Retrieved doc1,doc2
	// Answer found 2 docs
}

// Fan-out and fan-in with a fixed-size list: split publishes three Work
// events; join takes [3]*Work and runs once, when the third arrives.
func Example_fanOutFanIn() {
	split := step.New(func(ctx step.Context, q *Question) ([]*Work, error) {
		return []*Work{{Part: 1}, {Part: 2}, {Part: 3}}, nil
	}, step.Name("split"))
	join := step.New(func(ctx step.Context, ws [3]*Work) (*Answer, error) {
		sum := 0
		for _, w := range ws {
			sum += w.Part
		}
		return &Answer{Text: fmt.Sprint("sum ", sum)}, nil
	}, step.Name("join"))
	w, err := step.NewWorkflow("FanAgent", split, join)
	if err != nil {
		panic(err)
	}
	newRunner(w).send(&Question{Text: "add"})
	// Output:
	// Question add
	// Work 1
	// Work 2
	// Work 3
	// Answer sum 6
}

// An optional input with a precondition: answer takes a Query and maybe a
// Hint, and its precondition holds it back until the Hint is there. The Query
// alone does not run it; the Hint, arriving later, does — once.
func Example_optionalWithPrecondition() {
	start := step.New(func(ctx step.Context, q *Question) (*Query, error) {
		return &Query{Text: q.Text}, nil
	}, step.Name("start"))
	answer := step.New(func(ctx step.Context, q *Query, h step.Maybe[*Hint]) (*Answer, error) {
		return &Answer{Text: q.Text + " with " + h.Value.Text}, nil
	}, step.Name("answer"), step.MaxExecutions(1),
		step.Precondition(func(ctx step.Context, q *Query, h step.Maybe[*Hint]) (bool, error) {
			return h.OK, nil
		}))
	w, err := step.NewWorkflow("HintAgent", start, answer)
	if err != nil {
		panic(err)
	}
	r := newRunner(w)
	r.send(&Question{Text: "q"})
	fmt.Println("-- waiting for a hint")
	r.send(&Hint{Text: "hint"})
	// Output:
	// Question q
	// Query q
	// -- waiting for a hint
	// Hint hint
	// Answer q with hint
}
