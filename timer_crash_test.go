package agent_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/crashtest"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store"
)

const envTimerDelay = "SAAP_CRASH_TIMER_DELAY" // how long a run sleeps, e.g. "3s"

func init() { helperModes["timerreplica"] = timerReplicaMain }

// timerAgent sleeps on a durable timer and ends the run when it fires,
// recording the outcome in effects (see hitlAgent.outcome) so that a
// second firing would show.
type timerAgent struct {
	class   string
	delay   time.Duration
	spread  time.Duration      // adds a random part of up to spread to each delay
	effects jetstream.KeyValue // nil: not recorded
}

func (a *timerAgent) Class() string { return a.class }

func (a *timerAgent) Steps() []*step.Step {
	return []*step.Step{step.New(a.Wait), step.New(a.Wake)}
}

func (a *timerAgent) Wait(ctx step.Context, _ *event.UserMessageEvent) (*event.TimerRequestEvent, error) {
	d := a.delay
	if a.spread > 0 {
		d += time.Duration(time.Now().UnixNano() % int64(a.spread))
	}
	return step.Sleep(d), nil
}

func (a *timerAgent) Wake(ctx step.Context, _ *event.TimerFiredEvent) (*event.StopEvent, error) {
	return &event.StopEvent{}, (&hitlAgent{effects: a.effects}).outcome(ctx, "timer")
}

func timerReplicaMain() int {
	delay, _ := time.ParseDuration(os.Getenv(envTimerDelay))
	return runReplica(func(class string, kv jetstream.KeyValue) agent.Agent {
		return &timerAgent{class: class, delay: delay, effects: kv}
	})
}

func (e *crashEnv) timerReplica(name string, delay time.Duration) *crashtest.Child {
	e.t.Helper()
	c := crashtest.Start(e.t, name, "timerreplica",
		envCrashURL+"="+e.srv.URL(), envCrashClass+"="+e.class, "REDIS_URL=", envTimerDelay+"="+delay.String())
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c.WaitReady(ctx)
	return c
}

// Runs sleeping on durable timers survive a SIGKILL of their only runner:
// the timers fall due while no runner runs, and the runner started after
// that fires each one exactly once; every run ends once.
func TestCrashTimerSurvivesKill(t *testing.T) {
	const (
		runs  = 20
		delay = 3 * time.Second
	)
	e := newCrashEnv(t)
	first := e.timerReplica("replica-1", delay)
	c := client(t, e.srv.URL())
	ids := make([]string, runs)
	for i := range ids {
		run := newRun(e.class, "dev")
		ids[i] = run.Run
		publish(t, c, run, userMessage(fmt.Sprint("remind me ", i)), nil)
	}
	e.waitEvents("TimerRequestEvent", runs)
	e.waitSettled() // every run sleeps: nothing in hand
	// The last timer falls due delay after its request; the kill comes
	// well before.
	due := time.Now().Add(delay)
	first.Kill()
	if n := e.count("TimerFiredEvent"); n != 0 {
		t.Fatalf("%d timers fired before the kill, want none (delay too short for this machine?)", n)
	}
	// No runner while the timers fall due: the wait is for the clock, not
	// for another process.
	time.Sleep(time.Until(due))

	second := e.timerReplica("replica-2", delay)
	e.waitStops(runs)
	e.waitSettled()
	if err := second.Stop(waitLong); err != nil {
		t.Errorf("replica-2 did not shut down cleanly: %v\n%s", err, second.Output())
	}
	perRun := map[string]map[string]int{}
	for _, s := range e.streamEvents() {
		if perRun[s.run] == nil {
			perRun[s.run] = map[string]int{}
		}
		perRun[s.run][s.name]++
	}
	kinds, dups := e.outcomes()
	for _, id := range ids {
		m := perRun[id]
		if m["TimerRequestEvent"] != 1 || m["TimerFiredEvent"] != 1 || m["StopEvent"] != 1 || m["ExceptionEvent"] != 0 {
			t.Errorf("run %s: stream holds %v, want one request, one firing, one stop", id, m)
		}
		if kinds[id] != "timer" {
			t.Errorf("run %s: outcome %q, want timer", id, kinds[id])
		}
	}
	if dups != 0 {
		t.Errorf("%d runs woke twice", dups)
	}
	if m := e.markers(ids); m[store.Completed] != runs {
		t.Errorf("end markers %v, want %d completed", m, runs)
	}
}

// count is the number of control events named name the class stream
// holds.
func (e *crashEnv) count(name string) int {
	e.t.Helper()
	n := 0
	for _, s := range e.streamEvents() {
		if s.name == name {
			n++
		}
	}
	return n
}
