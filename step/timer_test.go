package step_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store"
	"github.com/saap-go/agent/topic"
)

// Reminded ends a run with the timer that woke it.
type Reminded struct {
	event.StopEvent
	Timer string `json:"timer"`
	Late  bool   `json:"late"`
}

func init() { event.MustRegister[Reminded]() }

// reminder sleeps with the request req returns, then ends the run.
func reminder(t *testing.T, req func() *event.TimerRequestEvent) *step.Workflow {
	t.Helper()
	wait := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.TimerRequestEvent, error) {
		return req(), nil
	}, step.Name("wait"))
	wake := step.New(func(ctx step.Context, f *event.TimerFiredEvent) (*Reminded, error) {
		return &Reminded{Timer: f.Name}, nil
	}, step.Name("wake"))
	w, err := step.NewWorkflow("Reminder", wait, wake)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// A step's Sleep wakes the run once, when the time has come and not
// before, with a TimerFiredEvent naming the request; the run waits on it
// meanwhile, and nothing is left in the store afterwards.
func TestSleepFires(t *testing.T) {
	h := agenttest.New(t, reminder(t, func() *event.TimerRequestEvent {
		r := step.Sleep(time.Hour)
		r.Name = "nudge"
		return r
	}))
	res := h.Start(&event.StartEvent{})
	reqs := res.Get("TimerRequestEvent")
	if len(reqs) != 1 {
		t.Fatalf("%d timer requests published, want 1", len(reqs))
	}
	req := reqs[0].(*event.TimerRequestEvent)
	if req.DelaySeconds != 3600 || !req.FireAt.IsZero() {
		t.Errorf("request = %+v, want delay_seconds 3600 and no fire_at", req)
	}
	if n := h.PendingTimeouts(); n != 1 {
		t.Fatalf("%d pending deadlines, want 1", n)
	}
	st, err := h.Status(res.RunID())
	if err != nil {
		t.Fatal(err)
	}
	due := agenttest.Epoch.Add(time.Hour)
	if st.State != status.Waiting || st.Question == nil || st.Question.Event != "TimerRequestEvent" ||
		st.Question.Deadline == nil || !st.Question.Deadline.Equal(due) {
		t.Errorf("status while sleeping = %+v (question %+v), want waiting on the timer until %v", st, st.Question, due)
	}
	h.Advance(time.Hour - time.Millisecond)
	if n := res.Count("TimerFiredEvent"); n != 0 || res.Terminal() != nil {
		t.Fatalf("before the time: %d firings, terminal %v", n, res.Terminal())
	}
	h.Advance(time.Millisecond)
	fired := res.Get("TimerFiredEvent")
	if len(fired) != 1 {
		t.Fatalf("%d firings, want 1", len(fired))
	}
	f := fired[0].(*event.TimerFiredEvent)
	if f.RequestEventID != req.EventID || f.Name != "nudge" || !f.FireAt.Equal(due) || f.CreatedAt != due.UnixNano() {
		t.Errorf("fired = %+v, want request %s, name nudge, fire_at and created_at %v", f, req.EventID, due)
	}
	if r, ok := res.Terminal().(*Reminded); !ok || r.Timer != "nudge" {
		t.Fatalf("terminal = %#v, want Reminded by nudge", res.Terminal())
	}
	h.Advance(24 * time.Hour)
	if n := res.Count("TimerFiredEvent"); n != 1 {
		t.Errorf("%d firings after a day more, want 1", n)
	}
	keys, err := engine.PendingDeadlines(context.Background(), h.Store(), "Reminder")
	if err != nil || len(keys) != 0 || h.PendingTimeouts() != 0 {
		t.Errorf("deadlines left: store %v (%v), scheduler %d", keys, err, h.PendingTimeouts())
	}
}

// SleepUntil fires at the given time; a time already past fires at once.
func TestSleepUntil(t *testing.T) {
	for _, tc := range []struct {
		name  string
		at    time.Time
		after time.Duration // advance by this much before it fires
	}{
		{"future", agenttest.Epoch.Add(90 * time.Minute), 90 * time.Minute},
		{"past", agenttest.Epoch.Add(-time.Hour), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := agenttest.New(t, reminder(t, func() *event.TimerRequestEvent { return step.SleepUntil(tc.at) }))
			res := h.Start(&event.StartEvent{})
			if tc.after > 0 {
				h.Advance(tc.after - time.Second)
				if n := res.Count("TimerFiredEvent"); n != 0 {
					t.Fatalf("fired %d times a second early", n)
				}
				h.Advance(time.Second)
			} else {
				h.Advance(0)
			}
			fired := res.Get("TimerFiredEvent")
			if len(fired) != 1 || !fired[0].(*event.TimerFiredEvent).FireAt.Equal(tc.at) {
				t.Fatalf("firings %v, want one at %v", fired, tc.at)
			}
			if res.Terminal() == nil {
				t.Fatal("run did not end")
			}
		})
	}
}

// A restarted engine (a new one on the same store and bus) loads the
// timer and fires it once.
func TestSleepSurvivesRestart(t *testing.T) {
	h := agenttest.New(t, reminder(t, func() *event.TimerRequestEvent { return step.Sleep(10 * time.Minute) }))
	res := h.Start(&event.StartEvent{})
	h.Stub("wait", func(ctx step.Context, _ *event.StartEvent) (*event.TimerRequestEvent, error) {
		return nil, errors.New("must not run again")
	})
	h.Advance(0)
	if n := h.PendingTimeouts(); n != 1 {
		t.Fatalf("restarted engine holds %d deadlines, want 1", n)
	}
	h.Advance(10 * time.Minute)
	if n := res.Count("TimerFiredEvent"); n != 1 || res.Terminal() == nil {
		t.Fatalf("%d firings, terminal %v; want one firing and the run ended", n, res.Terminal())
	}
}

// A TimerFiredEvent from outside that names no timer of the run is
// refused; the real firing is still accepted once.
func TestForgedTimerFiredRefused(t *testing.T) {
	h := agenttest.New(t, reminder(t, func() *event.TimerRequestEvent { return step.Sleep(time.Minute) }))
	res := h.Start(&event.StartEvent{})
	h.Send(res, &event.TimerFiredEvent{RequestEventID: "not-a-timer-of-this-run"})
	if res.Terminal() != nil {
		t.Fatalf("a forged firing ended the run: %v", res.Terminal())
	}
	dead := res.DeadLetters()
	if len(dead) != 1 || !strings.Contains(dead[0].Reason, "not a question") {
		t.Errorf("dead letters %+v, want the forged firing refused", dead)
	}
	h.Advance(time.Minute)
	if n := res.Count("TimerFiredEvent"); n != 2 || res.Terminal() == nil {
		t.Errorf("%d TimerFiredEvents (the forged one included), terminal %v", n, res.Terminal())
	}
}

// A request with both fire_at and delay_seconds is the step's error: the
// run ends with an exception instead of waiting for ever.
func TestTimerRequestInvalid(t *testing.T) {
	h := agenttest.New(t, reminder(t, func() *event.TimerRequestEvent {
		r := step.Sleep(time.Minute)
		r.FireAt = agenttest.Epoch
		return r
	}))
	res := h.Start(&event.StartEvent{})
	if _, ok := res.Terminal().(*event.ExceptionEvent); !ok {
		t.Fatalf("terminal = %#v, want an ExceptionEvent", res.Terminal())
	}
	if n := h.PendingTimeouts(); n != 0 {
		t.Errorf("%d deadlines recorded for an invalid request", n)
	}
}

// Validation knows the timer's firing comes from outside once a step asks
// for a timer, and only then.
func TestTimerValidation(t *testing.T) {
	start := step.New(func(ctx step.Context, _ *event.StartEvent) (*Reminded, error) { return nil, nil }, step.Name("start"))
	wake := step.New(func(ctx step.Context, _ *event.TimerFiredEvent) (*Reminded, error) { return nil, nil }, step.Name("wake"))
	_, err := step.NewWorkflow("NoTimer", start, wake)
	var ve *step.ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "wake") {
		t.Errorf("a firing nobody asked for: %v, want wake reported", err)
	}
	w := reminder(t, func() *event.TimerRequestEvent { return step.Sleep(time.Second) })
	links := 0
	for _, l := range w.Graph().Links {
		if l.Source == "wait" && l.Target == "wake" {
			links++
		}
	}
	if links != 1 {
		t.Errorf("%d graph links from wait to wake, want 1", links)
	}
}

// Ten thousand runs asleep on timers cost no goroutine each: the
// scheduler holds one timer for the earliest deadline, and the runs' state
// is in the store. Each then wakes exactly once.
func TestSleepingRunsHoldNoGoroutine(t *testing.T) {
	runs := 10_000
	if testing.Short() {
		runs = 1_000
	}
	h := agenttest.New(t, reminder(t, func() *event.TimerRequestEvent { return step.Sleep(time.Hour) }))
	h.Start(&event.StartEvent{}) // warm up: lazily started workers are not counted
	runtime.GC()
	before := runtime.NumGoroutine()
	results := make([]*agenttest.Result, runs)
	for i := range results {
		results[i] = h.Start(&event.StartEvent{})
	}
	runtime.GC()
	added := runtime.NumGoroutine() - before
	if n := h.PendingTimeouts(); n != runs+1 {
		t.Fatalf("%d pending timers, want %d", n, runs+1)
	}
	// A handful at most, whatever the number of runs.
	if added > 10 {
		t.Errorf("%d sleeping runs added %d goroutines", runs, added)
	}
	h.Advance(time.Hour)
	for i, res := range results {
		if n := res.Count("TimerFiredEvent"); n != 1 || res.Terminal() == nil {
			t.Fatalf("run %d: %d firings, terminal %v", i, n, res.Terminal())
		}
	}
	t.Logf("%d sleeping runs: %d goroutines added", runs, added)
}

// A step sleeps for a day by returning a timer request; the run goes on
// with the TimerFiredEvent, bound by a later step, on whichever replica is
// running when the day is over.
func ExampleSleep() {
	schedule := step.New(func(ctx step.Context, _ *event.UserMessageEvent) (*event.TimerRequestEvent, error) {
		t := step.Sleep(24 * time.Hour)
		t.Name = "follow-up"
		return t, nil
	}, step.Name("schedule"))
	remind := step.New(func(ctx step.Context, f *event.TimerFiredEvent) (*event.StopEvent, error) {
		ctx.Logger().Info("time to follow up", "timer", f.Name, "due", f.FireAt)
		return &event.StopEvent{}, nil
	}, step.Name("remind"))
	w, err := step.NewWorkflow("Reminder", schedule, remind)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(w.Mermaid())
	// Output:
	// flowchart TD
	//     start(["Start"])
	//     s0["remind"]
	//     s1["schedule"]
	//     stop(["End"])
	//     start -->|"UserMessageEvent"| s1
	//     s0 -->|"StopEvent"| stop
	//     s1 -->|"Timer"| s0
}

// A deadline fired again long after its firing (a replica published it and
// died before removing it, the store kept it past the bus's duplicate
// window) stores no second TimerFiredEvent: its subject is taken.
func TestTimerFiresOnceAfterDuplicateWindow(t *testing.T) {
	h := agenttest.New(t, reminder(t, func() *event.TimerRequestEvent { return step.Sleep(time.Minute) }))
	res := h.Start(&event.StartEvent{})
	ctx := context.Background()
	keys, err := engine.PendingDeadlines(ctx, h.Store(), "Reminder")
	if err != nil || len(keys) != 1 {
		t.Fatalf("deadlines %v (%v), want 1", keys, err)
	}
	due, _, _ := strings.Cut(keys[0], ".")
	dueNs, _ := strconv.ParseInt(due, 10, 64)
	bucket := strconv.FormatInt(dueNs/int64(engine.DeadlineBucket), 10)
	index := store.Scope{Kind: store.ThreadScope, Class: "Reminder", ID: engine.DeadlineScope}
	scope := store.Scope{Kind: store.ThreadScope, Class: "Reminder", ID: engine.DeadlineScope + "." + bucket}
	raw, ok, err := h.Store().Get(ctx, scope, keys[0])
	if err != nil || !ok {
		t.Fatalf("deadline %s not readable: %v %v", keys[0], ok, err)
	}
	h.Advance(time.Minute)
	if n := res.Count("TimerFiredEvent"); n != 1 {
		t.Fatalf("%d firings, want 1", n)
	}
	h.Advance(time.Hour) // well past the duplicate window
	if err := h.Store().Set(ctx, scope, keys[0], raw); err != nil {
		t.Fatal(err)
	}
	if err := h.Store().Set(ctx, index, bucket, []byte("1")); err != nil {
		t.Fatal(err)
	}
	// A new engine on the same store and bus lists the deadline and fires it.
	h.Stub("wake", func(ctx step.Context, f *event.TimerFiredEvent) (*Reminded, error) { return &Reminded{Late: true}, nil })
	h.Advance(0)
	if n := storedFirings(t, h, res); n != 1 {
		t.Errorf("the stream holds %d TimerFiredEvents after firing the deadline again, want 1", n)
	}
	if n := res.Count("Reminded"); n != 1 {
		t.Errorf("%d runs of wake, want 1", n)
	}
	if keys, _ := engine.PendingDeadlines(ctx, h.Store(), "Reminder"); len(keys) != 0 {
		t.Errorf("deadline fired again left in the store: %v", keys)
	}
}

// storedFirings counts the TimerFiredEvents of res's run in the class
// stream, copies with one id included.
func storedFirings(t *testing.T, h *agenttest.Harness, res *agenttest.Result) int {
	t.Helper()
	filter := "agent.Reminder.*.*.*." + res.RunID() + ".control_event.TimerFiredEvent.*"
	n := 0
	for seq := uint64(1); ; n++ {
		m, err := h.Bus().NextMsg(context.Background(), topic.StreamName("Reminder"), filter, seq)
		if errors.Is(err, bus.ErrNotFound) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		seq = m.Seq + 1
	}
}
