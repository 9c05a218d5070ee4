package agent_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saap-go/agent/store"

	"github.com/nats-io/nats.go/jetstream"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/internal/crashtest"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

const envHITLTimeout = "SAAP_CRASH_HITL_TIMEOUT" // the question's timeout, e.g. "2s"; empty: none

func init() {
	helperModes["hitlreplica"] = hitlReplicaMain
}

// hitlAgent asks for a confirmation and ends the run with the answer or
// the timeout. Each outcome is recorded under the run's id in effects, so
// the parent can tell a second outcome from a re-run of the same one.
type hitlAgent struct {
	class   string
	timeout time.Duration
	spread  time.Duration      // adds a random part of up to spread to each timeout
	effects jetstream.KeyValue // nil: not recorded
}

func (a *hitlAgent) Class() string { return a.class }

func (a *hitlAgent) Steps() []*step.Step {
	return []*step.Step{step.New(a.Ask), step.New(a.Decide), step.New(a.Expire)}
}

func (a *hitlAgent) Ask(ctx step.Context, _ *event.UserMessageEvent) (*event.HumanInTheLoopConfirmationRequestEvent, error) {
	var opts []hitl.Option
	if a.timeout > 0 {
		d := a.timeout
		if a.spread > 0 {
			d += rand.N(a.spread)
		}
		opts = append(opts, hitl.Timeout(d))
	}
	return hitl.Confirm("Approve?", opts...)
}

func (a *hitlAgent) Decide(ctx step.Context, _ *event.HumanInTheLoopConfirmationResponseEvent) (*event.StopEvent, error) {
	return &event.StopEvent{}, a.outcome(ctx, "answer")
}

func (a *hitlAgent) Expire(ctx step.Context, _ *event.HumanInTheLoopTimeoutEvent) (*event.StopEvent, error) {
	return &event.StopEvent{}, a.outcome(ctx, "timeout")
}

func (a *hitlAgent) outcome(ctx step.Context, kind string) error {
	if a.effects == nil {
		return nil
	}
	key, val := "outcome_"+ctx.Run().RunID, kind+" "+ctx.IdempotencyKey()
	if _, err := a.effects.Create(ctx, key, []byte(val)); err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		cur, err := a.effects.Get(ctx, key)
		if err != nil {
			return err
		}
		if string(cur.Value()) != val { // not a re-run of the same execution: a second outcome
			_, err := a.effects.Create(ctx, "dup_"+ctx.Run().RunID+"_"+event.NewID(), []byte(val))
			return err
		}
	}
	return nil
}

func hitlReplicaMain() int {
	timeout, _ := time.ParseDuration(os.Getenv(envHITLTimeout))
	return runReplica(func(class string, kv jetstream.KeyValue) agent.Agent {
		return &hitlAgent{class: class, timeout: timeout, effects: kv}
	})
}

func (e *crashEnv) hitlReplica(name string, timeout time.Duration) *crashtest.Child {
	e.t.Helper()
	c := crashtest.Start(e.t, name, "hitlreplica",
		envCrashURL+"="+e.srv.URL(), envCrashClass+"="+e.class, "REDIS_URL=",
		envHITLTimeout+"="+timeout.String())
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c.WaitReady(ctx)
	return c
}

// questions delivers every HITL confirmation request of the class the
// stream holds, with the run it belongs to, as a gateway would learn of it.
func (e *crashEnv) questions(f func(run topic.Agent, req *event.HumanInTheLoopConfirmationRequestEvent)) {
	e.t.Helper()
	ctx := context.Background()
	s, err := e.js.Stream(ctx, topic.StreamName(e.class))
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{
		"agent." + e.class + ".*.*.*.*.control_event.HumanInTheLoopConfirmationRequestEvent.*",
	}})
	if err != nil {
		e.t.Fatal(err)
	}
	cc, err := c.Consume(func(m jetstream.Msg) {
		tp, err := topic.ParseAgent(m.Subject())
		if err != nil {
			return
		}
		ev, err := event.Unmarshal(m.Data())
		if err != nil {
			return
		}
		if req, ok := ev.(*event.HumanInTheLoopConfirmationRequestEvent); ok {
			f(topic.Agent{Class: tp.Class, ID: tp.ID, Thread: tp.Thread, Display: tp.Display, Run: tp.Run}, req)
		}
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(cc.Stop)
}

// outcomes reads the recorded outcome of each run and the second outcomes.
func (e *crashEnv) outcomes() (kinds map[string]string, dups int) {
	e.t.Helper()
	keys, err := e.effects.ListKeys(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	kinds = map[string]string{}
	for k := range keys.Keys() {
		switch {
		case strings.HasPrefix(k, "dup_"):
			dups++
		case strings.HasPrefix(k, "outcome_"):
			v, err := e.effects.Get(context.Background(), k)
			if err != nil {
				e.t.Fatal(err)
			}
			kinds[strings.TrimPrefix(k, "outcome_")], _, _ = strings.Cut(string(v.Value()), " ")
		}
	}
	return kinds, dups
}

func answer(req *event.HumanInTheLoopConfirmationRequestEvent, yes bool) *event.HumanInTheLoopConfirmationResponseEvent {
	return &event.HumanInTheLoopConfirmationResponseEvent{Response: yes, RequestEvent: req}
}

// A run waiting for a human survives the runner's SIGKILL: the restarted
// runner takes the answer and the run completes once.
func TestCrashHITLAnswerAfterRestart(t *testing.T) {
	e := newCrashEnv(t)
	first := e.hitlReplica("replica-1", 0)
	asked := make(chan *event.HumanInTheLoopConfirmationRequestEvent, 1)
	e.questions(func(_ topic.Agent, req *event.HumanInTheLoopConfirmationRequestEvent) { asked <- req })

	c := client(t, e.srv.URL())
	run := newRun(e.class, "dev")
	publish(t, c, run, userMessage("expense"), nil)
	var req *event.HumanInTheLoopConfirmationRequestEvent
	select {
	case req = <-asked:
	case <-time.After(waitLong):
		t.Fatalf("no question asked\n%s", first.Output())
	}
	e.waitSettled() // the run is paused: nothing in hand
	first.Kill()

	second := e.hitlReplica("replica-2", 0)
	publish(t, c, run, answer(req, true), nil)
	e.waitStops(1)
	e.waitSettled()
	if err := second.Stop(waitLong); err != nil {
		t.Errorf("replica-2 did not shut down cleanly: %v\n%s", err, second.Output())
	}
	got := map[string]int{}
	for _, s := range e.streamEvents() {
		got[s.name]++
	}
	want := map[string]int{"UserMessageEvent": 1, "HumanInTheLoopConfirmationRequestEvent": 1,
		"HumanInTheLoopConfirmationResponseEvent": 1, "StopEvent": 1}
	for n, c := range want {
		if got[n] != c {
			t.Errorf("stream holds %d %s, want %d (all: %v)", got[n], n, c, got)
		}
	}
	kinds, dups := e.outcomes()
	if kinds[run.Run] != "answer" || dups != 0 {
		t.Errorf("outcomes %v, second outcomes %d; want one answer", kinds, dups)
	}
	if m := e.markers([]string{run.Run}); m[store.Completed] != 1 {
		t.Errorf("end markers %v, want the run completed", m)
	}
	t.Logf("answer after restart: stream %v, outcome %s", got, kinds[run.Run])
}

// Two replicas, 200 runs each waiting for a confirmation with a short
// timeout, about half of them answered close to their deadline, replicas
// killed with SIGKILL at random and restarted: every run gets exactly one
// outcome, the answer or the timeout.
func TestCrashHITLTimeoutsRandomKills(t *testing.T) {
	const (
		runs    = 200
		kills   = 4
		timeout = 2 * time.Second
	)
	e := newCrashEnv(t)
	var mu sync.Mutex
	reps := []*crashtest.Child{e.hitlReplica("replica-a", timeout), e.hitlReplica("replica-b", timeout)}
	c := client(t, e.srv.URL())

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 10))
	var rmu sync.Mutex
	answered := map[string]bool{}
	e.questions(func(run topic.Agent, req *event.HumanInTheLoopConfirmationRequestEvent) {
		rmu.Lock()
		defer rmu.Unlock()
		if answered[run.Run] || rng.IntN(2) == 0 {
			return
		}
		answered[run.Run] = true
		// Close to the deadline, on either side of it.
		due := time.Unix(0, req.CreatedAt).Add(timeout)
		at := due.Add(time.Duration(rng.IntN(600)-300) * time.Millisecond)
		time.AfterFunc(time.Until(at), func() {
			if err := publishErr(context.Background(), c, run, answer(req, true), nil); err != nil {
				t.Errorf("answer: %v", err)
			}
		})
	})

	started := time.Now()
	ids := make([]string, runs)
	var pub sync.WaitGroup
	pub.Go(func() {
		for i := range runs {
			run := newRun(e.class, "dev")
			ids[i] = run.Run
			if err := publishErr(context.Background(), c, run, userMessage(fmt.Sprint("expense ", i)), nil); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	killRng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11))
	for killed := 0; killed < kills; killed++ {
		time.Sleep(time.Duration(300+killRng.IntN(700)) * time.Millisecond)
		mu.Lock()
		i := killRng.IntN(len(reps))
		reps[i].Kill()
		reps[i] = e.hitlReplica(fmt.Sprintf("replica-%d", killed+1), timeout)
		mu.Unlock()
	}
	pub.Wait()
	if t.Failed() {
		return
	}
	e.waitStops(runs)
	time.Sleep(timeout) // let late answers land, so the losers are counted too
	e.waitSettled()
	elapsed := time.Since(started)
	for _, r := range reps {
		if err := r.Stop(waitLong); err != nil {
			t.Errorf("%s did not shut down cleanly: %v\n%s", r.Name, err, r.Output())
		}
	}

	perRun := map[string]map[string]int{}
	for _, s := range e.streamEvents() {
		if perRun[s.run] == nil {
			perRun[s.run] = map[string]int{}
		}
		perRun[s.run][s.name]++
	}
	kinds, dups := e.outcomes()
	byKind := map[string]int{}
	both := 0
	for _, id := range ids {
		m := perRun[id]
		if m["StopEvent"] != 1 || m["ExceptionEvent"] != 0 || m["HumanInTheLoopTimeoutEvent"] > 1 {
			t.Errorf("run %s: stream holds %v", id, m)
		}
		if kinds[id] == "" {
			t.Errorf("run %s has no recorded outcome", id)
		}
		byKind[kinds[id]]++
		if m["HumanInTheLoopTimeoutEvent"] == 1 && m["HumanInTheLoopConfirmationResponseEvent"] == 1 {
			both++
		}
	}
	if dups != 0 {
		t.Errorf("%d runs got a second outcome", dups)
	}
	markers := e.markers(ids)
	if markers[store.Completed] != runs {
		t.Errorf("end markers %v, want %d completed", markers, runs)
	}
	t.Logf("HITL timeouts with random kills: %d runs, %d kills, %v: outcomes answer %d, timeout %d; runs where answer and timeout both arrived (one refused) %d; answers sent %d; second outcomes %d; end markers %v",
		runs, kills, elapsed.Round(time.Millisecond), byKind["answer"], byKind["timeout"], both, len(answered), dups, markers)
}

// Over NATS, in process: a question with a timeout ends in its timeout;
// one without an answer in time gets exactly one timeout event.
func TestHITLTimeoutOverNATS(t *testing.T) {
	srv := embedded(t)
	c := client(t, srv.URL())
	a := &hitlAgent{class: uniqueClass("HITLTimeout"), timeout: 300 * time.Millisecond}
	startRunner(t, a, agent.WithNATS(srv.URL()), agent.Standalone(), agent.Discoverable(false), quiet(t))
	run := newRun(a.class, "dev")
	stopped := awaitControl(t, c, run, "StopEvent")
	publish(t, c, run, userMessage("expense"), nil)
	select {
	case <-stopped:
	case <-time.After(waitLong):
		t.Fatal("the run did not end")
	}
	evs := controlEvents(t, c, a.class, run.Run)
	if n := count(evs, "HumanInTheLoopTimeoutEvent"); n != 1 {
		t.Fatalf("%d timeout events (%s), want 1", n, names(evs))
	}
	var req *event.HumanInTheLoopConfirmationRequestEvent
	var to *event.HumanInTheLoopTimeoutEvent
	for _, ev := range evs {
		switch x := ev.(type) {
		case *event.HumanInTheLoopConfirmationRequestEvent:
			req = x
		case *event.HumanInTheLoopTimeoutEvent:
			to = x
		}
	}
	if req == nil || to.RequestEventID != req.EventID || to.TimeoutSeconds != 0.3 {
		t.Errorf("timeout %+v does not answer request %+v", to, req)
	}
}
