package hitl_test

import (
	"errors"
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
)

func TestStoreMemory(t *testing.T) {
	run := step.Run{Class: "Chat", AgentID: "dev", ThreadID: "t1", DisplayID: "d1", RunID: "r1"}
	msgs := []event.ChatMessage{event.Text(event.RoleUser, "I like tea")}
	m, err := hitl.StoreMemory(run, hitl.MemoryWriter{Class: "MemoryWriter", ID: "w"}, ada, msgs)
	if err != nil {
		t.Fatal(err)
	}
	s := m.StartEvent
	if m.TargetAgentClass != "MemoryWriter" || m.TargetAgentID != "w" || s.OriginRunID != "r1" || s.OriginThreadID != "t1" ||
		s.OriginDisplayID != "d1" || s.OriginAgentClass != "Chat" || s.OriginAgentID != "dev" || s.User != ada || len(s.Messages) != 1 ||
		s.OriginAgentName == nil || s.OriginAgentDescription == nil {
		t.Errorf("marker %+v start %+v", m, s)
	}
	if err := event.ValidateFields(m); err != nil {
		t.Errorf("the marker does not validate: %v", err)
	}
	for name, f := range map[string]func() error{
		"no writer": func() error { _, err := hitl.StoreMemory(run, hitl.MemoryWriter{}, ada, msgs); return err },
		"no user": func() error {
			_, err := hitl.StoreMemory(run, hitl.MemoryWriter{Class: "M", ID: "w"}, nil, msgs)
			return err
		},
		"no run": func() error {
			_, err := hitl.StoreMemory(step.Run{}, hitl.MemoryWriter{Class: "M", ID: "w"}, ada, msgs)
			return err
		},
	} {
		if err := f(); !errors.Is(err, hitl.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
