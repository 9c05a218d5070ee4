package memory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/memory"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/vector"
)

// answered ends the test agent's run with what it recalled.
type answered struct {
	event.StopEvent
	Text string `json:"text"`
}

func init() { event.MustRegister[answered]() }

func user(id, tenant string) *event.UserIdentity {
	u := &event.UserIdentity{ID: id, Name: id, Email: id + "@example.com", Roles: []string{}}
	if tenant != "" {
		u.ActingWithinTenant = &event.TenantIdentity{ID: tenant, Name: tenant, AccessRules: []string{}}
	}
	return u
}

func userMessage(u *event.UserIdentity, text string) *event.UserMessageEvent {
	m := event.New[event.UserMessageEvent]()
	m.User = u
	m.Messages = []event.ChatMessage{event.Text(event.RoleUser, text)}
	return m
}

// chat is a small agent that recalls before it answers: its answer is the
// recalled blocks, so the test reads what the model would have seen.
func chat(t *testing.T, s *memory.Service) *step.Workflow {
	ask := step.New(func(ctx step.Context, m *event.UserMessageEvent) (*event.RecallMemoryEvent, error) {
		r := event.New[event.RecallMemoryEvent]()
		r.Query = m.Messages[len(m.Messages)-1].Content()
		return r, nil
	}, step.Name("ask"))
	answer := step.New(func(ctx step.Context, r *event.MemoryRecalledEvent) (*answered, error) {
		var parts []string
		for _, m := range append(r.UserBlock, r.OrganizationBlock...) {
			parts = append(parts, m.Content())
		}
		stop := &answered{}
		stop.Text = strings.Join(parts, "\n")
		return stop, nil
	}, step.Name("answer"))
	w, err := step.NewWorkflow("MemoryChat", ask, s.RecallStep("recall"), answer)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestRecallStep(t *testing.T) {
	ctx := context.Background()
	ix := vector.NewMemory()
	defer ix.Close()
	s := newService(t, ix)
	_, err := s.StoreUser(ctx, ada, []string{"Ada's cat is called Turing"}, memory.Origin{})
	must(t, err)
	_, err = s.StoreUser(ctx, bob, []string{"Bob's cat is called Pascal"}, memory.Origin{})
	must(t, err)
	_, err = s.StoreOrganization(ctx, ada, "acme", "faq", []string{"The acme office cat is called Byte"}, memory.Origin{})
	must(t, err)

	h := agenttest.New(t, chat(t, s), agenttest.FailOnStall())
	res := h.Start(userMessage(user("ada", "acme"), "what is the cat called"))
	stop, ok := agenttest.TerminalAs[*answered](res)
	if !ok {
		t.Fatalf("no answer: %v", res.Control())
	}
	if !strings.Contains(stop.Text, "Turing") || !strings.Contains(stop.Text, "Byte") || strings.Contains(stop.Text, "Pascal") {
		t.Fatalf("ada's recall: %q", stop.Text)
	}
	var sawUser, sawOrg bool
	for _, e := range res.Control() {
		switch e := e.(type) {
		case *event.RetrieveUserMemoryEvent:
			sawUser = len(e.Memories) == 1 && e.Memories[0].OwnerID == "ada" && e.Memories[0].Memory == "Ada's cat is called Turing"
		case *event.RetrieveOrganizationMemoryEvent:
			sawOrg = len(e.Memories) == 1 && *e.Memories[0].Metadata.TenantID == "acme"
		}
	}
	if !sawUser || !sawOrg {
		t.Fatalf("retrieval events: user %v org %v in %v", sawUser, sawOrg, res.Control())
	}

	// Bob, outside acme, sees only his own.
	res = h.Start(userMessage(user("bob", ""), "what is the cat called"))
	stop, _ = agenttest.TerminalAs[*answered](res)
	if stop == nil || !strings.Contains(stop.Text, "Pascal") || strings.Contains(stop.Text, "Turing") || strings.Contains(stop.Text, "Byte") {
		t.Fatalf("bob's recall: %+v", stop)
	}
}

// TestRecallStepDegrades: a broken backend answers with empty blocks
// instead of failing the turn.
func TestRecallStepDegrades(t *testing.T) {
	ix := vector.NewMemory()
	s := newService(t, ix)
	_, err := s.StoreUser(context.Background(), ada, []string{"Ada's cat is called Turing"}, memory.Origin{})
	must(t, err)
	must(t, ix.Close()) // every query now fails
	h := agenttest.New(t, chat(t, s), agenttest.FailOnStall())
	res := h.Start(userMessage(user("ada", ""), "cat"))
	stop, ok := agenttest.TerminalAs[*answered](res)
	if !ok || stop.Text != "" {
		t.Fatalf("degraded answer: %+v %v", stop, res.Control())
	}
}

func TestWriterStores(t *testing.T) {
	ctx := context.Background()
	ix := vector.NewMemory()
	defer ix.Close()
	s := newService(t, ix)
	wr := &memory.Writer{Service: s}
	w, err := step.NewWorkflow(wr.Class(), wr.Steps()...)
	must(t, err)
	h := agenttest.New(t, w, agenttest.FailOnStall())
	req := event.New[event.StoreUserMemoryRequestedEvent]()
	req.User = user("ada", "")
	req.Messages = []event.ChatMessage{event.Text(event.RoleUser, "I am allergic to peanuts"), event.Text(event.RoleAssistant, "Noted.")}
	req.OriginThreadID, req.OriginDisplayID, req.OriginRunID = "t1", "d1", "r1"
	req.OriginAgentClass, req.OriginAgentID = "Chat", "chat"
	name := event.L("Chat", "Chat", "Chat", "Chat")
	req.OriginAgentName, req.OriginAgentDescription = &name, &name
	res := h.Start(req)
	if _, ok := agenttest.TerminalAs[*event.StopEvent](res); !ok {
		t.Fatalf("writer did not stop: %v", res.Control())
	}
	got, err := s.Recall(ctx, ada, memory.Query{Text: "allergic to peanuts"})
	must(t, err)
	if len(got.User) != 1 || got.User[0].Text != "I am allergic to peanuts" || got.User[0].Origin.ThreadID != "t1" || got.User[0].Origin.AgentID != "chat" {
		t.Fatalf("stored: %+v", got.User)
	}
	// Nobody else recalls it.
	other, _ := s.Recall(ctx, bob, memory.Query{Text: "allergic to peanuts"})
	if len(other.User) != 0 {
		t.Fatalf("bob recalled %v", texts(other.User))
	}
}
