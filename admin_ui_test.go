package agent_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/config"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// ReportSettings is a scheduled agent's configuration, shaped for the admin
// UI by form tags.
type ReportSettings struct {
	Model    string          `json:"model" form:"label=Model,options=gpt-4o|gpt-4o-mini"`
	Examples []ReportExample `json:"examples"`
	BaseURL  string          `json:"base_url" form:"-"`
}

type ReportExample struct {
	Input string `json:"input"`
}

// nightly reports on a schedule; it hands the configuration its step saw
// to the test.
type nightly struct {
	class string
	seen  chan ReportSettings
}

func (n *nightly) Class() string { return n.class }
func (n *nightly) DefaultConfig() any {
	return ReportSettings{Model: "gpt-4o", BaseURL: "http://llm.internal"}
}
func (n *nightly) Steps() []*step.Step { return []*step.Step{step.New(n.Report)} }

func (n *nightly) Report(ctx step.Context, e *event.CronStartEvent) (*event.StopEvent, error) {
	s, _ := step.Config[ReportSettings](ctx)
	n.seen <- s
	return &event.StopEvent{}, nil
}

// The platform's admin UI configures and schedules a Go agent from its
// discovery answer alone: the form and the schema carry the base fields and
// the schedule, and the profile it stores (base fields, a schedule, a
// FormKit repeater) reaches the step as the typed configuration.
func TestAdminUIConfiguresScheduledAgent(t *testing.T) {
	t.Setenv(agent.EnvStandalone, "")
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("Nightly")
	a := &nightly{class: class, seen: make(chan ReportSettings, 1)}
	respondConfig(t, c, class, func(req config.Request) any {
		return found(req, map[string]any{
			"agent_id": req.AgentID, "name": map[string]any{"en": "Nightly report"},
			"description": map[string]any{"en": "Reports every night"}, "icon": "mage:clock",
			"cron":     map[string]any{"minute": "0", "hour": "2", "day_of_month": "*", "month": "*", "day_of_week": "*", "timezone": "Europe/Zurich"},
			"model":    "gpt-4o-mini",
			"examples": map[string]any{"1": map[string]any{"input": "b"}, "0": map[string]any{"input": "a"}},
		})
	})
	startRunner(t, a, agent.WithNATS(s.URL()), quiet(t))

	ev, err := event.Unmarshal(discover(t, c, class))
	if err != nil {
		t.Fatal(err)
	}
	r := ev.(*event.AgentClassDiscoveryResponseEvent)
	if !r.IsSchedulable {
		t.Error("a CronStartEvent agent is not schedulable")
	}
	var names []string
	for _, e := range r.Form {
		var el struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(e, &el)
		names = append(names, el.Name)
	}
	if diff := cmp.Diff([]string{"agent_id", "name", "description", "icon", "model", "examples", "cron"}, names); diff != "" {
		t.Errorf("form (-want +got):\n%s", diff)
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(r.AgentConfigSpecs.ConfigSchema["properties"], &props); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"agent_id", "name", "description", "icon", "cron", "model", "examples"} {
		if _, ok := props[k]; !ok {
			t.Errorf("schema lacks %s", k)
		}
	}
	if _, ok := props["base_url"]; ok {
		t.Error(`schema offers base_url, tagged form:"-"`)
	}

	run := newRun(class, "nightly")
	publish(t, c, run, &event.CronStartEvent{ScheduledFor: time.Now().UTC()}, nil)
	select {
	case got := <-a.seen:
		want := ReportSettings{Model: "gpt-4o-mini", Examples: []ReportExample{{"a"}, {"b"}}, BaseURL: "http://llm.internal"}
		if !slices.Equal(got.Examples, want.Examples) || got.Model != want.Model || got.BaseURL != want.BaseURL {
			t.Errorf("step saw %+v, want %+v", got, want)
		}
	case <-time.After(waitLong):
		t.Fatal("the scheduled run did not reach its step")
	}
}
