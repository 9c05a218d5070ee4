package process_test

import (
	"errors"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/process"
	"github.com/saap-go/agent/step"
)

type ReviewRequest struct{ event.HumanWorkRequestEvent }
type Review struct {
	event.HumanWorkEvent
	OK bool `json:"ok"`
}

func init() {
	event.MustRegister[ReviewRequest]()
	event.MustRegister[Review]()
}

var (
	reviewerA = &event.UserIdentity{ID: "rev-a", Name: "A", Email: "a@example.com", Roles: []string{"reviewer"}}
	reviewerB = &event.UserIdentity{ID: "rev-b", Name: "B", Email: "b@example.com", Roles: []string{"reviewer"}}
)

// reviewProcess fans out: one application goes to two reviewers and an
// agent at once; the decision waits for all three answers, in any order.
func reviewProcess(decisions *int) *process.Process {
	begin := step.New(func(ctx step.Context, a *Application) ([]event.Event, error) {
		ask := func(user string) *ReviewRequest {
			return &ReviewRequest{HumanWorkRequestEvent: event.HumanWorkRequestEvent{UserIDs: []string{user},
				Forms: []event.Event{&Review{}}}}
		}
		return []event.Event{ask("rev-a"), ask("rev-b"),
			&CheckDocument{AgentWorkRequestEvent: event.AgentWorkRequestEvent{StartEvent: &CheckStart{Document: a.Applicant}}}}, nil
	}, step.Name("Begin"), step.Emits((*ReviewRequest)(nil), (*CheckDocument)(nil)))
	decide := step.New(func(ctx step.Context, rs [2]*Review, d *DocumentChecked) (step.Either[*Onboarded, *Rejected], error) {
		*decisions++
		if rs[0].OK && rs[1].OK && d.AgentStopEvent.(*CheckStop).Valid {
			return step.OneOf[*Onboarded, *Rejected](&Onboarded{Account: "acc"}), nil
		}
		return step.Other[*Onboarded](&Rejected{}), nil
	}, step.Name("Decide"))
	return &process.Process{Class: "Review", Steps: []*step.Step{begin, decide},
		Routes: []process.Route{
			process.Human((*ReviewRequest)(nil), process.Who{Roles: []string{"reviewer"}}),
			process.Agent((*CheckDocument)(nil), "DocChecker", "default", (*DocumentChecked)(nil)),
		}}
}

func TestFanOutAndMultiInput(t *testing.T) {
	decisions := 0
	h := agenttest.NewProcess(t, reviewProcess(&decisions))
	h.Agent("DocChecker", checker)
	w := h.Start("acme", &Application{Applicant: "ada"})
	agenttest.Equal(t, w.Names(), []string{"Application", "ReviewRequest", "ReviewRequest", "CheckDocument", "DocumentChecked"})

	var reqs []*ReviewRequest
	for _, e := range w.Events() {
		if r, ok := e.(*ReviewRequest); ok {
			reqs = append(reqs, r)
		}
	}
	review := func(req *ReviewRequest, ok bool) *Review {
		r := &Review{OK: ok}
		r.InResponseTo = &req.EventID
		return r
	}
	// Each request names its reviewer: the other one may not answer it.
	if err := h.Submit(w, review(reqs[0], true), reviewerB); !errors.Is(err, process.ErrForbidden) {
		t.Fatalf("rev-b answered rev-a's request: %v", err)
	}
	if err := h.Submit(w, review(reqs[1], true), reviewerB); err != nil {
		t.Fatal(err)
	}
	if _, ended := w.Terminal(); ended || decisions != 0 {
		t.Fatalf("decided on one review: %s", w)
	}
	// One answer per request; the same answer again is a harmless retry.
	if err := h.Submit(w, review(reqs[1], false), reviewerB); !errors.Is(err, process.ErrAnswered) {
		t.Fatalf("second answer: %v", err)
	}
	if err := h.Submit(w, review(reqs[1], true), reviewerB); err != nil {
		t.Fatalf("retried answer: %v", err)
	}
	if err := h.Submit(w, review(reqs[0], true), reviewerA); err != nil {
		t.Fatal(err)
	}
	stop, ended := w.Terminal()
	if !ended {
		t.Fatalf("not ended: %s", w)
	}
	if _, ok := stop.(*Onboarded); !ok || decisions != 1 {
		t.Fatalf("ended with %s after %d decisions", event.Name(stop), decisions)
	}
}

func TestMultiInputAnyOrder(t *testing.T) {
	// The agent answers last this time: the decision waits for it.
	decisions := 0
	h := agenttest.NewProcess(t, reviewProcess(&decisions))
	h.Agent("DocChecker", func(start event.Event) (event.Event, error) {
		return nil, nil // answers later, see below
	})
	w := h.Start("acme", &Application{Applicant: "ada"})
	for _, e := range w.Events() {
		if r, ok := e.(*ReviewRequest); ok {
			rv := &Review{OK: true}
			rv.InResponseTo = &r.EventID
			who := reviewerA
			if r.UserIDs[0] == "rev-b" {
				who = reviewerB
			}
			if err := h.Submit(w, rv, who); err != nil {
				t.Fatal(err)
			}
		}
	}
	pending := h.AgentRuns()
	if _, ended := w.Terminal(); ended || len(pending) != 1 {
		t.Fatalf("ended before the agent answered, or the agent was not asked: %s", w)
	}
	// The agent's run ends now: its stop comes back as work.
	h.Finish(pending[0], &CheckStop{Valid: true})
	if stop, ended := w.Terminal(); !ended || event.Name(stop) != "Onboarded" || decisions != 1 {
		t.Fatalf("not onboarded: %s", w)
	}
}
