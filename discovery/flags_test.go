package discovery_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

type nightlyStartEvent struct {
	event.CronStartEvent
	Window string `json:"window"`
}

func init() {
	event.MustRegister[nightlyStartEvent](event.WithName("DiscoveryNightlyStartEvent"))
}

func TestSupportedFeaturesSorted(t *testing.T) {
	r, err := discovery.Build(chatWorkflow(t), discovery.Class{Features: []event.ChatFeature{
		event.FeatureWebSearch, event.FeatureImageGeneration, event.FeatureCodeInterpreter,
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []event.ChatFeature{event.FeatureCodeInterpreter, event.FeatureImageGeneration, event.FeatureWebSearch}
	if diff := cmp.Diff(want, r.SupportedFeatures); diff != "" {
		t.Errorf("supported_features (-want +got):\n%s", diff)
	}
}

// Only a CronStartEvent (or a subclass) makes a class schedulable: the
// platform's scheduler publishes CronStartEvents and nothing else.
func TestIsSchedulable(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *step.Step
		want bool
	}{
		{"CronStartEvent", step.New(func(step.Context, *event.CronStartEvent) (*reportEvent, error) { return nil, nil }, step.Name("Report")), true},
		{"subclass", step.New(func(step.Context, *nightlyStartEvent) (*reportEvent, error) { return nil, nil }, step.Name("Report")), true},
		{"legacy ScheduledStartEvent", step.New(func(step.Context, *event.ScheduledStartEvent) (*reportEvent, error) { return nil, nil }, step.Name("Report")), false},
		{"UserMessageEvent", step.New(func(step.Context, *event.UserMessageEvent) (*reportEvent, error) { return nil, nil }, step.Name("Report")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wf, err := step.NewWorkflow("DiscoverySchedAgent", tc.s)
			if err != nil {
				t.Fatal(err)
			}
			r, err := discovery.Build(wf, discovery.Class{})
			if err != nil {
				t.Fatal(err)
			}
			if r.IsSchedulable != tc.want {
				t.Errorf("is_schedulable = %v, want %v", r.IsSchedulable, tc.want)
			}
		})
	}
}

func TestAnnounceErrors(t *testing.T) {
	if err := discovery.Announce(t.Context(), nil, nil); err == nil {
		t.Error("Announce without a bus and a response succeeded")
	}
}
