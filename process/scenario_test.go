package process_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/runloop"
	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/process"
	"github.com/saap-go/agent/step"
)

func approve(t *testing.T, h *agenttest.ProcessHarness, w *agenttest.Walkthrough, yes bool) {
	t.Helper()
	req, ok := w.Last("ApproveRequest").(*ApproveRequest)
	if !ok {
		t.Fatalf("no ApproveRequest: %s", w)
	}
	a := &Approval{Approved: yes}
	a.InResponseTo = &req.EventID
	if err := h.Submit(w, a, manager); err != nil {
		t.Fatal(err)
	}
}

func created(t *testing.T, h *agenttest.ProcessHarness, w *agenttest.Walkthrough) {
	t.Helper()
	req, ok := w.Last("CreateAccount").(*CreateAccount)
	if !ok {
		t.Fatalf("no CreateAccount: %s", w)
	}
	c := &AccountCreated{Account: "acc-7"}
	c.InResponseTo = &req.EventID
	if err := h.Submit(w, c, program); err != nil {
		t.Fatal(err)
	}
}

func walkKey(w *agenttest.Walkthrough) store.RunKey {
	return store.RunKey{Class: "process.Onboarding", Run: w.ID}
}

// TestScenario42 is the process lifecycle: a stop cleans the walkthrough
// up, an exception marks it crashed, a failing step publishes a
// ProcessExceptionEvent, and outputs that differ from the declaration
// publish nothing. Where this SDK differs from the reference: a stop also
// keeps a "completed" end marker, so a redelivered stop is a harmless
// duplicate; an exception cleans up too; a mismatched output publishes no
// prefix; a crash in the middle of a step is recovered by the redelivery.
func TestScenario42(t *testing.T) {
	ctx := context.Background()

	t.Run("stop cleans up and marks completed", func(t *testing.T) {
		h := agenttest.NewProcess(t, onboardingProcess())
		h.Agent("DocChecker", checker)
		w := h.Start("acme", &Application{Applicant: "ada"})
		approve(t, h, w, true)
		created(t, h, w)
		stop, ok := w.Terminal()
		if !ok {
			t.Fatalf("not ended: %s", w)
		}
		o := stop.(*Onboarded)
		if o.ProcessClass == nil || *o.ProcessClass != "Onboarding" || o.ProcessWalkthroughID == nil || *o.ProcessWalkthroughID != w.ID {
			t.Fatalf("stop event does not name its walkthrough: %+v", o.ProcessStopEvent)
		}
		end, ok, err := h.Store().Marker(ctx, walkKey(w), store.MarkerEnd)
		if err != nil || !ok || end != store.Completed {
			t.Fatalf("end marker %q %v %v", end, ok, err)
		}
		keys, err := h.Store().Keys(ctx, walkKey(w).RunContext())
		if err != nil || len(keys) != 0 {
			t.Fatalf("walkthrough context left: %v %v", keys, err)
		}
		if n, _ := h.Store().Count(ctx, walkKey(w), "Begin"); n != 0 {
			t.Fatalf("claims of Begin left: %d", n)
		}
		// A redelivered stop is a duplicate, not an error.
		n := len(w.Events())
		h.Send(w, stop)
		// Work after the end is ignored.
		late := &Approval{Approved: false}
		h.Send(w, late)
		if got := len(w.Events()); got != n+2 {
			t.Fatalf("something was published after the end: %s", w)
		}
		if d := h.DeadLetters(); len(d) != 0 {
			t.Fatalf("dead letters: %v", d[0].Subject)
		}
	})

	t.Run("rejection ends with another stop", func(t *testing.T) {
		h := agenttest.NewProcess(t, onboardingProcess())
		h.Agent("DocChecker", checker)
		w := h.Start("acme", &Application{Applicant: "forger"})
		agenttest.Equal(t, w.Names(), []string{"Application", "CheckDocument", "DocumentChecked", "Rejected"})
	})

	t.Run("a failing step publishes ProcessExceptionEvent and marks crashed", func(t *testing.T) {
		h := agenttest.NewProcess(t, onboardingProcess())
		h.Agent("DocChecker", checker)
		w := h.Start("acme", &Application{Applicant: "ada", Fail: "begin"})
		agenttest.Equal(t, w.Names(), []string{"Application", "ProcessExceptionEvent"})
		exc := w.Last("ProcessExceptionEvent").(*event.ProcessExceptionEvent)
		agenttest.Equal(t, exc.Message, "cannot start ada")
		end, _, _ := h.Store().Marker(ctx, walkKey(w), store.MarkerEnd)
		agenttest.Equal(t, end, store.Crashed)

		w = h.Start("acme", &Application{Applicant: "bob", Fail: "approved"})
		approve(t, h, w, true)
		exc, _ = w.Last("ProcessExceptionEvent").(*event.ProcessExceptionEvent)
		if exc == nil || !strings.Contains(exc.Message, "the approval step broke") || exc.HTTPStatusCode != 500 {
			t.Fatalf("exception %+v: %s", exc, w)
		}
	})

	t.Run("a failing agent ends the walkthrough", func(t *testing.T) {
		h := agenttest.NewProcess(t, onboardingProcess())
		h.Agent("DocChecker", func(event.Event) (event.Event, error) { return nil, errors.New("scanner offline") })
		w := h.Start("acme", &Application{Applicant: "ada"})
		agenttest.Equal(t, w.Names(), []string{"Application", "CheckDocument", "ProcessExceptionEvent"})
		exc := w.Last("ProcessExceptionEvent").(*event.ProcessExceptionEvent)
		agenttest.Equal(t, exc.Message, "agent DocChecker failed: scanner offline")
	})

	t.Run("a mismatched output publishes nothing", func(t *testing.T) {
		bad := step.New(func(ctx step.Context, a *Application) ([]event.Event, error) {
			return []event.Event{
				&CheckDocument{AgentWorkRequestEvent: event.AgentWorkRequestEvent{StartEvent: &CheckStart{}}},
				&ApproveRequest{}, // not declared
			}, nil
		}, step.Name("Begin"), step.Emits((*CheckDocument)(nil), (*Onboarded)(nil)))
		p := &process.Process{Class: "Onboarding", Steps: []*step.Step{bad},
			Routes: []process.Route{process.Agent((*CheckDocument)(nil), "DocChecker", "default", nil)}}
		h := agenttest.NewProcess(t, p)
		w := h.Start("acme", &Application{Applicant: "ada"})
		agenttest.Equal(t, w.Names(), []string{"Application", "ProcessExceptionEvent"})
		exc := w.Last("ProcessExceptionEvent").(*event.ProcessExceptionEvent)
		if !strings.Contains(exc.Message, "ApproveRequest") || !strings.Contains(exc.Message, "nothing was published") {
			t.Fatalf("message %q", exc.Message)
		}
	})

	t.Run("a crash in the middle of a step is recovered", func(t *testing.T) {
		st := &crashingStore{Store: memstore.New(), step: "Approved"}
		var calls atomic.Int32
		var o onboarding
		approved := step.New(func(ctx step.Context, a *Approval, app *Application) (step.Either[*CreateAccount, *Rejected], error) {
			calls.Add(1)
			return o.Approved(ctx, a, app)
		}, step.Name("Approved"))
		p := onboardingProcess()
		p.Steps = []*step.Step{step.New(o.Begin), step.New(o.Checked), approved, step.New(o.Created)}
		h := agenttest.NewProcess(t, p, agenttest.WithStore(st))
		h.Agent("DocChecker", checker)
		w := h.Start("acme", &Application{Applicant: "ada"})
		approve(t, h, w, true) // the step runs, then its completion is lost
		if w.Last("CreateAccount") != nil {
			t.Fatalf("published although the step never completed: %s", w)
		}
		h.Advance(time.Minute) // the approval is redelivered; the step runs again
		agenttest.Equal(t, calls.Load(), int32(2))
		created(t, h, w)
		agenttest.Equal(t, w.Names(), []string{"Application", "CheckDocument", "DocumentChecked", "ApproveRequest",
			"Approval", "CreateAccount", "AccountCreated", "Onboarded"})
	})

	t.Run("redelivered work runs nothing twice", func(t *testing.T) {
		h := agenttest.NewProcess(t, onboardingProcess())
		h.Agent("DocChecker", checker)
		w := h.Start("acme", &Application{Applicant: "ada"})
		before := w.Names()
		// The same start event again (a publish retry): same ids, nothing new.
		start := w.Events()[0]
		h.Send(w, start)
		agenttest.Equal(t, w.Names(), append(before, "Application"))
	})

	t.Run("work for a walkthrough never started is dead-lettered", func(t *testing.T) {
		h := agenttest.NewProcess(t, onboardingProcess())
		h.Send(&agenttest.Walkthrough{ProcessID: "acme", ID: "nowalk"}, &Approval{Approved: true})
		d := h.DeadLetters()
		if len(d) != 1 || !strings.Contains(d[0].Subject, "nowalk") {
			t.Fatalf("dead letters %d", len(d))
		}
	})
}

// crashingStore loses the first completion of one step, as a runner killed
// between running the step and recording it would.
type crashingStore struct {
	store.Store
	step string
	once sync.Once
}

func (s *crashingStore) Complete(ctx context.Context, run store.RunKey, st, key string, o store.Outcome) error {
	crash := false
	if st == s.step {
		s.once.Do(func() { crash = true })
	}
	if crash {
		return errors.New("crashingStore: the runner died here")
	}
	return s.Store.Complete(ctx, run, st, key, o)
}

// failingStore fails every claim: the store is down.
type failingStore struct{ store.Store }

func (failingStore) Claim(context.Context, store.RunKey, store.ClaimRequest) (store.ClaimResult, error) {
	return store.ClaimResult{}, errors.New("failingStore: down")
}

// TestGivingUp: an event that cannot be handled within the outage budget
// (10 minutes of retry delays, as agent runners) is dead-lettered and ends
// its walkthrough visibly, and not before.
func TestGivingUp(t *testing.T) {
	h := agenttest.NewProcess(t, onboardingProcess(), agenttest.WithStore(failingStore{memstore.New()}))
	w := h.Start("acme", &Application{Applicant: "ada"})
	retries := uint64(0)
	for ; retries < 100 && len(h.DeadLetters()) == 0; retries++ {
		h.Advance(time.Minute) // past every retry delay: one more delivery
	}
	if want := runloop.LastDelivery(process.DefaultOutageBudget, -1, bus.Backoff) - 1; retries != want {
		t.Errorf("given up after %d retries, want %d: those whose delays fit the outage budget", retries, want)
	}
	agenttest.Equal(t, w.Names(), []string{"Application", "ProcessExceptionEvent"})
	if exc := w.Last("ProcessExceptionEvent").(*event.ProcessExceptionEvent); !strings.Contains(exc.Message, "failingStore: down") {
		t.Fatalf("message %q", exc.Message)
	}
	if d := h.DeadLetters(); len(d) != 1 || !strings.Contains(d[0].Subject, ".Application.") {
		t.Fatalf("dead letters: %d", len(d))
	}
}
