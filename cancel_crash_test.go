package agent_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/crashtest"
	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store/natskv"
)

type (
	CancelBooked struct{ event.ControlEvent }
	CancelWorked struct{ event.ControlEvent }
)

// envCancelUndo makes the cancel agent's first step compensable.
const envCancelUndo = "SAAP_CANCEL_UNDO"

func init() {
	event.MustRegister[CancelBooked]()
	event.MustRegister[CancelWorked]()
	helperModes["cancelreplica"] = cancelReplicaMain
}

// cancelAgent books (with a compensation that releases, when undo is
// set), then works until its context ends, then would finish. Every
// step and compensation records its side effect (crashAgent.effect);
// Work records "entered_Work" once it runs and "stopped_Work" with its
// context's cause once that ends.
type cancelAgent struct {
	crashAgent
	undo bool
}

func (a *cancelAgent) Steps() []*step.Step {
	book := step.New(a.Book)
	if a.undo {
		book = step.New(a.Book, step.Compensate(a.Release))
	}
	return []*step.Step{book, step.New(a.Work), step.New(a.Finish)}
}

func (a *cancelAgent) Book(ctx step.Context, m *event.UserMessageEvent) (*CancelBooked, error) {
	return &CancelBooked{}, a.effect(ctx, "Book")
}

func (a *cancelAgent) Release(ctx step.Context, m *event.UserMessageEvent, b *CancelBooked) error {
	return a.effect(ctx, "Release")
}

func (a *cancelAgent) Work(ctx step.Context, b *CancelBooked) (*CancelWorked, error) {
	if _, err := a.effects.Put(ctx, "entered_Work", nil); err != nil {
		return nil, err
	}
	<-ctx.Done()
	cause := context.Cause(ctx)
	// The effect store outlives the step's context.
	if _, err := a.effects.Put(context.WithoutCancel(ctx), "stopped_Work", []byte(cause.Error())); err != nil {
		return nil, err
	}
	return nil, cause
}

func (a *cancelAgent) Finish(ctx step.Context, w *CancelWorked) (*event.StopEvent, error) {
	return &event.StopEvent{}, a.effect(ctx, "Finish")
}

// cancelReplicaMain is one replica of the cancel agent. It handles one
// event at a time, so that while its Work blocks, the other replica
// takes the cancel.
func cancelReplicaMain() int {
	return runReplica(func(class string, kv jetstream.KeyValue) agent.Agent {
		return &cancelAgent{crashAgent: crashAgent{class: class, effects: kv}, undo: os.Getenv(envCancelUndo) == "1"}
	}, agent.WithConcurrency(1))
}

// TestCancelRealProcesses cancels a run in the middle of a step, with two
// replica processes of one event at a time each: the one running the step
// is busy, so the other takes the cancel request. The running step sees
// its context end with step.ErrRunEnded, nothing after it runs, the
// completed step's compensation runs once when it declares one, the run
// ends with a RunCancelledEvent and its status is cancelled; a second
// cancel is refused with status.ErrEnded.
func TestCancelRealProcesses(t *testing.T) {
	for _, undo := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "compensated"}[undo]
		t.Run(name, func(t *testing.T) {
			e := newCrashEnv(t)
			env := []string{envCancelUndo + "=0"}
			if undo {
				env[0] = envCancelUndo + "=1"
			}
			r1 := e.cancelReplica("cancel-1", env...)
			r2 := e.cancelReplica("cancel-2", env...)
			c := client(t, e.srv.URL())
			run := newRun(e.class, "dev")
			publish(t, c, run, userMessage("book and work"), nil)
			e.waitEffect("entered_Work", r1, r2)

			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			began := time.Now()
			var st status.Record
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				var err error
				st, err = status.Cancel(ctx, c, e.class, run.Run, "the user pressed stop", "u1")
				if err == nil {
					break
				}
				if !errors.Is(err, status.ErrNotFound) {
					t.Fatalf("cancel: %v", err)
				}
				select { // the run's first status is written beside its steps
				case <-tick.C:
				case <-ctx.Done():
					t.Fatal("the run's status was never recorded")
				}
			}
			if st.Display != run.Display || st.Thread != run.Thread {
				t.Errorf("status %+v does not name the run's thread and display", st)
			}
			cause := e.waitEffect("stopped_Work", r1, r2)
			stoppedIn := time.Since(began)
			if cause != step.ErrRunEnded.Error() {
				t.Errorf("Work's context ended with %q, want %q", cause, step.ErrRunEnded)
			}
			last := "RunCancelledEvent"
			if undo {
				last = "RunCompensatedEvent"
			}
			e.waitEvents(last, 1)
			e.waitSettled()

			got := map[string]int{}
			for _, s := range e.streamEvents() {
				got[s.name]++
			}
			want := map[string]int{"UserMessageEvent": 1, "CancelBooked": 1, "RunCancelRequestedEvent": 1, "RunCancelledEvent": 1,
				"CancelWorked": 0, "StopEvent": 0, "ExceptionEvent": 0, "StepCompensatedEvent": 0, "RunCompensatedEvent": 0}
			if undo {
				want["StepCompensatedEvent"], want["RunCompensatedEvent"] = 1, 1
			}
			for n, c := range want {
				if got[n] != c {
					t.Errorf("stream holds %d %s, want %d (all: %v)", got[n], n, c, got)
				}
			}
			effects, dups := e.effectCounts()
			wantEffects := map[string]int{"Book": 1, "Release": 0, "Finish": 0}
			if undo {
				wantEffects["Release"] = 1
			}
			for n, c := range wantEffects {
				if effects[n] != c || dups != 0 {
					t.Errorf("side effects %v (%d repeated), want %v", effects, dups, wantEffects)
					break
				}
			}
			kv, err := natskv.New(ctx, e.js, natskv.Config{})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := status.Read(ctx, kv, e.class, run.Run)
			if err != nil || rec.State != status.Cancelled {
				t.Errorf("status %+v, %v; want cancelled", rec, err)
			}
			if undo && (len(rec.Compensated) != 1 || rec.Compensated[0] != "Book") {
				t.Errorf("status lists compensated %v, want [Book]", rec.Compensated)
			}
			if _, err := status.Cancel(ctx, c, e.class, run.Run, "", "u1"); !errors.Is(err, status.ErrEnded) {
				t.Errorf("second cancel: %v, want status.ErrEnded", err)
			}
			for _, r := range []*crashtest.Child{r1, r2} {
				if err := r.Stop(waitLong); err != nil {
					t.Errorf("%s did not shut down cleanly: %v\n%s", r.Name, err, r.Output())
				}
			}
			t.Logf("cancel (%s): the running step stopped %s after the request; stream %v; effects %v; status %s %v",
				name, stoppedIn.Round(time.Millisecond), got, effects, rec.State, rec.Compensated)
		})
	}
}

// cancelReplica starts one replica of the cancel agent and waits until it
// takes events.
func (e *crashEnv) cancelReplica(name string, env ...string) *crashtest.Child {
	e.t.Helper()
	env = append([]string{envCrashURL + "=" + e.srv.URL(), envCrashClass + "=" + e.class, "REDIS_URL="}, env...)
	c := crashtest.Start(e.t, name, "cancelreplica", env...)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c.WaitReady(ctx)
	return c
}

// waitEffect waits until the effect store holds key and returns its value,
// failing if one of the replicas exits first.
func (e *crashEnv) waitEffect(key string, replicas ...*crashtest.Child) string {
	e.t.Helper()
	w, err := e.effects.Watch(context.Background(), key)
	if err != nil {
		e.t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	timeout := time.After(waitLong)
	for {
		select {
		case kve := <-w.Updates():
			if kve != nil && kve.Operation() == jetstream.KeyValuePut {
				return string(kve.Value())
			}
		case <-replicas[0].Done():
			e.t.Fatalf("%s exited before %s: %s", replicas[0].Name, key, replicas[0].Output())
		case <-replicas[len(replicas)-1].Done():
			r := replicas[len(replicas)-1]
			e.t.Fatalf("%s exited before %s: %s", r.Name, key, r.Output())
		case <-timeout:
			e.t.Fatalf("the effect store never held %s", key)
		}
	}
}
