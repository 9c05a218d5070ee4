package agent_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/status"

	"github.com/nats-io/nats.go/jetstream"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/crashtest"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store/natskv"
)

type (
	SagaReserved struct{ event.ControlEvent }
	SagaCharged  struct{ event.ControlEvent }
)

func init() {
	event.MustRegister[SagaReserved]()
	event.MustRegister[SagaCharged]()
	helperModes["sagareplica"] = sagaReplicaMain
}

// sagaAgent reserves, charges and fails to ship; its first two steps
// declare compensations that record their side effects like the steps do
// (crashAgent.effect), and may block so that the parent can kill the
// process in the middle of one.
type sagaAgent struct{ crashAgent }

func (a *sagaAgent) Steps() []*step.Step {
	return []*step.Step{
		step.New(a.Reserve, step.Compensate(a.Release)),
		step.New(a.Charge, step.Compensate(a.Refund)),
		step.New(a.Ship),
	}
}

func (a *sagaAgent) Reserve(ctx step.Context, m *event.UserMessageEvent) (*SagaReserved, error) {
	return &SagaReserved{}, a.effect(ctx, "Reserve")
}

func (a *sagaAgent) Release(ctx step.Context, m *event.UserMessageEvent, r *SagaReserved) error {
	return a.effect(ctx, "Release")
}

func (a *sagaAgent) Charge(ctx step.Context, r *SagaReserved) (*SagaCharged, error) {
	return &SagaCharged{}, a.effect(ctx, "Charge")
}

func (a *sagaAgent) Refund(ctx step.Context, r *SagaReserved, c *SagaCharged) error {
	return a.effect(ctx, "Refund")
}

func (a *sagaAgent) Ship(ctx step.Context, c *SagaCharged) (*event.StopEvent, error) {
	return nil, step.Userf("the courier refused the parcel")
}

// sagaReplicaMain is one replica of the saga agent.
func sagaReplicaMain() int {
	work, _ := time.ParseDuration(os.Getenv(envCrashWork))
	return runReplica(func(class string, kv jetstream.KeyValue) agent.Agent {
		return &sagaAgent{crashAgent{class: class, effects: kv, block: os.Getenv(envCrashBlock), work: work}}
	})
}

// waitEvents waits until the stream holds n control events named name.
func (e *crashEnv) waitEvents(name string, n int) {
	e.t.Helper()
	got := 0
	e.waitControl([]string{name}, func(string) bool {
		got++
		return got >= n
	}, func() string { return fmt.Sprintf("%d of %d %s", got, n, name) })
}

// TestCrashDuringCompensation kills a replica with SIGKILL in the middle of
// a compensation. The run had failed after two compensable steps; a new
// replica gets the ExceptionEvent again, skips nothing that did not run,
// repeats the compensation that was cut short (its side effect is absorbed
// by its idempotency key) and runs the other: each compensation's effect
// happens exactly once, newest step first, and the run ends compensated.
func TestCrashDuringCompensation(t *testing.T) {
	e := newCrashEnv(t)
	first := e.sagaReplica("saga-1", envCrashBlock+"=Refund")
	c := client(t, e.srv.URL())
	run := newRun(e.class, "dev")
	publish(t, c, run, userMessage("order"), nil)
	e.waitEntered(first, "Refund")
	first.Kill() // SIGKILL in the middle of Refund

	second := e.sagaReplica("saga-2")
	e.waitEvents("RunCompensatedEvent", 1)
	e.waitSettled()
	if err := second.Stop(waitLong); err != nil {
		t.Errorf("saga-2 did not shut down cleanly: %v\n%s", err, second.Output())
	}

	got := map[string]int{}
	for _, s := range e.streamEvents() {
		got[s.name]++
	}
	want := map[string]int{"UserMessageEvent": 1, "SagaReserved": 1, "SagaCharged": 1, "ExceptionEvent": 1,
		"StepCompensatedEvent": 2, "RunCompensatedEvent": 1}
	for n, c := range want {
		if got[n] != c {
			t.Errorf("stream holds %d %s, want %d (all: %v)", got[n], n, c, got)
		}
	}
	effects, dups := e.effectCounts()
	for _, n := range []string{"Reserve", "Charge", "Refund", "Release"} {
		if effects[n] != 1 {
			t.Errorf("side effects %v, want one per step and compensation", effects)
			break
		}
	}
	if dups != 1 {
		t.Errorf("%d repeated side effects, want 1 (the re-run of Refund)", dups)
	}
	// Newest first: Refund's effect was stored before Release's.
	if rev := e.revisions(); rev["Refund"] == 0 || rev["Refund"] > rev["Release"] {
		t.Errorf("effect revisions %v: Refund must precede Release", rev)
	}
	st, err := natskv.New(context.Background(), e.js, natskv.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := status.Read(context.Background(), st, e.class, run.Run)
	if err != nil || rec.State != status.Compensated || len(rec.Compensated) != 2 ||
		rec.Compensated[0] != "Charge" || rec.Compensated[1] != "Reserve" {
		t.Errorf("status %+v, %v; want compensated: Charge, Reserve", rec, err)
	}
	t.Logf("crash during compensation: stream %v, effects %v, re-runs absorbed %d, status %s %v", got, effects, dups, rec.State, rec.Compensated)
}

// revisions returns the KV revision of each step's (first) side effect.
func (e *crashEnv) revisions() map[string]uint64 {
	e.t.Helper()
	keys, err := e.effects.ListKeys(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]uint64{}
	for k := range keys.Keys() {
		i := len(k)
		for j := range k {
			if k[j] == '_' {
				i = j
				break
			}
		}
		name := k[:i]
		if name == "dup" || name == "entered" {
			continue
		}
		en, err := e.effects.Get(context.Background(), k)
		if err != nil {
			e.t.Fatal(err)
		}
		out[name] = en.Revision()
	}
	return out
}

// sagaReplica starts one replica of the saga agent and waits until it
// takes events.
func (e *crashEnv) sagaReplica(name string, env ...string) *crashtest.Child {
	e.t.Helper()
	env = append([]string{envCrashURL + "=" + e.srv.URL(), envCrashClass + "=" + e.class, "REDIS_URL="}, env...)
	c := crashtest.Start(e.t, name, "sagareplica", env...)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c.WaitReady(ctx)
	return c
}

// TestCrashCompensationRandomKills fails 20 runs after two compensable
// steps on two replicas whose steps and compensations take random time,
// while replicas are killed with SIGKILL at random moments and replaced.
// Every run must end compensated, each compensation's effect must happen
// exactly once per run, Refund before Release, and the stream must hold
// one StepCompensatedEvent per compensation and one RunCompensatedEvent
// per run.
func TestCrashCompensationRandomKills(t *testing.T) {
	const (
		runs  = 20
		kills = 4
	)
	e := newCrashEnv(t)
	work := envCrashWork + "=40ms"
	reps := []*crashtest.Child{e.sagaReplica("saga-a", work), e.sagaReplica("saga-b", work)}
	c := client(t, e.srv.URL())
	started := time.Now()
	ids := make([]string, runs)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range runs {
			run := newRun(e.class, "dev")
			ids[i] = run.Run
			if err := publishErr(context.Background(), c, run, userMessage(fmt.Sprint("order ", i)), nil); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(25 * time.Millisecond) // spread the load over the kills
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 18))
	for killed := 0; killed < kills; killed++ {
		time.Sleep(time.Duration(150+rng.IntN(350)) * time.Millisecond) // random moment
		i := rng.IntN(len(reps))
		reps[i].Kill()
		reps[i] = e.sagaReplica(fmt.Sprintf("saga-%d", killed+1), work)
	}
	<-done
	if t.Failed() {
		return
	}
	e.waitEvents("RunCompensatedEvent", runs)
	e.waitSettled()
	elapsed := time.Since(started)
	for _, r := range reps {
		if err := r.Stop(waitLong); err != nil {
			t.Errorf("%s did not shut down cleanly: %v\n%s", r.Name, err, r.Output())
		}
	}

	got := map[string]int{}
	for _, s := range e.streamEvents() {
		got[s.name]++
	}
	for n, want := range map[string]int{"ExceptionEvent": runs, "StepCompensatedEvent": 2 * runs, "RunCompensatedEvent": runs,
		"StepCompensationFailedEvent": 0} {
		if got[n] != want {
			t.Errorf("stream holds %d %s, want %d (all: %v)", got[n], n, want, got)
		}
	}
	effects, dups := e.effectCounts()
	for _, n := range []string{"Reserve", "Charge", "Refund", "Release"} {
		if effects[n] != runs {
			t.Errorf("%d side effects of %s, want %d (all: %v)", effects[n], n, runs, effects)
		}
	}
	// Per run, Refund's effect was stored before Release's.
	order := e.effectOrder()
	outOfOrder := 0
	for _, id := range ids {
		if r := order[id]; r["Refund"] == 0 || r["Refund"] > r["Release"] {
			outOfOrder++
			t.Errorf("run %s: effect revisions %v, want Refund before Release", id, r)
		}
	}
	st, err := natskv.New(context.Background(), e.js, natskv.Config{})
	if err != nil {
		t.Fatal(err)
	}
	states := map[status.State]int{}
	for _, id := range ids {
		s, err := status.Read(context.Background(), st, e.class, id)
		if err != nil {
			t.Errorf("status of %s: %v", id, err)
			continue
		}
		states[s.State]++
	}
	if states[status.Compensated] != runs {
		t.Errorf("statuses %v, want %d compensated", states, runs)
	}
	t.Logf("random kills during compensation: %d runs, %d kills, %v: stream %v, side effects %v, re-runs absorbed by idempotency keys %d, out of order %d, statuses %v",
		runs, kills, elapsed.Round(time.Millisecond), got, effects, dups, outOfOrder, states)
}

// effectOrder returns, per run, the KV revision of each side effect.
func (e *crashEnv) effectOrder() map[string]map[string]uint64 {
	e.t.Helper()
	keys, err := e.effects.ListKeys(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]map[string]uint64{}
	for k := range keys.Keys() {
		i := strings.IndexByte(k, '_')
		if i < 0 || k[:i] == "dup" || k[:i] == "entered" {
			continue
		}
		en, err := e.effects.Get(context.Background(), k)
		if err != nil {
			e.t.Fatal(err)
		}
		run := string(en.Value())
		if out[run] == nil {
			out[run] = map[string]uint64{}
		}
		out[run][k[:i]] = en.Revision()
	}
	return out
}
