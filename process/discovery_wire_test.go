package process_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/process"
	memstore "github.com/saap-go/agent/store/memory"
)

type onboardingConfig struct {
	Greeting event.LocaleString `json:"greeting"`
	Limit    int                `json:"limit" form:"label=Daily limit,min=1"`
}

// TestDiscoveryAnswerAsThePlatformReadsIt: the discovery answer of a
// process has the reference's shapes member by member (human, program and
// agent inputs as their specs, a generated configuration form and schema)
// and matches the golden payload.
func TestDiscoveryAnswerAsThePlatformReadsIt(t *testing.T) {
	p := onboardingProcess()
	p.Config = onboardingConfig{Greeting: event.L("", "Welcome", "", ""), Limit: 5}
	r, err := process.Describe(p)
	if err != nil {
		t.Fatal(err)
	}
	data, err := event.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	checkRules(t, "ProcessClassDiscoveryResponseEvent", data)
	golden(t, "out-discovery.json", data)

	if len(r.HumanInputs) != 1 || r.HumanInputs[0].Route != "/processes/Onboarding/{process_id}/walkthroughs/{walkthrough_id}/work" ||
		r.HumanInputs[0].Method != "POST" || r.HumanInputs[0].IsProcessStart {
		t.Errorf("human inputs %+v", r.HumanInputs)
	}
	if len(r.AgentInputs) != 1 || r.AgentInputs[0].AgentClass != "DocChecker" || r.AgentInputs[0].AgentID != "default" {
		t.Errorf("agent inputs %+v", r.AgentInputs)
	}
	var props map[string]json.RawMessage
	_ = json.Unmarshal(r.ProcessConfigSpecs.ConfigSchema["properties"], &props)
	for _, k := range []string{"process_id", "name", "description", "icon", "greeting", "limit"} {
		if _, ok := props[k]; !ok {
			t.Errorf("config schema has no %s: %s", k, r.ProcessConfigSpecs.ConfigSchema["properties"])
		}
	}
	var names []string
	for _, raw := range r.Form {
		var el struct{ Name string }
		_ = json.Unmarshal(raw, &el)
		names = append(names, el.Name)
	}
	if !slices.Equal(names, []string{"process_id", "name", "description", "icon", "greeting", "limit"}) {
		t.Errorf("form elements %v", names)
	}

	// A gateway that knows no process code takes the routes from it.
	back, err := event.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := process.NewSubmitterFromDiscovery(memory.New(memory.Options{}), memstore.New(), back.(*event.ProcessClassDiscoveryResponseEvent))
	if err != nil || !slices.Equal(sub.Classes(), []string{"Onboarding"}) {
		t.Fatalf("submitter from the answer: %v %v", sub, err)
	}
}
