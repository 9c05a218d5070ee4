// Command approval runs ExpenseAgent, which approves small expense claims
// itself and asks a person to confirm larger ones, together with the HTTP
// gateway, in one process.
//
// Usage:
//
//	go run ./examples/approval               # both paths with scripted answers, then exit
//	go run ./examples/approval -serve :8080  # serve the gateway; answer with curl (see README.md)
//
// With no NATS_URL it starts an embedded nats-server; with NATS_URL it joins
// that server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/saap-go/agent"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/examples/internal/demo"
	"github.com/saap-go/agent/examples/internal/demo/demotrace"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
	_ "github.com/saap-go/agent/store/redis" // REDIS_URL keeps run state in Redis
)

// ExpenseClaim starts a run: someone claims Amount (in CHF) for
// Description.
type ExpenseClaim struct {
	event.StartEvent
	Description string  `json:"description"`
	Amount      float64 `json:"amount"`
}

// ExpenseDecided ends the run with the decision.
type ExpenseDecided struct {
	event.StopEvent
	// Decision is "approved" or "rejected".
	Decision string `json:"decision"`
	// Answer says who decided and why, for the person who claimed.
	Answer string `json:"answer"`
}

func init() {
	event.MustRegister[ExpenseClaim]()
	event.MustRegister[ExpenseDecided]()
}

// ExpenseAgent approves claims up to Limit itself; above it a person must
// confirm within Wait, or the claim is escalated.
type ExpenseAgent struct {
	// Limit is the largest amount approved without asking.
	Limit float64
	// Wait is how long the approver has to answer.
	Wait time.Duration
}

// Class is the agent class: the subject token and the gateway's route.
func (a *ExpenseAgent) Class() string { return "ExpenseAgent" }

// Describe gives the texts discovery publishes.
func (a *ExpenseAgent) Describe() agent.Description {
	return agent.Description{
		Name: event.L("Spesen", "Expenses", "Frais", "Spese"),
		Description: event.L("Genehmigt Spesen; grössere Beträge bestätigt eine Person.",
			"Approves expense claims; a person confirms larger amounts.",
			"Approuve les notes de frais; une personne confirme les montants élevés.",
			"Approva le note spese; una persona conferma gli importi elevati."),
		Icon: "mage:wallet",
	}
}

// Steps is the workflow: review the claim, then take the person's answer
// or, if none came in time, the timeout.
func (a *ExpenseAgent) Steps() []*step.Step {
	return []*step.Step{
		step.New(a.Review, step.Emits((*ExpenseDecided)(nil), (*event.HumanInTheLoopConfirmationRequestEvent)(nil))),
		step.New(a.Decide),
		step.New(a.Escalate),
	}
}

// Review approves a claim within the limit, and asks for confirmation of
// one above it: the run then pauses, holding nothing but its stored state,
// until the answer arrives.
func (a *ExpenseAgent) Review(_ step.Context, c *ExpenseClaim) (event.Event, error) {
	if c.Amount <= 0 {
		return nil, step.Userf("the amount must be positive, got %.2f", c.Amount)
	}
	if c.Amount <= a.Limit {
		return &ExpenseDecided{Decision: "approved",
			Answer: fmt.Sprintf("approved automatically: CHF %.2f for %q is within the limit of CHF %.2f", c.Amount, c.Description, a.Limit)}, nil
	}
	// The runtime completes the question's topic (run ids, event id) and
	// keeps its deadline durably: a restart in between loses nothing.
	return hitl.Confirm(fmt.Sprintf("Approve CHF %.2f for %q? It is above the limit of CHF %.2f.", c.Amount, c.Description, a.Limit),
		hitl.Timeout(a.Wait))
}

// Decide ends the run with the person's yes or no.
func (a *ExpenseAgent) Decide(_ step.Context, r *event.HumanInTheLoopConfirmationResponseEvent) (*ExpenseDecided, error) {
	if r.Response {
		return &ExpenseDecided{Decision: "approved", Answer: "approved by the approver: " + r.RequestEvent.Question}, nil
	}
	return &ExpenseDecided{Decision: "rejected", Answer: "rejected by the approver: " + r.RequestEvent.Question}, nil
}

// Escalate runs when nobody answered in time: the claim goes to finance
// instead of waiting forever. An answer that comes later is refused.
func (a *ExpenseAgent) Escalate(_ step.Context, t *event.HumanInTheLoopTimeoutEvent) (*ExpenseDecided, error) {
	return &ExpenseDecided{Decision: "escalated",
		Answer: fmt.Sprintf("escalated to finance: the approver did not answer within %gs", t.TimeoutSeconds)}, nil
}

func main() {
	serve := flag.String("serve", "", "serve the gateway on this address (e.g. :8080, which binds to 127.0.0.1) until SIGINT/SIGTERM")
	limit := flag.Float64("limit", 500, "the largest amount approved without asking, in CHF")
	wait := flag.Duration("wait", 0, "how long the approver has to answer (default 2s, with -serve 10m)")
	verbose := flag.Bool("v", false, "log the runner's and gateway's info messages")
	flag.Parse()
	if *wait <= 0 {
		*wait = 2 * time.Second
		if *serve != "" {
			*wait = 10 * time.Minute
		}
	}
	if err := run(*serve, *limit, *wait, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "approval:", err)
		os.Exit(1)
	}
}

func run(serve string, limit float64, wait time.Duration, verbose bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env, err := demo.Start(ctx, &ExpenseAgent{Limit: limit, Wait: wait}, demo.Options{Verbose: verbose, Tracing: demotrace.Tracing})
	if err != nil {
		return err
	}
	defer env.Close()
	if serve != "" {
		env.Try = []string{
			`curl -s %[1]s/agents/ExpenseAgent/demo/ExpenseClaim -d '{"description":"Team dinner","amount":1200}' > question.json`,
			`curl -s %[1]s/agents/ExpenseAgent/demo/HumanInTheLoopConfirmationResponseEvent -d "{\"response\":true,\"request_event\":$(cat question.json)}"`,
		}
		return env.Serve(ctx, serve)
	}

	fmt.Printf("== 1. a claim within the limit of CHF %.2f: approved without asking\n", limit)
	res, err := env.Ask(ctx, "demo", "ExpenseClaim", map[string]any{"description": "Taxi to the airport", "amount": 80})
	if err != nil {
		return err
	}
	if err := expect(res, "approved"); err != nil {
		return err
	}

	for _, answer := range []bool{true, false} {
		fmt.Printf("\n== 2. a claim above the limit: the agent asks; the approver answers %v\n", answer)
		asked, err := env.Ask(ctx, "demo", "ExpenseClaim", map[string]any{"description": "Team dinner", "amount": 1200})
		if err != nil {
			return err
		}
		if asked.Name != "HumanInTheLoopConfirmationRequestEvent" {
			return fmt.Errorf("the run ended with %s, not the confirmation question", asked.Name)
		}
		fmt.Printf("question: %s\n\n", asked.Answer)
		res, err := env.Answer(ctx, "demo", "HumanInTheLoopConfirmationResponseEvent", asked, answer)
		if err != nil {
			return err
		}
		want := "approved"
		if !answer {
			want = "rejected"
		}
		if err := expect(res, want); err != nil {
			return err
		}
	}
	fmt.Printf("\n== 3. a claim above the limit that nobody answers: after %s the claim is escalated\n", wait)
	asked, err := env.Ask(ctx, "demo", "ExpenseClaim", map[string]any{"description": "Conference trip", "amount": 2400})
	if err != nil {
		return err
	}
	fmt.Printf("question: %s\n(nobody answers)\n\n", asked.Answer)
	res, err = env.Follow(ctx, asked)
	if err != nil {
		return err
	}
	return expect(res, "escalated")
}

// expect prints the decision res ended with and checks it is want.
func expect(res *demo.Result, want string) error {
	fmt.Printf("decision (%s): %s\n", res.Name, res.Answer)
	if res.Name != "ExpenseDecided" {
		return fmt.Errorf("the run ended with %s, not ExpenseDecided", res.Name)
	}
	var d struct {
		Decision string `json:"decision"`
	}
	if err := event.UnmarshalValue(res.Terminal, &d); err != nil || d.Decision != want {
		return errors.Join(fmt.Errorf("decision %q, want %q", d.Decision, want), err)
	}
	return nil
}
