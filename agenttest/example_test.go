package agenttest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// The events of a small retrieval agent.
type (
	Question struct {
		event.StartEvent
		Text string `json:"text"`
	}
	Docs struct {
		event.ControlEvent
		Texts []string `json:"texts"`
	}
	Answer struct {
		event.StopEvent
		Text string `json:"text"`
	}
	// Feedback is an input nothing in the example sends.
	Feedback struct{ event.ControlEvent }
)

func init() {
	event.MustRegister[Question]()
	event.MustRegister[Docs]()
	event.MustRegister[Answer]()
	event.MustRegister[Feedback]()
}

// retrieve would call a search service; tests stub it.
func retrieve(ctx step.Context, q *Question) (*Docs, error) {
	return nil, fmt.Errorf("search service not reachable from tests")
}

func answer(ctx step.Context, d *Docs) (*Answer, error) {
	return &Answer{Text: strings.Join(d.Texts, " ")}, nil
}

// exampleT stands in for the *testing.T that a test passes; an Example
// has none.
type exampleT struct{ testing.TB }

func (exampleT) Helper()                           {}
func (exampleT) Cleanup(func())                    {}
func (exampleT) Log(...any)                        {}
func (exampleT) Errorf(format string, args ...any) { fmt.Printf("test error: "+format+"\n", args...) }
func (exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (exampleT) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }

// Testing an agent without its search service: Stub replaces the step that
// calls it, TerminalAs reads the typed result, Executions say which event
// triggered each step, and Stalled explains a run that hangs.
func Example() {
	t := exampleT{} // in a test: the test's *testing.T
	w, err := step.NewWorkflow("RAGAgent", step.New(retrieve), step.New(answer))
	if err != nil {
		panic(err)
	}
	h := agenttest.New(t, w, agenttest.FailOnStall())
	h.Stub("retrieve", func(ctx step.Context, q *Question) (*Docs, error) {
		return &Docs{Texts: []string{"Bern", "is", "the", "capital."}}, nil
	})
	res := h.Start(&Question{Text: "capital?"})
	if a, ok := agenttest.TerminalAs[*Answer](res); ok {
		fmt.Println("answer:", a.Text)
	}
	for _, x := range res.Executions() {
		fmt.Println(x.Step, "triggered by", event.Name(x.Trigger))
	}

	// A step that waits for an input that never comes: the run hangs, and
	// FailOnStall reports where.
	review := step.New(func(ctx step.Context, d *Docs, f *Feedback) (*Answer, error) {
		return &Answer{}, nil
	}, step.Name("review"))
	w, err = step.NewPartialWorkflow("Reviewer", review)
	if err != nil {
		panic(err)
	}
	agenttest.New(t, w, agenttest.FailOnStall()).Start(&Docs{})
	// Output:
	// answer: Bern is the capital.
	// retrieve triggered by Question
	// answer triggered by Docs
	// test error: agenttest: run 6955b9000000000000000002 went quiet without a terminal event or an open request
	//   control events: Docs
	//   review has Docs; waits for Feedback
}
