package discovery_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// The events of a small agent: it answers a user's message, asking a human
// for confirmation first.
type (
	answerEvent struct {
		event.StopEvent
		Text string `json:"text" event:"required"`
	}
	reportEvent struct {
		event.StopEvent
		Summary string `json:"summary"`
	}
)

func init() {
	event.MustRegister[answerEvent](event.WithName("AnswerEvent"))
	event.MustRegister[reportEvent](event.WithName("ReportEvent"))
}

func askHuman(ctx step.Context, msg *event.UserMessageEvent) (*event.HumanInTheLoopInputRequestEvent, error) {
	return &event.HumanInTheLoopInputRequestEvent{}, nil
}

func answer(ctx step.Context, r *event.HumanInTheLoopInputResponseEvent) (*answerEvent, error) {
	return &answerEvent{Text: r.Response}, nil
}

func chatWorkflow(t testing.TB) *step.Workflow {
	t.Helper()
	wf, err := step.NewWorkflow("DiscoveryChatAgent",
		step.New(askHuman, step.Name("AskHuman"), step.Description("asks a human")),
		step.New(answer, step.Name("Answer")),
	)
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

func cronWorkflow(t testing.TB) *step.Workflow {
	t.Helper()
	report := func(ctx step.Context, c *event.CronStartEvent) (*reportEvent, error) { return &reportEvent{}, nil }
	wf, err := step.NewWorkflow("DiscoveryCronAgent", step.New(report, step.Name("Report")))
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

func names(specs []event.EventSpecs) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.EventName)
	}
	return out
}

func TestBuildChatAgent(t *testing.T) {
	defaults := agentSettings{Model: "gpt-4o"}
	r, err := discovery.Build(chatWorkflow(t), discovery.Class{
		Name:        event.L("Chat", "Chat", "Chat", "Chat"),
		Description: event.L("", "Answers questions", "", ""),
		Features:    []event.ChatFeature{event.FeatureWebSearch},
		Config:      defaults,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.AgentClass != "DiscoveryChatAgent" || r.Icon != discovery.DefaultIcon {
		t.Errorf("class %q icon %q", r.AgentClass, r.Icon)
	}
	if !r.IsConversational || r.IsSchedulable {
		t.Errorf("is_conversational %v is_schedulable %v, want true false", r.IsConversational, r.IsSchedulable)
	}
	if r.Name.En != "Chat" || r.Description.En != "Answers questions" {
		t.Errorf("name %+v description %+v", r.Name, r.Description)
	}
	for _, c := range []struct {
		field string
		got   []event.EventSpecs
		want  []string
	}{
		{"start_events", r.StartEvents, []string{"UserMessageEvent"}},
		{"stop_events", r.StopEvents, []string{"AnswerEvent"}},
		{"hitl_request_events", r.HITLRequestEvents, []string{"HumanInTheLoopInputRequestEvent"}},
		{"hitl_response_events", r.HITLResponseEvents, []string{"HumanInTheLoopInputResponseEvent"}},
	} {
		if diff := cmp.Diff(c.want, names(c.got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.field, diff)
		}
	}
	start := r.StartEvents[0]
	if diff := cmp.Diff([]string{"UserMessageEvent", "StartEvent", "ControlAndDisplayEvent", "ControlEvent", "DisplayEvent"}, start.EventParents); diff != "" {
		t.Errorf("event_parents (-want +got):\n%s", diff)
	}
	if _, ok := start.EventSchema["$defs"]; !ok {
		t.Error("the start event's schema has no $defs")
	}
	if string(r.StopEvents[0].EventSchema["title"]) != `"AnswerEvent"` {
		t.Errorf("stop schema title = %s", r.StopEvents[0].EventSchema["title"])
	}
	if r.AgentConfigSpecs.ConfigClass != "agentSettings" || string(r.AgentConfigSpecs.ConfigSchema["title"]) != `"agentSettings"` {
		t.Errorf("agent_config_specs = %+v", r.AgentConfigSpecs)
	}
	if diff := cmp.Diff([]event.ChatFeature{event.FeatureWebSearch}, r.SupportedFeatures); diff != "" {
		t.Errorf("supported_features (-want +got):\n%s", diff)
	}

	var g step.Graph
	if err := json.Unmarshal(r.NetworkGraph, &g); err != nil {
		t.Fatalf("network_graph: %v", err)
	}
	if !g.Directed || len(g.Nodes) != 4 || len(g.Links) == 0 {
		t.Errorf("network_graph = %+v", g)
	}
	if !event.IsObjectID(r.EventID) || r.CreatedAt == 0 {
		t.Errorf("event_id %q created_at %d", r.EventID, r.CreatedAt)
	}

	// The whole event encodes to what the gateway reads, with the lists
	// and defaults present.
	data, err := event.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]json.RawMessage
	if err := json.Unmarshal(data, &wire); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"_event_name": `"AgentClassDiscoveryResponseEvent"`, "templates": `[]`,
		"icon": `"mage:robot"`, "is_conversational": `true`, "is_schedulable": `false`,
		"supported_features": `["web_search"]`,
	} {
		if got := strings.Join(strings.Fields(string(wire[k])), ""); got != want {
			t.Errorf("%s = %s, want %s", k, wire[k], want)
		}
	}
}

func TestBuildDefaults(t *testing.T) {
	r, err := discovery.Build(cronWorkflow(t), discovery.Class{Icon: "mage:clock"})
	if err != nil {
		t.Fatal(err)
	}
	if r.IsConversational || !r.IsSchedulable {
		t.Errorf("is_conversational %v is_schedulable %v, want false true", r.IsConversational, r.IsSchedulable)
	}
	if r.Icon != "mage:clock" {
		t.Errorf("icon = %q", r.Icon)
	}
	if *r.Name != event.L("DiscoveryCronAgent", "DiscoveryCronAgent", "DiscoveryCronAgent", "DiscoveryCronAgent") {
		t.Errorf("default name = %+v, want the class name", *r.Name)
	}
	// Without a configuration type a profile still has the base fields.
	if r.AgentConfigSpecs.ConfigClass != "DiscoveryCronAgent" {
		t.Errorf("no config: config_class = %q, want the agent class", r.AgentConfigSpecs.ConfigClass)
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(r.AgentConfigSpecs.ConfigSchema["properties"], &props); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(props)); !slices.Equal(got, []string{"agent_id", "cron", "description", "icon", "name"}) {
		t.Errorf("no config: schema properties %v, want the base fields with cron", got)
	}
	if r.Form == nil || r.Templates == nil || r.SupportedFeatures == nil || r.HITLRequestEvents == nil {
		t.Error("empty lists must encode as [], not null")
	}
	if !slices.Equal(names(r.StopEvents), []string{"ReportEvent"}) {
		t.Errorf("stop events = %v", names(r.StopEvents))
	}
}

func TestBuildErrors(t *testing.T) {
	if _, err := discovery.Build(nil, discovery.Class{}); err == nil {
		t.Error("Build(nil) succeeded")
	}
	type bad struct {
		F func() `json:"f"`
	}
	if _, err := discovery.Build(cronWorkflow(t), discovery.Class{Config: bad{}}); err == nil {
		t.Error("Build with a configuration that has no schema succeeded")
	}
	if _, err := discovery.EventSpec("NoSuchEvent"); err == nil || !strings.Contains(err.Error(), "NoSuchEvent") {
		t.Errorf("EventSpec(unknown) = %v, want an error naming it", err)
	}
}
