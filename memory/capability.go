package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// RecallTimeout bounds one recall in RecallStep: it guards against a hung
// backend, not normal latency, as the reference's does.
const RecallTimeout = 15 * time.Second

// RecallStep is the capability step that answers a RecallMemoryEvent for
// the run's user (taken from the run's UserMessageEvent): it publishes a
// RetrieveUserMemoryEvent and, when the user acts within an organisation,
// a RetrieveOrganizationMemoryEvent (what a chat shows), then the
// MemoryRecalledEvent a later step waits for, whose blocks are one system
// message per scope. A failing or slow memory backend is logged and
// answered with empty blocks, so the step waiting for the answer never
// hangs; namespaces outside the allowed ones are the caller's error and
// fail the step.
func (s *Service) RecallStep(name string) *step.Step {
	fn := func(ctx step.Context, req *event.RecallMemoryEvent, start *event.UserMessageEvent) ([]event.Event, error) {
		return s.Answer(ctx, PrincipalOf(start.User), req)
	}
	return step.New(fn, step.Name(name),
		step.Emits((*event.RetrieveUserMemoryEvent)(nil), (*event.RetrieveOrganizationMemoryEvent)(nil), (*event.MemoryRecalledEvent)(nil)),
		step.Description("recalls what the agent remembers about the user and the organisation"), step.Icon("mdi:brain"))
}

// Answer is RecallStep's work for any principal, for steps whose run
// starts with another start event.
func (s *Service) Answer(ctx step.Context, p Principal, req *event.RecallMemoryEvent) ([]event.Event, error) {
	done := event.New[event.MemoryRecalledEvent]()
	done.ToolCallID = req.ToolCallID
	if strings.TrimSpace(req.Query) == "" || (p.UserID == "" && len(p.Orgs) == 0) {
		return []event.Event{done}, nil
	}
	for _, ns := range req.OrgMemoryNamespaces {
		if len(s.allowed) > 0 && !slices.Contains(s.allowed, ns) {
			return nil, step.Userf("memory namespace %q is not available to this agent", ns)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, RecallTimeout)
	defer cancel()
	got, err := s.Recall(rctx, p, Query{Text: req.Query, Namespaces: req.OrgMemoryNamespaces})
	if err != nil {
		ctx.Logger().Warn("memory recall failed; answering without memories", "user_id", p.UserID, "error", err)
		got = Recalled{}
	}
	var out []event.Event
	if p.UserID != "" {
		u := event.New[event.RetrieveUserMemoryEvent]()
		u.Memories, u.Relations = wireMemories(got.User), []event.MemoryRelation{}
		out = append(out, u)
		done.UserBlock = block("What you remember about the user:", got.User)
	}
	if len(p.Orgs) > 0 {
		o := event.New[event.RetrieveOrganizationMemoryEvent]()
		o.Memories, o.Relations = wireMemories(got.Organization), []event.MemoryRelation{}
		out = append(out, o)
		done.OrganizationBlock = block("What your organisation knows:", got.Organization)
	}
	return append(out, done), nil
}

// block is the system message that puts memories before the history;
// none when there are no memories.
func block(title string, items []Item) []event.ChatMessage {
	if len(items) == 0 {
		return []event.ChatMessage{}
	}
	var b strings.Builder
	b.WriteString(title)
	for _, it := range items {
		b.WriteString("\n- ")
		b.WriteString(it.Text)
	}
	return []event.ChatMessage{event.Text(event.RoleSystem, b.String())}
}

func wireMemories(items []Item) []event.Memory {
	out := make([]event.Memory, 0, len(items))
	for _, it := range items {
		score := float64(it.Score)
		m := event.Memory{
			ID: it.ID, Memory: it.Text, Score: &score, CreatedAt: it.CreatedAt.UTC().Format(time.RFC3339Nano),
			Metadata: event.MemoryMetadata{AgentID: it.Origin.AgentID, ThreadID: it.Origin.ThreadID,
				DisplayID: it.Origin.DisplayID, RunID: it.Origin.RunID, Type: string(it.Scope)},
		}
		if it.Scope == ScopeUser {
			m.OwnerID, m.Metadata.UserID = it.Owner, it.Owner
		} else {
			tenant, ns := it.Owner, it.Namespace
			m.Metadata.TenantID, m.Metadata.TenantNamespace = &tenant, &ns
		}
		out = append(out, m)
	}
	return out
}

// Extractor picks the facts worth remembering from a conversation. The
// default, UserStatements, keeps what the user said; a model-backed one
// can distil facts instead.
type Extractor func(ctx context.Context, messages []event.ChatMessage) ([]string, error)

// UserStatements is the default Extractor: the text of each user message.
func UserStatements(_ context.Context, messages []event.ChatMessage) ([]string, error) {
	var out []string
	for _, m := range messages {
		if m.Role == event.RoleUser {
			if t := strings.TrimSpace(m.Content()); t != "" {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

// StoreStep is the capability step of a memory writer: it takes the
// StoreUserMemoryRequestedEvent that starts the writer's run, stores what
// extract finds in its messages (nil: UserStatements) as memories of its
// user, attributed to the origin run, and ends the run with a
// StoreUserMemoryEvent and a StopEvent. Storing is idempotent, so a re-run
// after a crash stores nothing twice.
func (s *Service) StoreStep(name string, extract Extractor) *step.Step {
	if extract == nil {
		extract = UserStatements
	}
	fn := func(ctx step.Context, req *event.StoreUserMemoryRequestedEvent) ([]event.Event, error) {
		p := PrincipalOf(req.User)
		if p.UserID == "" {
			return nil, step.Userf("the memory request names no user")
		}
		texts, err := extract(ctx, req.Messages)
		if err != nil {
			return nil, fmt.Errorf("memory: extracting facts: %w", err)
		}
		o := Origin{AgentID: req.OriginAgentID, ThreadID: req.OriginThreadID, DisplayID: req.OriginDisplayID, RunID: req.OriginRunID}
		if _, err := s.StoreUser(ctx, p, texts, o); err != nil {
			return nil, err
		}
		st := event.New[event.StoreUserMemoryEvent]()
		st.AddedMemories = nonNil(texts)
		st.UpdatedMemories, st.DeletedMemories = []string{}, []string{}
		st.AddedRelations, st.DeletedRelations = []event.MemoryRelation{}, []event.MemoryRelation{}
		return []event.Event{st, event.New[event.StopEvent]()}, nil
	}
	return step.New(fn, step.Name(name), step.Emits((*event.StoreUserMemoryEvent)(nil), (*event.StopEvent)(nil)),
		step.Description("stores what the user told an agent as memories"), step.Icon("mdi:brain"))
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// Writer is a memory agent: the agent the platform delegates a thread's
// memories to (hitl.StoreMemory builds that delegation). Run it with
// agent.Run like any agent; its class and id are what callers put in
// hitl.MemoryWriter.
type Writer struct {
	Service *Service
	// ClassName is the agent class (default "MemoryWriterAgent").
	ClassName string
	// Extract picks the facts to store (nil: UserStatements).
	Extract Extractor
}

// Class is the writer's agent class.
func (w *Writer) Class() string {
	if w.ClassName == "" {
		return "MemoryWriterAgent"
	}
	return w.ClassName
}

// Steps is the writer's one step.
func (w *Writer) Steps() []*step.Step {
	return []*step.Step{w.Service.StoreStep("store_memories", w.Extract)}
}
