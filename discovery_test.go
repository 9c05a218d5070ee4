package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	membus "github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	memstore "github.com/saap-go/agent/store/memory"
	"github.com/saap-go/agent/topic"
)

// described is the configured agent with display texts.
type described struct{ configured }

func (d *described) Describe() agent.Description {
	return agent.Description{
		Name:        event.L("Wiki-Agent", "Wiki agent", "Agent wiki", "Agente wiki"),
		Description: event.L("Antwortet", "Answers", "Répond", "Risponde"),
		Icon:        "mage:book",
	}
}

// discover sends a class discovery request as the gateway does (an empty
// ClassDiscoveryRequestEvent to class "*") and returns the first answer of
// class, as raw JSON.
func discover(t *testing.T, b bus.Bus, class string) []byte {
	t.Helper()
	callID := event.NewID()
	got := make(chan []byte, 16)
	sub, err := b.Subscribe(context.Background(), "class_discovery.agent.*.*.response."+callID, "", func(m *bus.Msg) {
		if m.Subject == "class_discovery.agent."+class+".*.response."+callID {
			got <- m.Data
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	req, err := event.Marshal(event.Stamp(&event.ClassDiscoveryRequestEvent{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(context.Background(), &bus.Msg{Subject: "class_discovery.agent.*.*.request." + callID, Data: req}); err != nil {
		t.Fatal(err)
	}
	select {
	case data := <-got:
		return data
	case <-time.After(10 * time.Second): // the gateway's collection window
		t.Fatalf("no discovery answer from %s within the gateway's 10 s window", class)
		return nil
	}
}

func TestDiscoveryEndToEnd(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		c := client(t, tg.natsURL)
		class := uniqueClass("Described")
		dropStream(t, c, class)
		startRunner(t, &described{configured{linear{class: class}}}, agent.WithNATS(tg.natsURL), storeFor(t, tg, c), quiet(t))

		data := discover(t, c, class)
		ev, err := event.Unmarshal(data)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := ev.(*event.AgentClassDiscoveryResponseEvent)
		if !ok {
			t.Fatalf("answer decodes as %s, want AgentClassDiscoveryResponseEvent", event.Name(ev))
		}
		if r.AgentClass != class || !r.IsConversational || r.IsSchedulable || r.Icon != "mage:book" {
			t.Errorf("agent_class %q conversational %v schedulable %v icon %q", r.AgentClass, r.IsConversational, r.IsSchedulable, r.Icon)
		}
		if r.Name == nil || r.Name.En != "Wiki agent" || r.Description == nil || r.Description.Fr != "Répond" {
			t.Errorf("name %+v description %+v", r.Name, r.Description)
		}
		if len(r.StartEvents) != 1 || r.StartEvents[0].EventName != "UserMessageEvent" ||
			!slices.Contains(r.StartEvents[0].EventParents, "StartEvent") || r.StartEvents[0].EventSchema["$defs"] == nil {
			t.Errorf("start_events %+v", r.StartEvents)
		}
		if len(r.StopEvents) != 1 || r.StopEvents[0].EventName != "StopEvent" {
			t.Errorf("stop_events %+v", r.StopEvents)
		}
		if r.AgentConfigSpecs == nil || r.AgentConfigSpecs.ConfigClass != "Settings" {
			t.Fatalf("agent_config_specs %+v", r.AgentConfigSpecs)
		}
		var props map[string]json.RawMessage
		if err := json.Unmarshal(r.AgentConfigSpecs.ConfigSchema["properties"], &props); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"model", "temperature", "api_key"} {
			if props[k] == nil {
				t.Errorf("config schema lacks property %q: %s", k, r.AgentConfigSpecs.ConfigSchema["properties"])
			}
		}
		var graph struct {
			Directed bool `json:"directed"`
			Nodes    []struct {
				ID   string `json:"id"`
				Type string `json:"type"`
			} `json:"nodes"`
		}
		if err := json.Unmarshal(r.NetworkGraph, &graph); err != nil || !graph.Directed || len(graph.Nodes) < 3 {
			t.Errorf("network_graph %s (%v)", r.NetworkGraph, err)
		}
		// The raw payload carries the reference's keys.
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"_event_name", "_parent_event_names", "event_id", "created_at", "agent_class", "form", "templates", "supported_features", "hitl_request_events", "hitl_response_events"} {
			if raw[k] == nil {
				t.Errorf("answer lacks %q", k)
			}
		}
	})
}

// TestDiscoverableFalse: an internal agent does not subscribe to discovery
// at all, and still consumes its control events.
func TestDiscoverableFalse(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	requests := func() int {
		sz, err := s.Server().Subsz(&server.SubszOptions{Subscriptions: true, Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, sub := range sz.Subs {
			if sub.Subject == topic.DiscoveryRequests(topic.KindAgent) {
				n++
			}
		}
		return n
	}
	before := requests()

	hidden := uniqueClass("Hidden")
	hw := watch(t, c, hidden)
	startRunner(t, &linear{class: hidden}, agent.WithNATS(s.URL()), agent.Discoverable(false), agent.Standalone(), quiet(t))
	if n := requests(); n != before {
		t.Errorf("a runner with Discoverable(false) added %d discovery subscriptions", n-before)
	}
	run := newRun(hidden, "x")
	publish(t, c, run, userMessage("hi"), nil)
	if !event.IsStop(hw.terminal(t, run.Run)) {
		t.Fatal("the hidden agent did not handle its run")
	}

	shown := uniqueClass("Shown")
	startRunner(t, &linear{class: shown}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))
	if n := requests(); n != before+1 {
		t.Errorf("a discoverable runner added %d discovery subscriptions, want 1", n-before)
	}
}

// A runner announces its class when it starts, so that a gateway need not
// wait for its next discovery cycle.
func TestDiscoveryAnnouncedOnStart(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("Announced")
	got := make(chan *bus.Msg, 4)
	sub, err := c.Subscribe(context.Background(), topic.DiscoveryAnnouncements(topic.KindAgent), "", func(m *bus.Msg) { got <- m })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	startRunner(t, &described{configured{linear{class: class}}}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))

	select {
	case m := <-got:
		ev, err := event.Unmarshal(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := ev.(*event.AgentClassDiscoveryResponseEvent)
		if !ok {
			t.Fatalf("announcement decodes as %s", event.Name(ev))
		}
		if want := "class_discovery.agent." + class + ".*.announce." + r.EventID; m.Subject != want {
			t.Errorf("subject = %q, want %q", m.Subject, want)
		}
		if r.AgentClass != class || r.Icon != "mage:book" || len(r.StartEvents) == 0 {
			t.Errorf("announced %q icon %q start events %d", r.AgentClass, r.Icon, len(r.StartEvents))
		}
	case <-time.After(waitLong):
		t.Fatal("no announcement from the starting runner")
	}
}

// Profile templates given as options reach discovery in the reference's
// TemplateData shape: name, description, icon and the template's settings.
func TestDiscoveryTemplates(t *testing.T) {
	b := membus.New(membus.Options{})
	class := uniqueClass("Templated")
	startRunner(t, &configured{linear{class: class}}, agent.WithBus(b), agent.WithStore(memstore.New()), agent.Standalone(), quiet(t),
		agent.WithTemplates(agent.Template{
			Name:        event.L("Schnell", "Fast", "Rapide", "Veloce"),
			Description: event.L("Kleines Modell", "Small model", "Petit modèle", "Modello piccolo"),
			Icon:        "mage:bolt",
			Config:      Settings{Model: "gpt-4o-mini", Temperature: 0},
		}))
	var raw struct {
		Templates []map[string]any `json:"templates"`
	}
	if err := json.Unmarshal(discover(t, b, class), &raw); err != nil || len(raw.Templates) != 1 {
		t.Fatalf("templates %+v, %v", raw.Templates, err)
	}
	tpl := raw.Templates[0]
	name, _ := tpl["name"].(map[string]any)
	if name["en"] != "Fast" || tpl["icon"] != "mage:bolt" || tpl["model"] != "gpt-4o-mini" {
		t.Errorf("template %v", tpl)
	}
	if _, err := agent.New(&configured{linear{class: class}}, agent.WithTemplates(agent.Template{})); err == nil {
		t.Error("a template without a name was taken")
	}
}
