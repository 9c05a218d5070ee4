package discovery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/step"
)

// Describe an agent class and answer the gateway's discovery request.
func ExampleServe() {
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	b, err := natsbus.Connect(natsbus.Config{URL: srv.URL()})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	ctx := context.Background()

	wf, err := step.NewWorkflow("ExampleAgent",
		step.New(askHuman, step.Name("AskHuman")), step.New(answer, step.Name("Answer")))
	if err != nil {
		panic(err)
	}
	resp, err := discovery.Build(wf, discovery.Class{Name: event.L("Beispiel", "Example", "Exemple", "Esempio")})
	if err != nil {
		panic(err)
	}
	r, err := discovery.Serve(ctx, b, resp)
	if err != nil {
		panic(err)
	}
	defer r.Stop()

	// The gateway's side: listen for answers, then ask every class.
	answers := make(chan *bus.Msg, 1)
	sub, _ := b.Subscribe(ctx, "class_discovery.agent.*.*.response.call1", "", func(m *bus.Msg) { answers <- m })
	defer sub.Unsubscribe()
	req, _ := event.Marshal(event.Stamp(&event.ClassDiscoveryRequestEvent{}))
	_ = b.Publish(ctx, &bus.Msg{Subject: "class_discovery.agent.*.*.request.call1", Data: req})

	m := <-answers
	ev, _ := event.Unmarshal(m.Data)
	got := ev.(*event.AgentClassDiscoveryResponseEvent)
	fmt.Println(m.Subject)
	fmt.Println(got.AgentClass, got.Name.En, got.IsConversational)
	fmt.Println(names(got.StartEvents), names(got.HITLRequestEvents), names(got.StopEvents))
	// Output:
	// class_discovery.agent.ExampleAgent.*.response.call1
	// ExampleAgent Example true
	// [UserMessageEvent] [HumanInTheLoopInputRequestEvent] [AnswerEvent]
}

// The schema of an event type, as pydantic would write it.
func ExampleSchema() {
	s, err := discovery.Schema(reflect.TypeFor[event.ExceptionEvent]())
	if err != nil {
		panic(err)
	}
	var props map[string]json.RawMessage
	_ = json.Unmarshal(s["properties"], &props)
	fmt.Println(string(s["title"]), string(s["required"]))
	fmt.Println(string(props["http_status_code"]))
	fmt.Println(string(props["display_name"]))
	// Output:
	// "ExceptionEvent" ["message"]
	// {"type":"integer","title":"Http Status Code","default":500}
	// {"anyOf":[{"$ref":"#/$defs/LocaleString"},{"type":"null"}],"default":null}
}
