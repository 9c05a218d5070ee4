package process_test

import (
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
)

func TestOnboardingWalkthrough(t *testing.T) {
	h := agenttest.NewProcess(t, onboardingProcess())
	h.Agent("DocChecker", checker)
	w := h.Start("acme", &Application{Applicant: "ada"})
	agenttest.Equal(t, w.Names(), []string{"Application", "CheckDocument", "DocumentChecked", "ApproveRequest"})
	req := w.Last("ApproveRequest").(*ApproveRequest)
	if err := h.Submit(w, &Approval{Approved: true, HumanWorkEvent: event.HumanWorkEvent{WorkEvent: event.WorkEvent{InResponseTo: &req.EventID}}}, manager); err != nil {
		t.Fatal(err)
	}
	cr := w.Last("CreateAccount").(*CreateAccount)
	if err := h.Submit(w, &AccountCreated{Account: "acc-1", ProgramWorkEvent: event.ProgramWorkEvent{WorkEvent: event.WorkEvent{InResponseTo: &cr.EventID}}}, program); err != nil {
		t.Fatal(err)
	}
	stop, ok := w.Terminal()
	if !ok {
		t.Fatalf("no terminal event: %s", w)
	}
	if o, ok := stop.(*Onboarded); !ok || o.Account != "acc-1" {
		t.Fatalf("terminal %#v", stop)
	}
	t.Log(w)
}
