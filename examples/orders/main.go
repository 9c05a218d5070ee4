// Command orders runs OrderAgent, a saga: it reserves stock, charges the
// customer and ships. When a step fails after others completed, the runtime
// undoes the completed ones with the compensations they declare, newest
// first, and the run's status says so.
//
// Usage:
//
//	go run ./examples/orders                # an order that ships, then one whose charge fails; exit 0
//	go run ./examples/orders -fail-charge   # every charge fails
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
	"sync"
	"syscall"
	"time"

	"github.com/saap-go/agent/status"

	"github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/examples/internal/demo"
	"github.com/saap-go/agent/examples/internal/demo/demotrace"
	"github.com/saap-go/agent/step"
	_ "github.com/saap-go/agent/store/redis" // REDIS_URL keeps run state in Redis
	"github.com/saap-go/agent/topic"
)

// OrderPlaced starts a run: a customer orders Quantity of Item. FailCharge
// makes the payment provider decline it (for the demonstration).
type OrderPlaced struct {
	event.StartEvent
	Item       string `json:"item" event:"required"`
	Quantity   int    `json:"quantity"`
	FailCharge bool   `json:"fail_charge,omitempty"`
}

// StockReserved says the warehouse holds the items under Reservation.
type StockReserved struct {
	event.ControlEvent
	Reservation string `json:"reservation"`
}

// PaymentCharged says the customer paid Amount (CHF) under Payment.
type PaymentCharged struct {
	event.ControlEvent
	Payment string  `json:"payment"`
	Amount  float64 `json:"amount"`
}

// OrderShipped ends a run that went through.
type OrderShipped struct {
	event.StopEvent
	Answer string `json:"answer"`
}

func init() {
	event.MustRegister[OrderPlaced]()
	event.MustRegister[StockReserved]()
	event.MustRegister[PaymentCharged]()
	event.MustRegister[OrderShipped]()
}

// OrderAgent reserves, charges and ships. Its warehouse and payment
// provider are simulated in memory and print what they do.
type OrderAgent struct {
	// FailCharge makes every charge fail.
	FailCharge bool

	mu       sync.Mutex
	reserved map[string]string // idempotency key → reservation: a repeated call reserves nothing twice
}

// Class is the agent class.
func (a *OrderAgent) Class() string { return "OrderAgent" }

// Steps is the saga. Reserve and Charge declare what undoes them; Ship is
// the last step, so nothing after it can fail.
func (a *OrderAgent) Steps() []*step.Step {
	return []*step.Step{
		step.New(a.Reserve, step.Compensate(a.Release)),
		step.New(a.Charge, step.Compensate(a.Refund)),
		step.New(a.Ship),
	}
}

// Reserve holds the items. The idempotency key makes a repeated call (after
// a crash) return the same reservation.
func (a *OrderAgent) Reserve(ctx step.Context, o *OrderPlaced) (*StockReserved, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.reserved == nil {
		a.reserved = map[string]string{}
	}
	r, ok := a.reserved[ctx.IdempotencyKey()]
	if !ok {
		r = fmt.Sprintf("R-%d", len(a.reserved)+1)
		a.reserved[ctx.IdempotencyKey()] = r
	}
	fmt.Printf("warehouse: reserved %d x %s as %s\n", o.Quantity, o.Item, r)
	return &StockReserved{Reservation: r}, nil
}

// Release undoes Reserve: it gets Reserve's own input and output.
func (a *OrderAgent) Release(ctx step.Context, o *OrderPlaced, r *StockReserved) error {
	fmt.Printf("warehouse: released %s (%d x %s)\n", r.Reservation, o.Quantity, o.Item)
	return nil
}

// Charge takes the payment, or fails as the payment provider declines it.
func (a *OrderAgent) Charge(ctx step.Context, o *OrderPlaced, r *StockReserved) (*PaymentCharged, error) {
	if a.FailCharge || o.FailCharge {
		fmt.Printf("payments: declined the charge for %s\n", r.Reservation)
		return nil, step.Userf("the payment was declined")
	}
	amount := 12.5 * float64(o.Quantity)
	fmt.Printf("payments: charged CHF %.2f for %s\n", amount, r.Reservation)
	return &PaymentCharged{Payment: "P-" + r.Reservation, Amount: amount}, nil
}

// Refund undoes Charge.
func (a *OrderAgent) Refund(ctx step.Context, o *OrderPlaced, r *StockReserved, p *PaymentCharged) error {
	fmt.Printf("payments: refunded CHF %.2f (%s)\n", p.Amount, p.Payment)
	return nil
}

// Ship ends the run.
func (a *OrderAgent) Ship(ctx step.Context, o *OrderPlaced, p *PaymentCharged) (*OrderShipped, error) {
	return &OrderShipped{Answer: fmt.Sprintf("shipped %d x %s, paid with %s", o.Quantity, o.Item, p.Payment)}, nil
}

func main() {
	failCharge := flag.Bool("fail-charge", false, "make every charge fail")
	verbose := flag.Bool("v", false, "log the runner's and gateway's info messages")
	flag.Parse()
	if err := run(*failCharge, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "orders:", err)
		os.Exit(1)
	}
}

func run(failCharge, verbose bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	a := &OrderAgent{FailCharge: failCharge}
	env, err := demo.Start(ctx, a, demo.Options{Verbose: verbose, Tracing: demotrace.Tracing})
	if err != nil {
		return err
	}
	defer env.Close()

	// The compensation events are control events published after the
	// run's ExceptionEvent; watch them for the whole class.
	ended := make(chan string, 4)
	pattern := "agent." + env.Class + ".*.*.*.*.control_event.*.*"
	sub, err := env.Bus.Subscribe(ctx, pattern, "", func(m *bus.Msg) {
		t, err := topic.ParseAgent(m.Subject)
		if err != nil {
			return
		}
		ev, err := event.Unmarshal(m.Data)
		if err != nil {
			return
		}
		switch x := ev.(type) {
		case *event.StepCompensatedEvent:
			fmt.Printf("event %s step=%s attempts=%d\n", t.Name, x.Step, x.Attempts)
		case *event.StepCompensationFailedEvent:
			fmt.Printf("event %s step=%s message=%q\n", t.Name, x.Step, x.Message)
		case *event.RunCompensatedEvent:
			fmt.Printf("event %s compensated=%v failed=%v\n", t.Name, x.CompensatedSteps, x.FailedSteps)
			ended <- t.Run
		}
	})
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()

	if !failCharge {
		fmt.Println("== 1. an order that goes through")
		res, err := env.Ask(ctx, "demo", "OrderPlaced", map[string]any{"item": "book", "quantity": 2})
		if err != nil {
			return err
		}
		fmt.Printf("result (%s): %s\n", res.Name, res.Answer)
		if res.Name != "OrderShipped" {
			return fmt.Errorf("the run ended with %s, not OrderShipped", res.Name)
		}
		if err := showRuns(ctx, env, res.Thread); err != nil {
			return err
		}
	}

	fmt.Println("\n== 2. an order whose charge fails: the reservation is released")
	res, err := env.Ask(ctx, "demo", "OrderPlaced", map[string]any{"item": "lamp", "quantity": 1, "fail_charge": true})
	if err != nil {
		return err
	}
	fmt.Printf("result (%s): %s\n", res.Name, res.Answer)
	if res.Name != "ExceptionEvent" {
		return fmt.Errorf("the run ended with %s, not ExceptionEvent", res.Name)
	}
	var runID string
	select {
	case runID = <-ended:
	case <-ctx.Done():
		return errors.New("the run was not compensated in time")
	}
	// The status record is written right after the last compensation
	// event; ask until it says so.
	for {
		st, err := status.Request(ctx, env.Bus, env.Class, runID)
		if err != nil {
			return err
		}
		if st.State.Ended() {
			fmt.Printf("status of run %s: %s (error %q, compensated %v)\n", runID, st.State, st.Error, st.Compensated)
			if st.State != status.Compensated {
				return fmt.Errorf("status %s, want compensated", st.State)
			}
			break
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return showRuns(ctx, env, res.Thread)
}

// showRuns prints the runs of a thread with their status, as any replica
// of the class answers over the bus.
func showRuns(ctx context.Context, env *demo.Env, thread string) error {
	page, err := status.RequestList(ctx, env.Bus, env.Class, status.Query{Thread: thread})
	if err != nil {
		return err
	}
	for _, r := range page.Runs {
		fmt.Printf("run %s in thread %s: %s\n", r.Run, r.Thread, r.State)
	}
	return nil
}

var _ agent.Agent = (*OrderAgent)(nil)
