package step_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store"
	_ "github.com/saap-go/agent/store/redis" // REDIS_URL: the same test on Redis
)

// Hurry is a step's way on while its timer and question wait.
type Hurry struct {
	event.ControlEvent
	Fail bool `json:"fail"`
}

func init() { event.MustRegister[Hurry]() }

// ending is a run that sets a timer of an hour and asks a question with a
// timeout of an hour, then ends (completed or failed) on a Hurry, or is
// cancelled, while both wait.
func ending(t *testing.T, class string) *step.Workflow {
	t.Helper()
	wait := step.New(func(ctx step.Context, _ *event.StartEvent) ([]event.Event, error) {
		ask := &event.HumanInTheLoopRequestEvent{Question: "still there?", Topic: &event.Topic{}, HITLType: "input"}
		if err := event.SetExtra(ask, event.TimeoutField, []byte("3600")); err != nil {
			return nil, err
		}
		return []event.Event{step.Sleep(time.Hour), ask}, nil
	}, step.Name("wait"), step.Emits((*event.TimerRequestEvent)(nil), (*event.HumanInTheLoopRequestEvent)(nil)))
	wake := step.New(func(ctx step.Context, f *event.TimerFiredEvent) (*Reminded, error) {
		return &Reminded{Timer: f.Name}, nil
	}, step.Name("wake"))
	timeout := step.New(func(ctx step.Context, _ step.Either[*event.HumanInTheLoopResponseEvent, *event.HumanInTheLoopTimeoutEvent]) (*event.StopEvent, error) {
		return &event.StopEvent{}, nil
	}, step.Name("answered"))
	hurry := step.New(func(ctx step.Context, h *Hurry) (*event.StopEvent, error) {
		if h.Fail {
			return nil, errors.New("hurried into a failure")
		}
		return &event.StopEvent{}, nil
	}, step.Name("hurry"))
	w, err := step.NewPartialWorkflow(class, wait, wake, timeout, hurry)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// storeOf is the harness's store: Redis where REDIS_URL names one, else the
// harness's own.
func storeOf(t *testing.T) []agenttest.Option {
	u := os.Getenv("REDIS_URL")
	if u == "" {
		return nil
	}
	s, err := store.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	return []agenttest.Option{agenttest.WithStore(s)}
}

// A run's timers and question timeouts end with the run, however it ends
// (completed, failed, cancelled) and also when the engine that ends it is
// not the one that set them (a restart): nothing fires after the run's
// end, and no deadline is left in the store or the scheduler.
func TestDeadlinesEndWithTheRun(t *testing.T) {
	for _, c := range []struct {
		name    string
		restart bool
		end     func(h *agenttest.Harness, res *agenttest.Result)
		want    string
	}{
		{"completed", false, func(h *agenttest.Harness, res *agenttest.Result) { h.Send(res, &Hurry{}) }, "StopEvent"},
		{"failed", false, func(h *agenttest.Harness, res *agenttest.Result) { h.Send(res, &Hurry{Fail: true}) }, "ExceptionEvent"},
		{"cancelled", false, cancel, "RunCancelledEvent"},
		{"cancelled-after-restart", true, cancel, "RunCancelledEvent"},
		{"completed-after-restart", true, func(h *agenttest.Harness, res *agenttest.Result) { h.Send(res, &Hurry{}) }, "StopEvent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			class := fmt.Sprintf("Ending%d", time.Now().UnixNano()%1e9)
			h := agenttest.New(t, ending(t, class), storeOf(t)...)
			res := h.Start(&event.StartEvent{})
			if keys, err := engine.PendingDeadlines(ctx, h.Store(), class); err != nil || len(keys) != 2 {
				t.Fatalf("pending deadlines %v (%v), want the timer's and the question's", keys, err)
			}
			if c.restart {
				// A new engine on the same store and bus: it knows the
				// run only from the stream and the store.
				h.Stub("wake", func(ctx step.Context, f *event.TimerFiredEvent) (*Reminded, error) { return &Reminded{}, nil })
				h.Advance(0)
			}
			c.end(h, res)
			if term := res.Terminal(); term == nil || event.Name(term) != c.want {
				t.Fatalf("run ended with %v, want %s", res.Names(), c.want)
			}
			if keys, err := engine.PendingDeadlines(ctx, h.Store(), class); err != nil || len(keys) != 0 {
				t.Errorf("deadlines left in the store after the run's end: %v (%v)", keys, err)
			}
			if n := h.PendingTimeouts(); n != 0 {
				t.Errorf("%d deadlines left in the scheduler", n)
			}
			h.Advance(2 * time.Hour)
			for _, n := range []string{"TimerFiredEvent", "HumanInTheLoopTimeoutEvent", "Reminded"} {
				if k := res.Count(n); k != 0 {
					t.Errorf("%d %s after the run's end", k, n)
				}
			}
		})
	}
}

func cancel(h *agenttest.Harness, res *agenttest.Result) {
	h.Send(res, &event.RunCancelRequestedEvent{Reason: "no longer needed", RequestedBy: "operator"})
}

// A deadline this engine holds in memory while another replica ends the
// run (here: the store entry survives, as when that replica's removal
// failed) is dropped when due, not fired into the ended run.
func TestDeadlineOfEndedRunNotFired(t *testing.T) {
	ctx := context.Background()
	class := fmt.Sprintf("Ended%d", time.Now().UnixNano()%1e9)
	h := agenttest.New(t, ending(t, class), storeOf(t)...)
	res := h.Start(&event.StartEvent{})
	keys, err := engine.PendingDeadlines(ctx, h.Store(), class)
	if err != nil || len(keys) != 2 {
		t.Fatalf("pending deadlines %v (%v)", keys, err)
	}
	// The run ends elsewhere: its terminal marker is set, its deadlines
	// stay where this engine finds them.
	if _, _, err := h.Store().SetMarker(ctx, res.RunKey(), store.MarkerTerminal, store.Completed); err != nil {
		t.Fatal(err)
	}
	h.Advance(2 * time.Hour)
	for _, n := range []string{"TimerFiredEvent", "HumanInTheLoopTimeoutEvent"} {
		if k := res.Count(n); k != 0 {
			t.Errorf("%d %s published into the ended run", k, n)
		}
	}
	if keys, err := engine.PendingDeadlines(ctx, h.Store(), class); err != nil || len(keys) != 0 {
		t.Errorf("deadlines left: %v (%v)", keys, err)
	}
}
