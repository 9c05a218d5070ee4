package hitl

import (
	"fmt"
	"strings"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// MemoryWriter names the agent that stores a thread's memories, and how
// the asking agent presents itself to it.
type MemoryWriter struct {
	// Class and ID address the writer agent. Required.
	Class, ID string
	// Name and Description present the asking agent. Required by the
	// event; they default to the asking agent's class name.
	Name, Description *event.LocaleString
	// LLM, if set, names the model the writer should use.
	LLM *string
}

// StoreMemory builds the MemoryStorageRequestedEvent a step returns to have
// messages of run's thread stored by the writer agent, as the reference
// does it: the engine publishes the event into the run as a marker and
// sends its start event (a StoreUserMemoryRequestedEvent naming the run as
// origin) to the writer on fresh thread, display and run ids, fire and
// forget, in a trace of its own. Nothing comes back into the run.
func StoreMemory(run step.Run, w MemoryWriter, user *event.UserIdentity, messages []event.ChatMessage) (*event.MemoryStorageRequestedEvent, error) {
	if strings.TrimSpace(w.Class) == "" || strings.TrimSpace(w.ID) == "" {
		return nil, fmt.Errorf("%w: StoreMemory needs the writer's class and id (got %q, %q)", ErrInvalid, w.Class, w.ID)
	}
	if user == nil {
		return nil, fmt.Errorf("%w: StoreMemory needs the user whose memories are stored", ErrInvalid)
	}
	if run.RunID == "" || run.Class == "" {
		return nil, fmt.Errorf("%w: StoreMemory needs the asking run (step.Context.Run())", ErrInvalid)
	}
	if messages == nil {
		messages = []event.ChatMessage{}
	}
	s := event.New[event.StoreUserMemoryRequestedEvent]()
	s.User, s.Messages = user, messages
	s.OriginThreadID, s.OriginDisplayID, s.OriginRunID = run.ThreadID, run.DisplayID, run.RunID
	s.OriginAgentClass, s.OriginAgentID = run.Class, run.AgentID
	s.OriginAgentName, s.OriginAgentDescription, s.OriginMemoryLLM = w.Name, w.Description, w.LLM
	if s.OriginAgentName == nil {
		n := event.L(run.Class, run.Class, run.Class, run.Class)
		s.OriginAgentName = &n
	}
	if s.OriginAgentDescription == nil {
		s.OriginAgentDescription = s.OriginAgentName
	}
	m := event.New[event.MemoryStorageRequestedEvent]()
	m.StartEvent, m.TargetAgentClass, m.TargetAgentID = s, w.Class, w.ID
	return m, nil
}
