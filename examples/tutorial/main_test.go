package main

import (
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

func TestGreeter(t *testing.T) {
	wf, err := step.NewWorkflow("Greeter", Greeter{}.Steps()...)
	if err != nil {
		t.Fatal(err) // every problem of the workflow at once, each with a hint
	}
	h := agenttest.New(t, wf)
	res := h.Start(&event.UserMessageEvent{
		User:     &event.UserIdentity{ID: "u1", Name: "Ada", Email: "ada@example.com", Roles: []string{}},
		Messages: []event.ChatMessage{event.Text(event.RoleUser, "  hi   there ")},
	})
	agenttest.Equal(t, res.Steps(), []string{"Clean", "Reply"})
	agenttest.Equal(t, res.Count("ChunkEvent"), 1)
	agenttest.Equal(t, res.Terminal().(*Greeted).Reply, "Hello! You said: hi there")
}
