package event_test

import (
	"fmt"

	"github.com/saap-go/agent/event"
)

// ResearchRequested is a custom start event: it embeds the library's
// StartEvent, so it is a control and display event and starts a run.
type ResearchRequested struct {
	event.StartEvent
	Question string `json:"question" event:"required"`
	Depth    int    `json:"depth" event:"default=1"`
}

// SourcesGathered is a flow carrier: a control event with no fields that
// only moves the run from one step to the next.
type SourcesGathered struct{ event.ControlEvent }

func init() {
	event.MustRegister[ResearchRequested](event.WithDisplay(
		event.L("Recherche gestartet", "Research started", "Recherche démarrée", "Ricerca avviata"),
		event.L("Der Agent recherchiert.", "The agent is researching.", "L'agent fait des recherches.", "L'agente sta cercando."),
	))
	event.MustRegister[SourcesGathered]()
}

// Users define their own events the way the library does and get the same
// registry, parent chain and codec.
func Example() {
	e := event.Stamp(&ResearchRequested{Question: "What is NATS?", Depth: 2})
	fmt.Println(event.Name(e), event.Parents(e))
	fmt.Println(event.IsStart(e), event.IsControl(e), event.IsDisplay(e))
	if err := event.Validate(e); err != nil {
		fmt.Println(err)
	}

	data, _ := event.Marshal(e)
	back, _ := event.Unmarshal(data)
	r := back.(*ResearchRequested)
	fmt.Println(r.Question, r.Depth, r.DisplayName.En)

	// Depth was absent: the declared default applies.
	d, _ := event.Unmarshal([]byte(`{"_event_name": "ResearchRequested", "question": "q"}`))
	fmt.Println(d.(*ResearchRequested).Depth)

	// A flow carrier has only the base fields.
	f := event.Stamp(&SourcesGathered{})
	fmt.Println(event.Name(f), event.Parents(f))
	// Output:
	// ResearchRequested [ResearchRequested StartEvent ControlAndDisplayEvent ControlEvent DisplayEvent]
	// true true true
	// What is NATS? 2 Research started
	// 1
	// SourcesGathered [SourcesGathered ControlEvent]
}

// An event of a name this process does not know decodes as its nearest
// registered ancestor and keeps everything it was received with.
func ExampleUnmarshal_fallback() {
	data := []byte(`{"_event_name": "GroundedAnswerEvent", "_parent_event_names": ["GroundedAnswerEvent", "StopEvent", "ControlAndDisplayEvent", "ControlEvent", "DisplayEvent"], "answer": "42"}`)
	e, err := event.Unmarshal(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, isStop := e.(*event.StopEvent)
	raw, _ := event.Extra(e, "answer")
	fmt.Println(isStop, event.Name(e), event.IsFallback(e), event.IsStop(e), string(raw))
	// Output: true GroundedAnswerEvent true true "42"
}

// Missing required fields are not decode errors: they are reported,
// and Validate refuses to produce such an event.
func ExampleMissing() {
	e, _ := event.Unmarshal([]byte(`{"_event_name": "ExceptionEvent"}`))
	fmt.Println(event.Missing(e))
	fmt.Println(event.Validate(e))
	// Output:
	// [message]
	// event: invalid ExceptionEvent: field message: required field was missing when the event was read
}

func ExampleNewID() {
	id := event.NewID()
	t, _ := event.IDTime(id)
	fmt.Println(len(id), event.IsObjectID(id), !t.IsZero())
	// Output: 24 true true
}

// Fields without type tags, such as an HTTP body, decode as the event a
// discovery answer names; a bad list element is named exactly.
func ExampleUnmarshalNamed() {
	parents := []string{"UserMessageEvent", "StartEvent", "ControlAndDisplayEvent", "ControlEvent", "DisplayEvent"}
	e, err := event.UnmarshalNamed([]byte(`{"messages": [{"role": "user", "content": "Hello"}]}`), "UserMessageEvent", parents)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(event.Name(e), e.(*event.UserMessageEvent).Messages[0].Content())

	_, err = event.UnmarshalNamed([]byte(`{"messages": [{"role": "user"}, {"role": 7}]}`), "UserMessageEvent", parents)
	fmt.Println(err)
	// Output:
	// UserMessageEvent Hello
	// event: decode UserMessageEvent: field messages[1].role: wrong JSON type: expected string, got number
}
