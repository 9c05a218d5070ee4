package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/store"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// askerFlow asks one question at the start and answers each response with
// an Out (the run stays open).
func askerFlow(t *testing.T, answered func(string)) *step.Workflow {
	ask := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.HumanInTheLoopInputRequestEvent, error) {
		req := &event.HumanInTheLoopInputRequestEvent{}
		req.Question, req.HITLType = "Name?", event.HITLInput
		req.Topic = &event.Topic{EventType: event.Str(string(topic.Control)), EventName: event.Str("HumanInTheLoopInputResponseEvent")}
		return req, nil
	}, step.Name("ask"))
	note := step.New(func(ctx step.Context, r *event.HumanInTheLoopInputResponseEvent) (*Out, error) {
		if answered != nil {
			answered(r.Response)
		}
		return &Out{}, nil
	}, step.Name("note"))
	return partial(t, "Asker", ask, note)
}

func askRun(t *testing.T, h *agenttest.Harness) (*agenttest.Result, *event.HumanInTheLoopInputRequestEvent) {
	t.Helper()
	res := h.Start(&event.StartEvent{})
	reqs := res.Get("HumanInTheLoopInputRequestEvent")
	if len(reqs) != 1 {
		t.Fatalf("%d requests after the start, want 1", len(reqs))
	}
	return res, reqs[0].(*event.HumanInTheLoopInputRequestEvent)
}

// Two answers to one question delivered at once: exactly one is accepted,
// the other refused, whichever wins.
func TestConcurrentAnswersOneAccepted(t *testing.T) {
	var mu sync.Mutex
	var got []string
	h := agenttest.New(t, askerFlow(t, func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() }))
	res, req := askRun(t, h)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		ans := &event.HumanInTheLoopInputResponseEvent{Response: string(rune('a' + i)), RequestEvent: req}
		event.Stamp(ans)
		a := res.Topic().Event(topic.Control, event.Name(ans), ans.EventID)
		wg.Go(func() { errs[i] = h.Process(a, ans, uint64(100+i)) })
	}
	wg.Wait()
	accepted := 0
	for _, err := range errs {
		switch {
		case err == nil:
			accepted++
		case !errors.Is(err, engine.ErrRefused) || !strings.Contains(err.Error(), "answered already"):
			t.Errorf("Process = %v, want nil or a refusal of an answered question", err)
		}
	}
	if accepted != 1 || len(got) != 1 {
		t.Fatalf("%d answers accepted, %d noted (%q); want exactly one", accepted, len(got), got)
	}
}

// Another replica, sharing only the store, knows nothing of the run: it
// reads the identity and the open question from the store, refuses the
// hijack and accepts the owner's answer.
func TestFenceOnAnotherReplica(t *testing.T) {
	h1 := agenttest.New(t, askerFlow(t, nil))
	res, req := askRun(t, h1)
	h2 := agenttest.New(t, askerFlow(t, nil), agenttest.WithStore(h1.Store()))
	own := res.Topic()
	mallory := own
	mallory.Thread = "mallory-thread"
	ans := &event.HumanInTheLoopInputResponseEvent{Response: "Mallory", RequestEvent: req}
	event.Stamp(ans)
	err := h2.Process(mallory.Event(topic.Control, event.Name(ans), ans.EventID), ans, 1)
	if !errors.Is(err, engine.ErrRefused) || !strings.Contains(err.Error(), "thread_id") {
		t.Fatalf("hijack on the second replica: %v, want refused for its thread_id", err)
	}
	h2.SendOn(own, &event.HumanInTheLoopInputResponseEvent{Response: "Ada", RequestEvent: req})
	r2 := h2.NewRun(agenttest.RunID(own.Run))
	if r2.Count("Out") != 1 || len(r2.DeadLetters()) != 0 {
		t.Fatalf("owner's answer on the second replica: %d Out, dead letters %v; want one Out", r2.Count("Out"), r2.DeadLetters())
	}
}

// Process refuses a subject of another class, and a run whose state was
// seeded without an identity is not entered.
func TestProcessRefusals(t *testing.T) {
	h := agenttest.New(t, askerFlow(t, nil), agenttest.WithConfigResolver(platformConfig{}))
	ev := event.Stamp(&In{})
	a := topic.Agent{Class: "Other", ID: "a", Thread: "t", Display: "d", Run: "r", Type: topic.Control, Name: "In", EventID: ev.EventBase().EventID}
	if err := h.Process(a, ev, 1); !errors.Is(err, engine.ErrRefused) || !strings.Contains(err.Error(), "agent_class") {
		t.Errorf("foreign class: %v, want refused naming agent_class", err)
	}
	a.Class = "Asker"
	run := store.RunKey{Class: "Asker", Run: "r"}
	if err := h.Store().Set(context.Background(), run.RunContext(), engine.KeyAgentConfig, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := h.Process(a, ev, 1); !errors.Is(err, engine.ErrRefused) || !strings.Contains(err.Error(), "no recorded identity") {
		t.Errorf("run without identity: %v, want refused", err)
	}
	// Recording the identity lets exactly that agent id and thread in.
	if err := engine.RecordIdentity(context.Background(), h.Store(), a, nil); err != nil {
		t.Fatal(err)
	}
	if err := h.Process(a, ev, 1); err != nil {
		t.Errorf("run with its identity recorded: %v", err)
	}
	b := a
	b.ID = "b"
	if err := engine.RecordIdentity(context.Background(), h.Store(), b, nil); !errors.Is(err, engine.ErrRefused) {
		t.Errorf("RecordIdentity over another identity: %v, want refused", err)
	}
}

// AITL questions are fenced the same way, by request_event_id: the first of
// a timeout and the delegate's answer wins, never both.
func TestDelegationAnsweredOnce(t *testing.T) {
	delegate := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.AgentInTheLoopRequestEvent, error) {
		return &event.AgentInTheLoopRequestEvent{
			StartEvent:      &event.StartEvent{},
			OtherAgentTopic: &event.Topic{AgentClass: event.Str("Worker"), AgentID: event.Str("w")},
		}, nil
	}, step.Name("delegate"))
	done := step.New(func(ctx step.Context, _ step.Either[*event.AgentInTheLoopResponseEvent, *event.AgentInTheLoopTimeoutEvent]) (*Out, error) {
		return &Out{}, nil
	}, step.Name("done"))
	h := agenttest.New(t, partial(t, "Delegator", delegate, done))
	res := h.Start(&event.StartEvent{})
	ids := res.IDs("AgentInTheLoopRequestEvent")
	if len(ids) != 1 {
		t.Fatalf("%d AITL requests, want 1", len(ids))
	}
	unknown := &event.AgentInTheLoopResponseEvent{StopEvent: &event.StopEvent{}, RequestEventID: h.NewID()}
	h.Send(res, unknown)
	timeout := &event.AgentInTheLoopTimeoutEvent{}
	timeout.RequestEventID = ids[0]
	h.Send(res, timeout)
	h.Send(res, &event.AgentInTheLoopResponseEvent{StopEvent: &event.StopEvent{}, RequestEventID: ids[0]})
	agenttest.Equal(t, res.Steps(), []string{"delegate", "done"})
	dead := res.DeadLetters()
	if len(dead) != 2 || !strings.Contains(dead[0].Reason, "not a question") || !strings.Contains(dead[1].Reason, "answered already") {
		t.Fatalf("dead letters %+v, want the unknown request and the late answer refused", dead)
	}
}
