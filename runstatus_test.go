package agent_test

import (
	"errors"
	"testing"

	"github.com/saap-go/agent/status"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// refusingAgent reserves, then fails; its reservation is compensated.
type refusingAgent struct {
	class    string
	released chan string
}

func (a *refusingAgent) Class() string { return a.class }

func (a *refusingAgent) Steps() []*step.Step {
	return []*step.Step{
		step.New(func(ctx step.Context, m *event.UserMessageEvent) (*SagaReserved, error) { return &SagaReserved{}, nil },
			step.Name("Reserve"), step.Compensate(func(ctx step.Context, m *event.UserMessageEvent, r *SagaReserved) error {
				a.released <- ctx.Run().RunID
				return nil
			})),
		step.New(func(ctx step.Context, r *SagaReserved) (*event.StopEvent, error) {
			return nil, step.Userf("out of stock")
		}, step.Name("Fail")),
	}
}

// A runner tells a run's status from Go and over the bus (any replica
// answers), and lists its class's runs; before it runs it says so.
func TestRunnerRunStatus(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		c := client(t, tg.natsURL)
		class := uniqueClass("Status")
		dropStream(t, c, class)
		a := &refusingAgent{class: class, released: make(chan string, 1)}
		idle, err := agent.New(a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := idle.RunStatus(t.Context(), "r"); !errors.Is(err, agent.ErrNotRunning) {
			t.Fatalf("RunStatus before Run: %v, want ErrNotRunning", err)
		}
		r := startRunner(t, a, agent.WithNATS(tg.natsURL), storeFor(t, tg, c), agent.Standalone())
		run := newRun(class, "dev")
		publish(t, c, run, userMessage("order"), nil)
		if got := <-a.released; got != run.Run {
			t.Fatalf("released %s, want run %s", got, run.Run)
		}
		waitAcked(t, c.JetStream(), class) // the ExceptionEvent's handling, compensation included, is over
		st, err := status.Request(t.Context(), c, class, run.Run)
		if err != nil || st.State != status.Compensated {
			t.Fatalf("status over the bus %+v, %v; want compensated", st, err)
		}
		agenttestEqual(t, st.Error, "out of stock")
		local, err := r.RunStatus(t.Context(), run.Run)
		if err != nil || local.State != status.Compensated || local.Thread != run.Thread {
			t.Fatalf("Runner.RunStatus = %+v, %v", local, err)
		}
		page, err := r.ListRuns(t.Context(), status.Query{Thread: run.Thread})
		if err != nil || len(page.Runs) != 1 || page.Runs[0].Run != run.Run {
			t.Fatalf("ListRuns = %+v, %v", page, err)
		}
	})
}

func agenttestEqual[T comparable](t *testing.T, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("got %v, want %v", got, want)
	}
}
