package process_test

import (
	"errors"
	"fmt"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/process"
	"github.com/saap-go/agent/step"
)

// The test process: an application is checked by an agent, approved by a
// human, and its account created by a program.

type Application struct {
	event.ProcessStartEvent
	Applicant string `json:"applicant"`
	Fail      string `json:"fail"` // makes a step fail, for the failure tests
}

type CheckDocument struct{ event.AgentWorkRequestEvent }
type DocumentChecked struct{ event.AgentWorkEvent }
type CheckStart struct {
	event.StartEvent
	Document string `json:"document"`
}
type CheckStop struct {
	event.StopEvent
	Valid bool `json:"valid"`
}

type ApproveRequest struct{ event.HumanWorkRequestEvent }
type Approval struct {
	event.HumanWorkEvent
	Approved bool `json:"approved"`
}

type CreateAccount struct{ event.ProgramWorkRequestEvent }
type AccountCreated struct {
	event.ProgramWorkEvent
	Account string `json:"account"`
}

type Onboarded struct {
	event.ProcessStopEvent
	Account string `json:"account"`
}
type Rejected struct{ event.ProcessStopEvent }

func init() {
	event.MustRegister[Application]()
	event.MustRegister[CheckDocument]()
	event.MustRegister[DocumentChecked]()
	event.MustRegister[CheckStart]()
	event.MustRegister[CheckStop]()
	event.MustRegister[ApproveRequest]()
	event.MustRegister[Approval]()
	event.MustRegister[CreateAccount]()
	event.MustRegister[AccountCreated]()
	event.MustRegister[Onboarded]()
	event.MustRegister[Rejected]()
}

var (
	manager = &event.UserIdentity{ID: "u-1", Name: "Mia Manager", Email: "mia@example.com", Roles: []string{"manager"}}
	intern  = &event.UserIdentity{ID: "u-2", Name: "Ian Intern", Email: "ian@example.com", Roles: []string{"intern"}}
	program = &event.UserIdentity{ID: "accounts-service", Name: "accounts", Email: "accounts@example.com", Roles: []string{"service"}}
)

type onboarding struct{}

func (onboarding) Begin(ctx step.Context, a *Application) (*CheckDocument, error) {
	if a.Fail == "begin" {
		return nil, step.Userf("cannot start %s", a.Applicant)
	}
	return &CheckDocument{AgentWorkRequestEvent: event.AgentWorkRequestEvent{
		StartEvent: &CheckStart{Document: "passport of " + a.Applicant}}}, nil
}

func (onboarding) Checked(ctx step.Context, d *DocumentChecked) (step.Either[*ApproveRequest, *Rejected], error) {
	stop, ok := d.AgentStopEvent.(*CheckStop)
	if !ok {
		return step.Either[*ApproveRequest, *Rejected]{}, fmt.Errorf("unexpected stop %T", d.AgentStopEvent)
	}
	if !stop.Valid {
		return step.Other[*ApproveRequest](&Rejected{}), nil
	}
	return step.OneOf[*ApproveRequest, *Rejected](&ApproveRequest{HumanWorkRequestEvent: event.HumanWorkRequestEvent{
		Forms: []event.Event{&Approval{}}}}), nil
}

func (onboarding) Approved(ctx step.Context, a *Approval, app *Application) (step.Either[*CreateAccount, *Rejected], error) {
	if !a.Approved {
		return step.Other[*CreateAccount](&Rejected{}), nil
	}
	if app.Fail == "approved" {
		return step.Either[*CreateAccount, *Rejected]{}, errors.New("the approval step broke")
	}
	return step.OneOf[*CreateAccount, *Rejected](&CreateAccount{}), nil
}

func (onboarding) Created(ctx step.Context, c *AccountCreated) (*Onboarded, error) {
	return &Onboarded{Account: c.Account}, nil
}

func onboardingProcess() *process.Process {
	var o onboarding
	return &process.Process{
		Class: "Onboarding",
		Steps: []*step.Step{step.New(o.Begin), step.New(o.Checked), step.New(o.Approved), step.New(o.Created)},
		Routes: []process.Route{
			process.Agent((*CheckDocument)(nil), "DocChecker", "default", (*DocumentChecked)(nil)),
			process.Human((*ApproveRequest)(nil), process.Who{Roles: []string{"manager"}}),
			process.Program((*CreateAccount)(nil), process.Who{IDs: []string{"accounts-service"}}),
		},
	}
}

// checker is the fake DocChecker: a document is valid unless it names
// "forger".
func checker(start event.Event) (event.Event, error) {
	s := start.(*CheckStart)
	return &CheckStop{Valid: s.Document != "passport of forger"}, nil
}
