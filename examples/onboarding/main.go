// Command onboarding runs a business process that hands work to an agent,
// a human and a program: an agent checks the applicant's document, a
// manager approves the application over HTTP, and the accounts service (a
// program) creates the account. It prints the walkthrough as the work goes
// back and forth.
//
// Usage:
//
//	go run ./examples/onboarding                        # approved and onboarded
//	go run ./examples/onboarding -document "a selfie"   # the agent rejects the document
//	go run ./examples/onboarding -refuse                # the manager refuses
//
// Everything runs in this one program on an embedded NATS server; with
// NATS_URL set it joins that server instead.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	_ "github.com/saap-go/agent/embedded" // a NATS server in the process when NATS_URL is unset
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/process"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store/natskv"
	_ "github.com/saap-go/agent/store/redis" // REDIS_URL keeps the agent's state in Redis
	"github.com/saap-go/agent/topic"
)

// Application starts a walkthrough.
type Application struct {
	event.ProcessStartEvent
	Applicant string `json:"applicant"`
	Document  string `json:"document"`
}

// CheckDocument asks the DocChecker agent to check the document.
type CheckDocument struct{ event.AgentWorkRequestEvent }

// DocumentChecked is the agent's answer, its stop event inside.
type DocumentChecked struct{ event.AgentWorkEvent }

// ApproveRequest asks a manager to approve.
type ApproveRequest struct{ event.HumanWorkRequestEvent }

// Approval is the form the manager fills in.
type Approval struct {
	event.HumanWorkEvent
	Approved bool   `json:"approved"`
	Comment  string `json:"comment"`
}

// CreateAccount asks the accounts service for an account.
type CreateAccount struct {
	event.ProgramWorkRequestEvent
	Applicant string `json:"applicant"`
}

// AccountCreated is the accounts service's answer.
type AccountCreated struct {
	event.ProgramWorkEvent
	Account string `json:"account"`
}

// Onboarded ends a walkthrough that went through.
type Onboarded struct {
	event.ProcessStopEvent
	Account string `json:"account"`
}

// Rejected ends a walkthrough that did not.
type Rejected struct {
	event.ProcessStopEvent
	Reason string `json:"reason"`
}

// CheckStart starts the agent's run; CheckResult ends it.
type CheckStart struct {
	event.StartEvent
	Document string `json:"document"`
}

// CheckResult is the agent's verdict.
type CheckResult struct {
	event.StopEvent
	Valid  bool   `json:"valid"`
	Reason string `json:"reason"`
}

func init() {
	event.MustRegister[Application]()
	event.MustRegister[CheckDocument]()
	event.MustRegister[DocumentChecked]()
	event.MustRegister[ApproveRequest]()
	event.MustRegister[Approval]()
	event.MustRegister[CreateAccount]()
	event.MustRegister[AccountCreated]()
	event.MustRegister[Onboarded]()
	event.MustRegister[Rejected]()
	event.MustRegister[CheckStart]()
	event.MustRegister[CheckResult]()
}

// DocChecker is the agent: a document is valid when it is a passport or an
// identity card.
type DocChecker struct{}

// Steps is the agent's one step.
func (d DocChecker) Steps() []*step.Step { return []*step.Step{step.New(d.Check)} }

// Check judges the document.
func (DocChecker) Check(ctx step.Context, s *CheckStart) (*CheckResult, error) {
	doc := strings.ToLower(s.Document)
	if strings.Contains(doc, "passport") || strings.Contains(doc, "identity card") {
		return &CheckResult{Valid: true, Reason: "an identity document"}, nil
	}
	return &CheckResult{Reason: fmt.Sprintf("%q is no identity document", s.Document)}, nil
}

// Onboarding is the process.
type Onboarding struct{}

// Begin asks the agent to check the document.
func (Onboarding) Begin(ctx step.Context, a *Application) (*CheckDocument, error) {
	return &CheckDocument{AgentWorkRequestEvent: event.AgentWorkRequestEvent{
		StartEvent: &CheckStart{Document: a.Document}}}, nil
}

// Checked asks a manager to approve a valid document, and rejects others.
func (Onboarding) Checked(ctx step.Context, d *DocumentChecked) (step.Either[*ApproveRequest, *Rejected], error) {
	res, ok := d.AgentStopEvent.(*CheckResult)
	if !ok {
		return step.Either[*ApproveRequest, *Rejected]{}, fmt.Errorf("the checker ended with %s", event.Name(d.AgentStopEvent))
	}
	if !res.Valid {
		return step.Other[*ApproveRequest](&Rejected{Reason: res.Reason}), nil
	}
	return step.OneOf[*ApproveRequest, *Rejected](&ApproveRequest{HumanWorkRequestEvent: event.HumanWorkRequestEvent{
		Forms: []event.Event{&Approval{}}}}), nil
}

// Approved asks the accounts service for an account once a manager approved.
func (Onboarding) Approved(ctx step.Context, a *Approval, app *Application) (step.Either[*CreateAccount, *Rejected], error) {
	if !a.Approved {
		return step.Other[*CreateAccount](&Rejected{Reason: "refused by " + a.SubmittedBy.Name + ": " + a.Comment}), nil
	}
	return step.OneOf[*CreateAccount, *Rejected](&CreateAccount{Applicant: app.Applicant}), nil
}

// Created ends the walkthrough.
func (Onboarding) Created(ctx step.Context, c *AccountCreated) (*Onboarded, error) {
	return &Onboarded{Account: c.Account}, nil
}

// Process declares the process and who does which work.
func Process() *process.Process {
	var o Onboarding
	return &process.Process{
		Class:       "Onboarding",
		Description: "onboards a new customer",
		Steps: []*step.Step{
			step.New(o.Begin, step.Description("asks the agent to check the document")),
			step.New(o.Checked, step.Description("asks a manager to approve")),
			step.New(o.Approved, step.Description("asks the accounts service for an account")),
			step.New(o.Created, step.Description("done")),
		},
		Routes: []process.Route{
			process.Agent((*CheckDocument)(nil), "DocChecker", "default", (*DocumentChecked)(nil)).WithTimeout(time.Minute),
			process.Human((*ApproveRequest)(nil), process.Who{Roles: []string{"manager"}}),
			process.Program((*CreateAccount)(nil), process.Who{IDs: []string{"accounts-service"}}),
		},
	}
}

// The people and programs of the demo. A real deployment identifies callers
// through its gateway's authentication.
var (
	manager  = &event.UserIdentity{ID: "u-17", Name: "Mia Manager", Email: "mia@example.com", Roles: []string{"manager"}}
	accounts = &event.UserIdentity{ID: "accounts-service", Name: "Accounts", Email: "accounts@example.com", Roles: []string{"service"}}
)

func main() {
	applicant := flag.String("applicant", "Ada Lovelace", "who applies")
	document := flag.String("document", "passport of Ada Lovelace", "the document the agent checks")
	refuse := flag.Bool("refuse", false, "the manager refuses")
	verbose := flag.Bool("v", false, "log the runners' info messages")
	flag.Parse()
	if err := run(*applicant, *document, *refuse, *verbose, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "onboarding:", err)
		os.Exit(1)
	}
}

func run(applicant, document string, refuse, verbose bool, out io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The agent starts first: without NATS_URL it starts an embedded
	// server, which the process then joins.
	checker, err := agent.New(DocChecker{}, agent.Standalone(), agent.WithLogger(log), agent.WithShutdownTimeout(time.Second))
	if err != nil {
		return err
	}
	agentDone := make(chan error, 1)
	go func() { agentDone <- checker.Run(runCtx) }()
	select {
	case <-checker.Ready():
	case err := <-agentDone:
		return err
	}
	// The bus's own warnings at shutdown (consumers seeing the embedded
	// server go) are noise in a demo; -v shows them.
	busLevel := slog.LevelError
	if verbose {
		busLevel = slog.LevelInfo
	}
	busLog := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: busLevel}))
	b, err := natsbus.Connect(natsbus.Config{URL: checker.Info().NATSURL, Logger: busLog})
	if err != nil {
		return err
	}
	defer b.Close()
	store, err := natskv.New(ctx, b.JetStream(), natskv.Config{Bucket: "onboarding_demo", TTL: time.Hour})
	if err != nil {
		return err
	}

	// The process runner, with its agent delegator.
	p := Process()
	runner, err := process.NewRunner(p, process.WithBus(b), process.WithStore(store), process.WithLogger(log))
	if err != nil {
		return err
	}
	procDone := make(chan error, 1)
	go func() { procDone <- runner.Run(runCtx) }()
	select {
	case <-runner.Ready():
	case err := <-procDone:
		return err
	}
	defer func() {
		cancel()
		<-procDone
		_ = b.Close() // before the agent's embedded server goes
		<-agentDone
	}()

	// Humans and programs submit over HTTP. The demo's callers name
	// themselves in a header.
	sub, err := process.NewSubmitter(b, store, p)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: sub.Handler(func(r *http.Request) (*event.UserIdentity, error) {
		switch r.Header.Get("X-Demo-User") {
		case manager.ID:
			return manager, nil
		case accounts.ID:
			return accounts, nil
		}
		return nil, errors.New("unknown caller")
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	base := "http://" + ln.Addr().String()

	// Watch the walkthrough; the manager and the accounts service answer
	// their requests as they come.
	const id = "acme"
	work := make(chan event.Event, 16)
	done := make(chan event.Event, 1)
	s, err := b.Subscribe(ctx, "process.Onboarding.>", "", func(m *bus.Msg) {
		t, err := topic.ParseProcess(m.Subject)
		if err != nil {
			return
		}
		ev, err := event.Unmarshal(m.Data)
		if err != nil {
			return
		}
		fmt.Fprintln(out, describe(t, ev))
		switch ev.(type) {
		case *ApproveRequest, *CreateAccount:
			work <- ev
		case *Onboarded, *Rejected, *event.ProcessExceptionEvent:
			done <- ev
		}
	})
	if err != nil {
		return err
	}
	defer func() { _ = s.Unsubscribe() }()

	app := &Application{Applicant: applicant, Document: document}
	body, _ := event.Marshal(app)
	var started struct {
		Walkthrough string `json:"walkthrough_id"`
	}
	if err := post(ctx, base+"/processes/Onboarding/"+id+"/walkthroughs", manager.ID, body, &started); err != nil {
		return err
	}
	w := started.Walkthrough

	timeout := time.After(time.Minute)
	for {
		select {
		case ev := <-work:
			if err := answer(ctx, base, id, w, ev, refuse); err != nil {
				return err
			}
		case ev := <-done:
			switch e := ev.(type) {
			case *Onboarded:
				fmt.Fprintf(out, "\nwalkthrough %s: %s is onboarded, account %s\n", w, applicant, e.Account)
			case *Rejected:
				fmt.Fprintf(out, "\nwalkthrough %s: %s is not onboarded: %s\n", w, applicant, e.Reason)
			case *event.ProcessExceptionEvent:
				return fmt.Errorf("the walkthrough failed: %s", e.Message)
			}
			return nil
		case <-timeout:
			return errors.New("the walkthrough did not end within a minute")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// answer is the manager's or the accounts service's part.
func answer(ctx context.Context, base, id, walk string, req event.Event, refuse bool) error {
	reqID := req.EventBase().EventID
	var ev event.Event
	var who string
	switch r := req.(type) {
	case *ApproveRequest:
		a := &Approval{Approved: !refuse, Comment: "welcome"}
		if refuse {
			a.Comment = "missing references"
		}
		a.InResponseTo = &reqID
		ev, who = a, manager.ID
	case *CreateAccount:
		c := &AccountCreated{Account: "acc-" + strings.ToLower(strings.Fields(r.Applicant + " x")[0])}
		c.InResponseTo = &reqID
		ev, who = c, accounts.ID
	}
	body, err := event.Marshal(ev)
	if err != nil {
		return err
	}
	return post(ctx, base+"/processes/Onboarding/"+id+"/walkthroughs/"+walk+"/work", who, body, nil)
}

func post(ctx context.Context, url, user string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("X-Demo-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("POST %s: %s: %s", url, resp.Status, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// describe renders one event of the walkthrough as a line.
func describe(t topic.Process, ev event.Event) string {
	arrow := "<-"
	if t.Type == topic.WorkRequest {
		arrow = "->"
	}
	line := fmt.Sprintf("%-13s %s %-16s", t.Type, arrow, event.Name(ev))
	switch e := ev.(type) {
	case *Application:
		return line + " " + e.Applicant + " applies with " + e.Document
	case *CheckDocument:
		return line + " agent " + *e.AgentClass + " checks the document"
	case *DocumentChecked:
		r, _ := e.AgentStopEvent.(*CheckResult)
		verdict := "invalid"
		if r != nil && r.Valid {
			verdict = "valid"
		}
		reason := ""
		if r != nil {
			reason = r.Reason
		}
		return line + " agent " + *e.SubmittedBy.AgentClass + ": " + verdict + " (" + reason + ")"
	case *ApproveRequest:
		return line + " human with role " + strings.Join(e.UserRoles, ", ") + " approves"
	case *Approval:
		verdict := "refused"
		if e.Approved {
			verdict = "approved"
		}
		return line + " human " + e.SubmittedBy.Name + ": " + verdict
	case *CreateAccount:
		return line + " program creates an account for " + e.Applicant
	case *AccountCreated:
		return line + " program " + e.SubmittedBy.ID + ": account " + e.Account
	case *Onboarded:
		return line + " done"
	case *Rejected:
		return line + " " + e.Reason
	case *event.ProcessExceptionEvent:
		return line + " " + e.Message
	}
	return line
}
