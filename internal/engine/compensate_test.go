package engine_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saap-go/agent/status"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

type (
	Order struct {
		event.StartEvent
		Item string `json:"item"`
		Fail bool   `json:"fail"`
	}
	Reserved struct {
		event.ControlEvent
		Item string `json:"item"`
	}
	Charged struct {
		event.ControlEvent
		Amount int `json:"amount"`
	}
	Shipped struct{ event.StopEvent }
)

func init() {
	event.MustRegister[Order]()
	event.MustRegister[Reserved]()
	event.MustRegister[Charged]()
	event.MustRegister[Shipped]()
}

// saga is a three-step order agent whose first two steps declare
// compensations; ship fails when the order says so. undo records what
// the compensations saw.
type saga struct {
	mu       sync.Mutex
	undone   []string          // compensations in the order they ran
	keys     map[string]string // step → idempotency key seen by its compensation
	stepKeys map[string]string // step → idempotency key seen by the step
	failUndo map[string]int    // step → failures its compensation has left
}

func newSaga() *saga {
	return &saga{keys: map[string]string{}, stepKeys: map[string]string{}, failUndo: map[string]int{}}
}

func (s *saga) note(ctx step.Context, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stepKeys[name] = ctx.IdempotencyKey()
}

func (s *saga) undo(ctx step.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failUndo[name] > 0 {
		s.failUndo[name]--
		return step.Userf("the warehouse is offline")
	}
	s.undone = append(s.undone, name)
	s.keys[name] = ctx.IdempotencyKey()
	return nil
}

func (s *saga) workflow(t *testing.T, class string) *step.Workflow {
	reserve := step.New(func(ctx step.Context, o *Order) (*Reserved, error) {
		s.note(ctx, "reserve")
		return &Reserved{Item: o.Item}, nil
	}, step.Name("reserve"), step.Compensate(func(ctx step.Context, o *Order, r *Reserved) error {
		if o == nil || r == nil || r.Item != o.Item {
			return errors.New("compensation of reserve did not get the step's input and output")
		}
		return s.undo(ctx, "reserve")
	}))
	charge := step.New(func(ctx step.Context, r *Reserved) (*Charged, error) {
		s.note(ctx, "charge")
		return &Charged{Amount: 42}, nil
	}, step.Name("charge"), step.Compensate(func(ctx step.Context, r *Reserved, c *Charged) error {
		if c == nil || c.Amount != 42 {
			return errors.New("compensation of charge did not get the step's output")
		}
		return s.undo(ctx, "charge")
	}))
	ship := step.New(func(ctx step.Context, o *Order, c *Charged) (*Shipped, error) {
		if o.Fail {
			return nil, step.Userf("the courier refused the parcel")
		}
		return &Shipped{}, nil
	}, step.Name("ship"))
	w, err := step.NewWorkflow(class, reserve, charge, ship)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// When a run fails, the compensations of its completed steps run newest
// first, each once with its own idempotency key, with events for each and
// for the run, and the run's status ends compensated.
func TestCompensationOrder(t *testing.T) {
	s := newSaga()
	h := agenttest.New(t, s.workflow(t, "Saga"))
	res := h.Start(&Order{Item: "book", Fail: true})
	agenttest.Equal(t, res.Ended(), "crashed")
	agenttest.Equal(t, s.undone, []string{"charge", "reserve"})
	var comp []string
	for _, ev := range res.Get("StepCompensatedEvent") {
		c := ev.(*event.StepCompensatedEvent)
		comp = append(comp, c.Step)
		if c.IdempotencyKey != s.keys[c.Step] || c.IdempotencyKey == s.stepKeys[c.Step] || c.Attempts != 1 {
			t.Errorf("%s compensated with key %q attempts %d; its function saw %q, the step %q", c.Step, c.IdempotencyKey, c.Attempts, s.keys[c.Step], s.stepKeys[c.Step])
		}
	}
	agenttest.Equal(t, comp, []string{"charge", "reserve"})
	names := res.Names()
	if names[len(names)-1] != "RunCompensatedEvent" {
		t.Fatalf("events %v, want RunCompensatedEvent last", names)
	}
	final := res.Get("RunCompensatedEvent")[0].(*event.RunCompensatedEvent)
	agenttest.Equal(t, final.CompensatedSteps, []string{"charge", "reserve"})
	agenttest.Equal(t, len(final.FailedSteps), 0)
	st, err := h.Status(res.RunID())
	if err != nil {
		t.Fatal(err)
	}
	agenttest.Equal(t, st.State, status.Compensated)
	agenttest.Equal(t, st.Error, "the courier refused the parcel")
	agenttest.Equal(t, st.Compensated, []string{"charge", "reserve"})

	// A redelivered ExceptionEvent compensates nothing twice.
	h.Redeliver(res, res.IDs("ExceptionEvent")[0])
	agenttest.Equal(t, s.undone, []string{"charge", "reserve"})
	agenttest.Equal(t, res.Count("StepCompensatedEvent"), 2)

	// A run that succeeds compensates nothing.
	ok := h.Start(&Order{Item: "pen"})
	agenttest.Equal(t, ok.Ended(), "completed")
	agenttest.Equal(t, ok.Count("StepCompensatedEvent")+ok.Count("RunCompensatedEvent"), 0)
	agenttest.Equal(t, len(s.undone), 2)
}

// A compensation that fails is retried with the engine's backoff and goes
// through once it succeeds.
func TestCompensationRetried(t *testing.T) {
	s := newSaga()
	s.failUndo["charge"] = 2
	h := agenttest.New(t, s.workflow(t, "SagaRetry"))
	res := h.Start(&Order{Item: "book", Fail: true})
	agenttest.Equal(t, len(s.undone), 0)
	agenttest.Equal(t, res.Count("RunCompensatedEvent"), 0)
	st, _ := h.Status(res.RunID())
	agenttest.Equal(t, st.State, status.Compensating)
	advance(h, time.Minute)
	agenttest.Equal(t, s.undone, []string{"charge", "reserve"})
	c := res.Get("StepCompensatedEvent")[0].(*event.StepCompensatedEvent)
	agenttest.Equal(t, [2]any{c.Step, c.Attempts}, [2]any{"charge", 3})
	agenttest.Equal(t, res.Count("RunCompensatedEvent"), 1)
}

// A compensation that keeps failing is given up once the outage budget is
// nearly spent: it is reported on the run and dead-lettered, the others
// still run, and the run's status says which one failed.
func TestCompensationGivenUp(t *testing.T) {
	s := newSaga()
	s.failUndo["charge"] = 1000
	h := agenttest.New(t, s.workflow(t, "SagaGiveUp"),
		agenttest.WithOutageBudget(10*time.Second))
	res := h.Start(&Order{Item: "book", Fail: true})
	advance(h, time.Minute)
	agenttest.Equal(t, s.undone, []string{"reserve"})
	failed := res.Get("StepCompensationFailedEvent")
	if len(failed) != 1 {
		t.Fatalf("events %v, want one StepCompensationFailedEvent", res.Names())
	}
	f := failed[0].(*event.StepCompensationFailedEvent)
	agenttest.Equal(t, f.Step, "charge")
	agenttest.Equal(t, f.Message, "the warehouse is offline")
	if f.Attempts < 2 {
		t.Errorf("given up after %d attempts, want retries first", f.Attempts)
	}
	final := res.Get("RunCompensatedEvent")[0].(*event.RunCompensatedEvent)
	agenttest.Equal(t, final.FailedSteps, []string{"charge"})
	agenttest.Equal(t, final.CompensatedSteps, []string{"reserve"})
	st, _ := h.Status(res.RunID())
	agenttest.Equal(t, st.State, status.Failed)
	agenttest.Equal(t, st.CompensationFailed, []string{"charge"})
	var letters []*bus.StoredMsg
	for _, m := range deadLetters(t, h) {
		if strings.Contains(m.Subject, "StepCompensationFailedEvent") {
			letters = append(letters, m)
		}
	}
	if len(letters) != 1 || !strings.Contains(letters[0].Header.Get(bus.HeaderDeadLetterReason), "warehouse is offline") ||
		!strings.Contains(string(letters[0].Data), `"step":"charge"`) {
		t.Fatalf("dead letters %+v, want the compensation record of charge with the reason", letters)
	}
	agenttest.Equal(t, res.Ended(), "crashed")
}

// advance moves the harness's clock by total a second at a time, so that
// each redelivery's own retry delay comes due within it.
func advance(h *agenttest.Harness, total time.Duration) {
	for range int(total / time.Second) {
		h.Advance(time.Second)
	}
}
