package agent_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/saap-go/agent/store"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/crashtest"
	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store/natskv"
	"github.com/saap-go/agent/topic"
)

// Environment of the replica helper process.
const (
	envCrashURL   = "SAAP_CRASH_NATS_URL"
	envCrashClass = "SAAP_CRASH_CLASS"
	envCrashBlock = "SAAP_CRASH_BLOCK" // step name that blocks forever once entered
	envCrashWork  = "SAAP_CRASH_WORK"  // max random work per step, e.g. "20ms"
)

// crashAckWait is the runner consumer's AckWait in the crash tests, so that
// the events a killed replica held come back within a second.
const crashAckWait = time.Second

func init() {
	helperModes["replica"] = replicaMain
}

// effectsBucket holds one key per step side effect (named by the step's
// idempotency key) and one "dup_" key per attempt to repeat one.
func effectsBucket(class string) string { return "effects_" + class }

// replicaMain is the helper process: one replica of the crash agent.
func replicaMain() int {
	work, _ := time.ParseDuration(os.Getenv(envCrashWork))
	return runReplica(func(class string, kv jetstream.KeyValue) agent.Agent {
		return &crashAgent{class: class, effects: kv, block: os.Getenv(envCrashBlock), work: work}
	})
}

// runReplica is the body of every crash-test replica process: it opens the
// class's effects bucket, builds the agent with it and runs it until
// SIGTERM, with the crash tests' runner options plus extra.
func runReplica(build func(class string, effects jetstream.KeyValue) agent.Agent, extra ...agent.Option) int {
	url, class := os.Getenv(envCrashURL), os.Getenv(envCrashClass)
	nc, err := nats.Connect(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(context.Background(), effectsBucket(class))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := agent.Run(ctx, build(class, kv), append(crashRunOptions(url, log), extra...)...); err != nil {
		fmt.Fprintln(os.Stderr, "Run:", err)
		return 1
	}
	return 0
}

// crashRunOptions are the runner options of every crash-test child
// process: the given NATS, no platform, a short AckWait so redeliveries
// come quickly after a kill, and a crash-loop limit above the number of
// kills any suite makes: the suites kill replicas every few hundred
// milliseconds, so one event can be in the handling of several killed
// replicas in a row without being what kills them.
func crashRunOptions(url string, log *slog.Logger) []agent.Option {
	return []agent.Option{
		agent.WithNATS(url),
		agent.Standalone(),
		agent.Discoverable(false),
		agent.WithAckWait(crashAckWait),
		agent.WithMaxDeliver(10),
		agent.CrashLoopLimit(8),
		agent.WithShutdownTimeout(5 * time.Second),
		agent.WithLogger(log),
		agent.WithReady(func(agent.Info) { crashtest.Ready() }),
	}
}

// crashAgent is the linear agent whose steps record a side effect through
// their idempotency key, optionally do some work, and optionally block.
type crashAgent struct {
	class   string
	effects jetstream.KeyValue
	block   string
	work    time.Duration
}

func (a *crashAgent) Class() string { return a.class }

func (a *crashAgent) Steps() []*step.Step {
	return []*step.Step{step.New(a.Ask), step.New(a.Answer), step.New(a.Finish)}
}

func (a *crashAgent) effect(ctx step.Context, name string) error {
	sum := sha256.Sum256([]byte(ctx.IdempotencyKey()))
	key := name + "_" + hex.EncodeToString(sum[:8])
	if _, err := a.effects.Create(ctx, key, []byte(ctx.Run().RunID)); err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		// The effect happened already: this is a re-run. Count it.
		if _, err := a.effects.Create(ctx, "dup_"+key+"_"+event.NewID(), nil); err != nil {
			return err
		}
	}
	if a.block == name {
		if _, err := a.effects.Put(ctx, "entered_"+name, nil); err != nil {
			return err
		}
		select {} // hold the event until the parent kills this process
	}
	if a.work > 0 {
		time.Sleep(rand.N(a.work)) // simulated work, so kills land mid-step
	}
	return nil
}

func (a *crashAgent) Ask(ctx step.Context, m *event.UserMessageEvent) (*Asked, error) {
	if err := a.effect(ctx, "Ask"); err != nil {
		return nil, err
	}
	return &Asked{Text: "q"}, nil
}

func (a *crashAgent) Answer(ctx step.Context, q *Asked) (*Answered, error) {
	if err := a.effect(ctx, "Answer"); err != nil {
		return nil, err
	}
	return &Answered{Text: "a"}, nil
}

func (a *crashAgent) Finish(ctx step.Context, r *Answered) (*event.StopEvent, error) {
	if err := a.effect(ctx, "Finish"); err != nil {
		return nil, err
	}
	return &event.StopEvent{}, nil
}

// crashEnv is the parent's side of a crash test: a file-backed embedded
// server, the effects bucket, and a view of the class's stream.
type crashEnv struct {
	t       *testing.T
	srv     *natsserver.Server
	nc      *nats.Conn
	js      jetstream.JetStream
	class   string
	effects jetstream.KeyValue
}

func newCrashEnv(t *testing.T) *crashEnv {
	if testing.Short() {
		t.Skip("crash tests start helper processes; skipped with -short")
	}
	srv, err := natsserver.Start(natsserver.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	class := uniqueClass("Crash")
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: effectsBucket(class)})
	if err != nil {
		t.Fatal(err)
	}
	return &crashEnv{t: t, srv: srv, nc: nc, js: js, class: class, effects: kv}
}

// replica starts one replica process and waits until it takes events.
func (e *crashEnv) replica(name string, env ...string) *crashtest.Child {
	e.t.Helper()
	env = append([]string{
		envCrashURL + "=" + e.srv.URL(),
		envCrashClass + "=" + e.class,
		"REDIS_URL=", // state in the server's KV, which the parent checks
	}, env...)
	c := crashtest.Start(e.t, name, "replica", env...)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	c.WaitReady(ctx)
	return c
}

// stored is a control event read back from the stream.
type stored struct {
	run, name, id string
}

// streamEvents reads every control event of the class from the stream.
func (e *crashEnv) streamEvents() []stored {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	s, err := e.js.Stream(ctx, topic.StreamName(e.class))
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []stored
	for read := uint64(0); read < info.State.Msgs; read++ {
		m, err := c.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			e.t.Fatalf("reading the stream: %v (read %d of %d)", err, read, info.State.Msgs)
		}
		tp, err := topic.ParseAgent(m.Subject())
		if err != nil {
			e.t.Fatal(err)
		}
		if tp.Type != topic.Control {
			continue // the stream also captures the display copies
		}
		out = append(out, stored{run: tp.Run, name: tp.Name, id: tp.EventID})
	}
	return out
}

// waitStops waits until the stream holds a StopEvent or ExceptionEvent for
// each of n runs.
func (e *crashEnv) waitStops(n int) {
	e.t.Helper()
	runs := map[string]bool{}
	e.waitControl([]string{"StopEvent", "ExceptionEvent"}, func(run string) bool {
		runs[run] = true
		return len(runs) >= n
	}, func() string { return fmt.Sprintf("%d of %d runs ended", len(runs), n) })
}

// waitControl reads the stream's control events named names, in order,
// until enough says, given each one's run, that they suffice; progress
// names what arrived when the wait fails.
func (e *crashEnv) waitControl(names []string, enough func(run string) bool, progress func() string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitLong)
	defer cancel()
	s, err := e.js.Stream(ctx, topic.StreamName(e.class))
	if err != nil {
		e.t.Fatal(err)
	}
	var filters []string
	for _, n := range names {
		filters = append(filters, "agent."+e.class+".*.*.*.*.control_event."+n+".*")
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: filters})
	if err != nil {
		e.t.Fatal(err)
	}
	for {
		m, err := c.Next(jetstream.FetchMaxWait(time.Until(deadlineOf(ctx))))
		if err != nil {
			e.t.Fatalf("%s: %v", progress(), err)
		}
		tp, _ := topic.ParseAgent(m.Subject())
		if enough(tp.Run) {
			return
		}
	}
}

// waitEntered waits until the replica p has entered the step or
// compensation name (its effect store records "entered_<name>"), failing
// if p exits first.
func (e *crashEnv) waitEntered(p *crashtest.Child, name string) {
	e.t.Helper()
	entered, err := e.effects.Watch(context.Background(), "entered_"+name)
	if err != nil {
		e.t.Fatal(err)
	}
	defer func() { _ = entered.Stop() }()
	timeout := time.After(waitLong)
	for {
		select {
		case kve := <-entered.Updates():
			if kve != nil && kve.Operation() == jetstream.KeyValuePut {
				return
			}
		case <-p.Done():
			e.t.Fatalf("the replica exited before entering %s: %s", name, p.Output())
		case <-timeout:
			e.t.Fatalf("%s was never entered", name)
		}
	}
}

func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

// waitSettled waits until the runner consumer has acknowledged every event.
func (e *crashEnv) waitSettled() { waitAcked(e.t, e.js, e.class) }

// effectCounts returns the side effects per step and the repeated attempts.
func (e *crashEnv) effectCounts() (effects map[string]int, dups int) {
	e.t.Helper()
	keys, err := e.effects.ListKeys(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	effects = map[string]int{}
	for k := range keys.Keys() {
		switch {
		case strings.HasPrefix(k, "dup_"):
			dups++
		case strings.HasPrefix(k, "entered_"):
		default:
			effects[k[:strings.IndexByte(k, '_')]]++
		}
	}
	return effects, dups
}

// markers returns how runs ended (their end as the store records it) from the state the replicas kept.
func (e *crashEnv) markers(runs []string) map[string]int {
	e.t.Helper()
	st, err := natskv.New(context.Background(), e.js, natskv.Config{})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range runs {
		v, ok, err := engine.RunEnd(context.Background(), st, store.RunKey{Class: e.class, Run: r})
		if err != nil {
			e.t.Fatal(err)
		}
		if !ok {
			v = "none"
		}
		out[v]++
	}
	return out
}

// TestScenario34_CrashMidStep is the crash-in-the-middle-of-a-step scenario
// with a real crash: a replica is killed with SIGKILL while a step runs; the
// trigger was not acknowledged, so a new replica gets it again, runs the
// step again, and the run completes. The step's side effect happens once.
func TestScenario34_CrashMidStep(t *testing.T) {
	e := newCrashEnv(t)
	first := e.replica("replica-1", envCrashBlock+"=Answer")

	c := client(t, e.srv.URL())
	run := newRun(e.class, "dev")
	publish(t, c, run, userMessage("hello"), nil)
	e.waitEntered(first, "Answer")
	first.Kill() // SIGKILL in the middle of Answer

	second := e.replica("replica-2")
	e.waitStops(1)
	e.waitSettled()
	if err := second.Stop(waitLong); err != nil {
		t.Errorf("replica-2 did not shut down cleanly: %v\n%s", err, second.Output())
	}

	evs := e.streamEvents()
	got := map[string]int{}
	for _, s := range evs {
		got[s.name]++
	}
	want := map[string]int{"UserMessageEvent": 1, "Asked": 1, "Answered": 1, "StopEvent": 1}
	for n, c := range want {
		if got[n] != c {
			t.Errorf("stream holds %d %s, want %d (all: %v)", got[n], n, c, got)
		}
	}
	if got["ExceptionEvent"] != 0 {
		t.Errorf("stream holds %d ExceptionEvents", got["ExceptionEvent"])
	}
	effects, dups := e.effectCounts()
	if effects["Ask"] != 1 || effects["Answer"] != 1 || effects["Finish"] != 1 {
		t.Errorf("side effects %v, want one per step", effects)
	}
	if dups != 1 {
		t.Errorf("%d repeated side effects, want 1 (the re-run of Answer)", dups)
	}
	if m := e.markers([]string{run.Run}); m[store.Completed] != 1 {
		t.Errorf("end markers %v, want the run completed", m)
	}
	t.Logf("crash mid-step: stream %v, effects %v, re-runs absorbed %d", got, effects, dups)
}

// TestCrashReplicasRandomKills runs 100 runs on two replicas while replicas
// are killed with SIGKILL at random moments and replaced. Every run must
// complete, every step's side effect must happen exactly once, and the
// stream must hold every event of every run exactly once.
func TestCrashReplicasRandomKills(t *testing.T) {
	const (
		runs  = 100
		kills = 6
	)
	e := newCrashEnv(t)
	work := envCrashWork + "=30ms"
	var mu sync.Mutex
	reps := []*crashtest.Child{e.replica("replica-a", work), e.replica("replica-b", work)}
	c := client(t, e.srv.URL())

	started := time.Now()
	ids := make([]string, runs)
	var pub sync.WaitGroup
	pub.Go(func() {
		for i := range runs {
			run := newRun(e.class, "dev")
			ids[i] = run.Run
			if err := publishErr(context.Background(), c, run, userMessage(fmt.Sprint("run ", i)), nil); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(20 * time.Millisecond) // spread the load over the kills
		}
	})

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 34))
	killed := 0
	for killed < kills {
		time.Sleep(time.Duration(200+rng.IntN(400)) * time.Millisecond) // random moment
		mu.Lock()
		i := rng.IntN(len(reps))
		reps[i].Kill()
		killed++
		reps[i] = e.replica(fmt.Sprintf("replica-%d", killed+1), work)
		mu.Unlock()
	}
	pub.Wait()
	if t.Failed() {
		return
	}
	e.waitStops(runs)
	e.waitSettled()
	elapsed := time.Since(started)
	for _, r := range reps {
		if err := r.Stop(waitLong); err != nil {
			t.Errorf("%s did not shut down cleanly: %v\n%s", r.Name, err, r.Output())
		}
	}

	evs := e.streamEvents()
	perRun := map[string]map[string]int{}
	seen := map[string]int{}
	for _, s := range evs {
		if perRun[s.run] == nil {
			perRun[s.run] = map[string]int{}
		}
		perRun[s.run][s.name]++
		seen[s.id]++
	}
	completed, lost, duplicated := 0, 0, 0
	for _, id := range ids {
		m := perRun[id]
		ok := m["UserMessageEvent"] == 1 && m["Asked"] == 1 && m["Answered"] == 1 && m["StopEvent"] == 1 && m["ExceptionEvent"] == 0
		if ok {
			completed++
			continue
		}
		for _, n := range []string{"UserMessageEvent", "Asked", "Answered", "StopEvent"} {
			switch {
			case m[n] == 0:
				lost++
			case m[n] > 1:
				duplicated += m[n] - 1
			}
		}
		t.Errorf("run %s: stream holds %v", id, m)
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("event %s stored %d times", id, n)
		}
	}
	effects, dups := e.effectCounts()
	for _, s := range []string{"Ask", "Answer", "Finish"} {
		if effects[s] != runs {
			t.Errorf("%d side effects of %s, want %d", effects[s], s, runs)
		}
	}
	markers := e.markers(ids)
	if markers[store.Completed] != runs {
		t.Errorf("end markers %v, want %d completed", markers, runs)
	}
	t.Logf("random kills: %d runs, %d kills, %d replicas in all, %v: completed %d, stream events %d (lost %d, duplicated %d), side effects %v, re-runs absorbed by idempotency keys %d, end markers %v",
		runs, killed, killed+2, elapsed.Round(time.Millisecond), completed, len(evs), lost, duplicated, effects, dups, markers)
}
