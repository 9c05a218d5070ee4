package discovery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

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

// Settings is an agent's configuration, with the form tags that shape the
// platform's admin UI.
type Settings struct {
	Model       string  `json:"model" form:"label=Model,help=The LLM that answers, by name,input=select,options=gpt-4o|gpt-4o-mini"`
	Temperature float64 `json:"temperature" form:"label=Temperature,input=slider,min=0,max=2,step=0.1"`
	Prompt      string  `json:"prompt" form:"label=System prompt,input=textarea,rows=8"`
	APIKey      string  `json:"api_key" form:"label=API key"` // a password input; its default is never published
	BaseURL     string  `json:"base_url" form:"-"`            // set by the deployment, not configurable
}

// The configuration form of an agent, generated from its configuration type.
func ExampleForm() {
	form, err := discovery.Form(Settings{Model: "gpt-4o", Temperature: 0.2}, true)
	if err != nil {
		panic(err)
	}
	for _, raw := range form {
		var e struct {
			Formkit    string          `json:"formkit"`
			Name       string          `json:"name"`
			Label      any             `json:"label"`
			Value      json.RawMessage `json:"value"`
			Validation string          `json:"validation"`
		}
		_ = json.Unmarshal(raw, &e)
		if l, ok := e.Label.(map[string]any); ok {
			e.Label = l["en"]
		}
		line := fmt.Sprintf("%-17s %-11s %-14v %-12s %s", e.Formkit, e.Name, e.Label, e.Value, e.Validation)
		fmt.Println(strings.TrimSpace(line))
	}
	// Output:
	// primeInputText    agent_id    Agent ID       null         required
	// localeInput       name        Name           null         localeRequired
	// localeInput       description Description    null         localeRequired
	// iconSelector      icon        Icon           "mage:robot" required
	// primeSelect       model       Model          "gpt-4o"     required
	// primeSlider       temperature Temperature    0.2          required|number|min:0.0|max:2.0
	// primeTextarea     prompt      System prompt  ""
	// primePassword     api_key     API key        null         length:8,
	// cronInput         cron        Schedule       null
}
