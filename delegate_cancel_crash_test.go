package agent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/crashtest"
	"github.com/saap-go/agent/status"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store/natskv"
)

// TestCancelDelegateRealProcesses cancels a run while its delegate (agent in
// the loop) works, each class in processes of its own on one NATS server:
// the caller's cancel reaches the delegate's run, whose running step sees
// its context end with step.ErrRunEnded, and both runs end cancelled.
func TestCancelDelegateRealProcesses(t *testing.T) {
	e := newCrashEnv(t) // e.class is the delegate's class: the cancel agent
	callerClass := uniqueClass("Caller")
	// Two delegate replicas of one event at a time: while one works, the
	// other takes the cancel.
	d1 := e.cancelReplica("delegate-1", envCancelUndo+"=0")
	d2 := e.cancelReplica("delegate-2", envCancelUndo+"=0")
	caller := crashtest.Start(t, "caller", "aitlcaller", envCrashURL+"="+e.srv.URL(), envCrashClass+"="+callerClass,
		envAITLWorker+"="+e.class, "REDIS_URL=")
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	caller.WaitReady(ctx)

	c := client(t, e.srv.URL())
	run := newRun(callerClass, "boss")
	publish(t, c, run, userMessage("work for me"), nil)
	e.waitEffect("entered_Work", d1, d2)

	began := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := status.Cancel(ctx, c, callerClass, run.Run, "the user pressed stop", "u1")
		if err == nil {
			break
		}
		if !errors.Is(err, status.ErrNotFound) {
			t.Fatalf("cancel: %v", err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal("the caller run's status was never recorded")
		}
	}
	if cause := e.waitEffect("stopped_Work", d1, d2); cause != step.ErrRunEnded.Error() {
		t.Errorf("the delegate's step ended with %q, want %q", cause, step.ErrRunEnded)
	}
	stoppedIn := time.Since(began)
	e.waitEvents("RunCancelledEvent", 1)
	e.waitSettled()

	var delegateRun string
	got := map[string]int{}
	for _, s := range e.streamEvents() {
		got[s.name]++
		delegateRun = s.run
	}
	for n, want := range map[string]int{"UserMessageEvent": 1, "CancelBooked": 1, "RunCancelRequestedEvent": 1,
		"RunCancelledEvent": 1, "CancelWorked": 0, "StopEvent": 0} {
		if got[n] != want {
			t.Errorf("delegate stream holds %d %s, want %d (all: %v)", got[n], n, want, got)
		}
	}
	kv, err := natskv.New(ctx, e.js, natskv.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := status.Read(ctx, kv, e.class, delegateRun); err != nil || rec.State != status.Cancelled {
		t.Errorf("delegate run status %+v, %v; want cancelled", rec, err)
	}
	var rec status.Record
	for { // the caller's status is written beside its end
		if rec, err = status.Read(ctx, kv, callerClass, run.Run); err == nil && rec.State == status.Cancelled {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("caller run status %+v, %v; want cancelled", rec, err)
		}
	}
	evs := controlEvents(t, c, callerClass, run.Run)
	if count(evs, "RunCancelledEvent") != 1 || count(evs, "Result") != 0 || count(evs, "AgentInTheLoopResponseEvent") != 0 {
		t.Errorf("caller run: %s, want it cancelled without the delegate's answer", names(evs))
	}
	for _, p := range []*crashtest.Child{d1, d2, caller} {
		if err := p.Stop(waitLong); err != nil {
			t.Errorf("%s did not shut down cleanly: %v\n%s", p.Name, err, p.Output())
		}
	}
	t.Logf("delegate cancelled with its caller: the delegate's step stopped %s after the caller's cancel; delegate stream %v",
		stoppedIn.Round(time.Millisecond), got)
}
