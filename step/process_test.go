package step_test

import (
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// The same steps are a valid process and an invalid agent, and the other
// way round: each kind of workflow takes its own family of events.
func TestProcessWorkflowRules(t *testing.T) {
	proc := step.New(func(ctx step.Context, s *event.ProcessStartEvent) (*event.ProcessStopEvent, error) { return nil, nil }, step.Name("Walk"))
	if _, err := step.NewProcessWorkflow("P", proc); err != nil {
		t.Fatalf("process rejected: %v", err)
	}
	if _, err := step.NewWorkflow("A", proc); err == nil {
		t.Fatal("an agent accepted a step taking a process start event")
	} else if ve := err.(*step.ValidationError); !ve.Has(step.CheckDisplayInput) || !ve.Has(step.CheckNoStart) {
		t.Fatalf("agent problems: %v", err)
	}
	ag := step.New(func(ctx step.Context, s *event.StartEvent) (*event.StopEvent, error) { return nil, nil }, step.Name("Run"))
	if _, err := step.NewWorkflow("A", ag); err != nil {
		t.Fatalf("agent rejected: %v", err)
	}
	_, err := step.NewProcessWorkflow("P", ag)
	if err == nil {
		t.Fatal("a process accepted a step taking a StartEvent")
	}
	if ve := err.(*step.ValidationError); !ve.Has(step.CheckDisplayInput) || !ve.Has(step.CheckNoStart) {
		t.Fatalf("process problems: %v", err)
	}
	// Work answers its request: a step taking an agent's work is reachable
	// once a step asks an agent for it, and not before.
	ask := step.New(func(ctx step.Context, s *event.ProcessStartEvent) (*event.AgentWorkRequestEvent, error) {
		return nil, nil
	}, step.Name("Ask"))
	done := step.New(func(ctx step.Context, w *event.AgentWorkEvent) (*event.ProcessStopEvent, error) { return nil, nil }, step.Name("Done"))
	if _, err := step.NewProcessWorkflow("P", ask, done); err != nil {
		t.Fatalf("request and answer rejected: %v", err)
	}
	human := step.New(func(ctx step.Context, w *event.HumanWorkEvent) (*event.ProcessStopEvent, error) { return nil, nil }, step.Name("Human"))
	_, err = step.NewProcessWorkflow("P", ask, done, human)
	if ve, ok := err.(*step.ValidationError); !ok || !ve.Has(step.CheckUnreachable) {
		t.Fatalf("a human's work nobody asked for: %v", err)
	}
}
