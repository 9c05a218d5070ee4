package knowledge_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/knowledge"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
	"github.com/saap-go/agent/step"
)

// spy is a retriever over a BM25 that records that it was searched.
type spy struct {
	*knowledge.BM25
	mu       sync.Mutex
	searched int
}

func (s *spy) Retrieve(ctx context.Context, q knowledge.Query) ([]knowledge.Result, error) {
	s.mu.Lock()
	s.searched++
	s.mu.Unlock()
	return s.BM25.Retrieve(ctx, q)
}

func (s *spy) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.searched
}

func collection(t *testing.T, docs ...knowledge.Document) *spy {
	t.Helper()
	ix := knowledge.NewBM25()
	for _, d := range docs {
		cs, err := knowledge.Chunker{Size: 200}.Split(d)
		must(t, err)
		must(t, ix.Add(cs...))
	}
	return &spy{BM25: ix}
}

var (
	annasNotes = event.KnowledgeReference{Database: "private", Namespace: "anna"}
	bobsNotes  = event.KnowledgeReference{Database: "private", Namespace: "bob"}
	hrPolicies = event.KnowledgeReference{Database: "hr", Namespace: "policies"}
	anna       = &event.UserIdentity{ID: "anna", Name: "Anna", Email: "anna@example.ch", Roles: []string{}}
	bob        = &event.UserIdentity{ID: "bob", Name: "Bob", Email: "bob@example.ch", Roles: []string{},
		ActingWithinTenant: &event.TenantIdentity{ID: "acme", Name: "ACME", AccessRules: []string{}}}
)

type fixture struct {
	cap           *knowledge.Capability
	anna, bob, hr *spy
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{
		anna: collection(t, knowledge.Document{ID: "diary", Title: "Anna's diary", Text: "My vacation in Ticino was sunny."}),
		bob:  collection(t, knowledge.Document{ID: "salary", Title: "Bob's salary", Text: "Bob's vacation allowance is 30 days."}),
		hr: collection(t,
			knowledge.Document{ID: "leave", Title: "Leave policy", Text: "Every employee has 25 vacation days a year.\n\nUnused days expire in March."},
			knowledge.Document{ID: "travel", Title: "Travel policy", Text: "Trains are booked second class."}),
	}
	f.cap = &knowledge.Capability{
		Collections: map[event.KnowledgeReference]knowledge.Retriever{annasNotes: f.anna, bobsNotes: f.bob, hrPolicies: f.hr},
		Access: knowledge.ACL{
			annasNotes: {Users: []string{"anna"}},
			bobsNotes:  {Users: []string{"bob"}},
			hrPolicies: {Orgs: []string{"acme"}, Users: []string{"anna"}},
		},
		K: 3,
	}
	return f
}

func blockText(e *event.KnowledgeSearchedEvent) string {
	var b strings.Builder
	for _, m := range e.Block {
		b.WriteString(m.Content() + "\n")
	}
	return b.String()
}

// Another user's collection is never searched: the request names it, the
// answer refuses it and the block tells the model so.
func TestSearchNeverReadsAnotherUsersCollection(t *testing.T) {
	f := newFixture(t)
	res, err := f.cap.Search(context.Background(), anna, &event.SearchKnowledgeEvent{
		References: []event.KnowledgeReference{bobsNotes, hrPolicies, annasNotes, bobsNotes}, Query: "vacation days", CiteSources: true})
	if err != nil {
		t.Fatal(err)
	}
	if f.bob.count() != 0 {
		t.Fatalf("Bob's collection was searched for Anna")
	}
	if f.hr.count() != 1 || f.anna.count() != 1 {
		t.Errorf("searched hr %d, anna %d times", f.hr.count(), f.anna.count())
	}
	if len(res.Refused) != 1 || res.Refused[0] != bobsNotes {
		t.Errorf("refused %v", res.Refused)
	}
	text := blockText(res)
	for _, n := range res.GroundingNodes {
		if strings.Contains(n.Content, "30 days") {
			t.Errorf("Bob's document reached Anna: %+v", n)
		}
	}
	if strings.Contains(text, "30 days") || !strings.Contains(text, `"private/bob"`) || !strings.Contains(text, "25 vacation days") {
		t.Errorf("block:\n%s", text)
	}
	if len(res.GroundingNodes) == 0 || res.GroundingNodes[0].Score == nil || !strings.Contains(text, "id='"+res.GroundingNodes[0].CitationID()+"'") {
		t.Errorf("nodes %+v\n%s", res.GroundingNodes, text)
	}
	if !strings.Contains(text, "cite it by its id") {
		t.Errorf("no citation instruction:\n%s", text)
	}

	// Through the organisation: Bob reads HR, not Anna's notes.
	res, err = f.cap.Search(context.Background(), bob, &event.SearchKnowledgeEvent{
		References: []event.KnowledgeReference{annasNotes, hrPolicies}, Query: "vacation", CiteSources: false})
	if err != nil {
		t.Fatal(err)
	}
	if f.anna.count() != 1 || len(res.Refused) != 1 || res.Refused[0] != annasNotes || strings.Contains(blockText(res), "Ticino") {
		t.Errorf("Bob's search: anna searched %d, refused %v\n%s", f.anna.count(), res.Refused, blockText(res))
	}
	if strings.Contains(blockText(res), "cite it by its id") {
		t.Error("citation instruction though cite_sources is false")
	}
}

func TestSearchRefusesEverythingDenied(t *testing.T) {
	f := newFixture(t)
	unknown := event.KnowledgeReference{Database: "nope", Namespace: "x"}
	for name, user := range map[string]*event.UserIdentity{"stranger": {ID: "eve"}, "no user": nil} {
		res, err := f.cap.Search(context.Background(), user, &event.SearchKnowledgeEvent{
			References: []event.KnowledgeReference{annasNotes, hrPolicies, unknown}, Query: "vacation", CiteSources: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.GroundingNodes) != 0 || len(res.Refused) != 3 {
			t.Errorf("%s: nodes %d, refused %v", name, len(res.GroundingNodes), res.Refused)
		}
		if text := blockText(res); !strings.Contains(text, `"nope/x"`) || strings.Contains(text, "REFERENCE_DOCUMENT") {
			t.Errorf("%s: block\n%s", name, text)
		}
	}
	if f.anna.count()+f.hr.count() != 0 {
		t.Errorf("a denied collection was searched")
	}
	// No Access at all: nothing is granted by omission.
	open := &knowledge.Capability{Collections: f.cap.Collections}
	res, err := open.Search(context.Background(), anna, &event.SearchKnowledgeEvent{References: []event.KnowledgeReference{annasNotes}, Query: "vacation"})
	if err != nil || len(res.Refused) != 1 || f.anna.count() != 0 {
		t.Errorf("without Access: %v %v", res, err)
	}
}

func TestSearchEmptyAndNothingFound(t *testing.T) {
	f := newFixture(t)
	res, err := f.cap.Search(context.Background(), anna, &event.SearchKnowledgeEvent{Query: "x", ToolCallID: event.Str("c1")})
	if err != nil || len(res.Block) != 0 || *res.ToolCallID != "c1" {
		t.Errorf("no references: %+v %v", res, err)
	}
	res, err = f.cap.Search(context.Background(), anna, &event.SearchKnowledgeEvent{References: []event.KnowledgeReference{hrPolicies}, Query: "zebra"})
	if err != nil || len(res.GroundingNodes) != 0 || !strings.Contains(blockText(res), "hold nothing") {
		t.Errorf("nothing found: %s %v", blockText(res), err)
	}
	// The event survives the wire.
	raw, err := event.Marshal(res)
	must(t, err)
	back, err := event.Unmarshal(raw)
	must(t, err)
	if got, ok := back.(*event.KnowledgeSearchedEvent); !ok || len(got.Block) != len(res.Block) {
		t.Errorf("round trip: %T %s", back, raw)
	}
	refs := make([]event.KnowledgeReference, knowledge.MaxReferences+1)
	if _, err := f.cap.Search(context.Background(), anna, &event.SearchKnowledgeEvent{References: refs, Query: "x"}); err == nil {
		t.Error("too many references accepted")
	}
}

// The capability as a step: a workflow asks with a SearchKnowledgeEvent
// and answers from the KnowledgeSearchedEvent; the user is the start
// event's.
func TestCapabilityStep(t *testing.T) {
	f := newFixture(t)
	ask := func(ctx step.Context, m *event.UserMessageEvent) (*event.SearchKnowledgeEvent, error) {
		return &event.SearchKnowledgeEvent{References: []event.KnowledgeReference{bobsNotes, hrPolicies}, Query: m.Messages[len(m.Messages)-1].Content(), CiteSources: true}, nil
	}
	answer := func(ctx step.Context, k *event.KnowledgeSearchedEvent) (*event.LLMStopEvent, error) {
		stop := &event.LLMStopEvent{}
		stop.OutputMessages = []event.Message{event.MessageFromString(event.RoleAssistant, blockText(k))}
		return stop, nil
	}
	w, err := step.NewWorkflow("KnowledgeAgent", step.New(ask, step.Name("ask")), f.cap.Step("search_knowledge"), step.New(answer, step.Name("answer")))
	must(t, err)
	h := agenttest.New(t, w, agenttest.FailOnStall())
	res := h.Start(&event.UserMessageEvent{User: anna, Messages: []event.ChatMessage{event.Text("user", "How many vacation days?")}})
	searched := res.Get("KnowledgeSearchedEvent")
	if len(searched) != 1 {
		t.Fatalf("events %v", res.Names())
	}
	k := searched[0].(*event.KnowledgeSearchedEvent)
	if len(k.Refused) != 1 || k.Refused[0] != bobsNotes || f.bob.count() != 0 || len(k.GroundingNodes) == 0 {
		t.Errorf("refused %v, bob searched %d, nodes %d", k.Refused, f.bob.count(), len(k.GroundingNodes))
	}
	// It is displayed: a client lists the sources.
	shown := false
	for _, e := range res.Display() {
		shown = shown || event.Name(e) == "KnowledgeSearchedEvent"
	}
	if !shown {
		t.Errorf("KnowledgeSearchedEvent not displayed")
	}
	if _, ok := agenttest.TerminalAs[*event.LLMStopEvent](res); !ok {
		t.Errorf("terminal %v", res.Names())
	}
}

// The capability as a tool of the tool loop: the model searches, the
// result holds what the user may read, and the model answers from it.
func TestCapabilityTool(t *testing.T) {
	f := newFixture(t)
	p := llmtest.New(
		llmtest.NewTurn().Tool("c1", knowledge.ToolName, `{"query": "vacation days", "collections": ["private/bob", "hr/policies"]}`),
		llmtest.Reply("You have 25 vacation days."),
	)
	loop := &llm.Loop{Provider: p, Model: "m", System: "Answer from the documents.", Tools: []llm.Callable{f.cap.Tool()}}
	w, err := step.NewWorkflow("ToolAgent", loop.Steps()...)
	must(t, err)
	res := agenttest.New(t, w, agenttest.FailOnStall()).Start(&event.UserMessageEvent{User: anna, Messages: []event.ChatMessage{event.Text("user", "How many vacation days do I have?")}})
	if _, ok := agenttest.TerminalAs[*event.LLMStopEvent](res); !ok {
		t.Fatalf("terminal %v", res.Names())
	}
	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	var def *llm.Tool
	for i := range reqs[0].Tools {
		if reqs[0].Tools[i].Name == knowledge.ToolName {
			def = &reqs[0].Tools[i]
		}
	}
	if def == nil || !strings.Contains(def.Description, "hr/policies") || !json.Valid(def.Schema) {
		t.Fatalf("tool definition %+v", def)
	}
	var result string
	for _, m := range reqs[1].Messages {
		for _, b := range m.Content {
			if b.Kind == llm.BlockToolResult {
				result += b.Text
			}
		}
	}
	if !strings.Contains(result, "25 vacation days") || strings.Contains(result, "30 days") || !strings.Contains(result, `"private/bob"`) {
		t.Errorf("tool result: %s", result)
	}
	if f.bob.count() != 0 {
		t.Error("the tool searched Bob's collection for Anna")
	}
	// Without a user in the context nothing is readable.
	out, err := f.cap.Tool().Call(context.Background(), json.RawMessage(`{"query":"vacation"}`))
	if err != nil || strings.Contains(out, "REFERENCE_DOCUMENT") {
		t.Errorf("no user: %q %v", out, err)
	}
	out, err = f.cap.Tool().Call(knowledge.WithUser(context.Background(), bob), json.RawMessage(`{"query":"vacation"}`))
	if err != nil || !strings.Contains(out, "30 days") || strings.Contains(out, "Ticino") {
		t.Errorf("as Bob: %q %v", out, err)
	}
	if _, err := f.cap.Tool().Call(context.Background(), json.RawMessage(`{"query":" "}`)); err == nil {
		t.Error("an empty query was searched")
	}
}
