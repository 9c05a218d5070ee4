package agent_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// noSteps is an agent whose workflow cannot run.
type noSteps struct{}

func (noSteps) Steps() []*step.Step { return nil }

// dotted has a class name that is not a valid subject token.
type dotted struct{ linear }

func (*dotted) Class() string { return "my.agent" }

// pointerConfig returns its defaults as a pointer.
type pointerConfig struct{ linear }

func (p *pointerConfig) DefaultConfig() any { return &Settings{} }

func TestNewRejectsInvalidAgents(t *testing.T) {
	var nilLinear *linear
	cases := []struct {
		name string
		a    agent.Agent
		want string
	}{
		{"nil", nil, "nil agent"},
		{"nil pointer", nilLinear, "nil agent"},
		{"bad class", &dotted{linear{}}, "agent_class"},
		{"invalid workflow", noSteps{}, "noSteps"},
		{"pointer config", &pointerConfig{linear{class: "P"}}, "not a pointer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agent.New(tc.a)
			if !errors.Is(err, agent.ErrInvalidAgent) {
				t.Fatalf("New: %v, want ErrInvalidAgent", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	cases := map[string]agent.Option{
		"WithNATS":            agent.WithNATS(""),
		"WithBus":             agent.WithBus(nil),
		"WithDataDir":         agent.WithDataDir(""),
		"WithStore":           agent.WithStore(nil),
		"WithRedis":           agent.WithRedis(""),
		"WithLogger":          agent.WithLogger(nil),
		"WithTracerProvider":  agent.WithTracerProvider(nil),
		"WithShutdownTimeout": agent.WithShutdownTimeout(0),
		"WithConcurrency":     agent.WithConcurrency(-1),
		"WithAckWait":         agent.WithAckWait(time.Millisecond),
		"WithMaxDeliver":      agent.WithMaxDeliver(0),
		"OutageBudget":        agent.OutageBudget(-time.Second),
		"WithReplicas":        agent.WithReplicas(0),
	}
	for name, opt := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := agent.New(&linear{class: "Opt"}, opt)
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("New: %v, want an error naming %s", err, name)
			}
		})
	}
}

func TestClassOf(t *testing.T) {
	if got := agent.ClassOf(&linear{class: "Named"}); got != "Named" {
		t.Errorf("Classer: %q", got)
	}
	if got := agent.ClassOf(noSteps{}); got != "noSteps" {
		t.Errorf("type name: %q", got)
	}
}

// noExternal makes the runner ignore the external servers of CI.
func noExternal(t *testing.T) {
	t.Setenv("NATS_URL", "")
	t.Setenv("NATS_ENDPOINT", "")
	t.Setenv("REDIS_URL", "")
}

// TestRunEmbeddedDefault: with no configuration, Run starts its own
// nats-server, keeps state in JetStream KV, and leaves no goroutine behind.
func TestRunEmbeddedDefault(t *testing.T) {
	noExternal(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	class := uniqueClass("Default")
	var info agent.Info
	r, err := agent.New(&linear{class: class}, agent.Standalone(), quiet(t), agent.WithReady(func(i agent.Info) { info = i }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx) }()
	<-r.Ready()
	if !info.Embedded || info.Store != "jetstream-kv" || info.Class != class ||
		info.Stream != "agent_"+class+"_stream" || info.Consumer != "agent_runner_"+class {
		t.Errorf("Info %+v", info)
	}
	if r.Info() != info {
		t.Errorf("Runner.Info %+v, WithReady got %+v", r.Info(), info)
	}
	if err := r.Run(ctx); !errors.Is(err, agent.ErrAlreadyRunning) {
		t.Errorf("second Run: %v", err)
	}
	func() {
		c := client(t, info.NATSURL)
		defer func() { _ = c.Close() }()
		w := watch(t, c, class)
		run := newRun(class, "d")
		publish(t, c, run, userMessage("hi"), nil)
		if !event.IsStop(w.terminal(t, run.Run)) {
			t.Fatal("no StopEvent")
		}
	}()
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Run returned %v after cancel", err)
	}
}

// TestRunDataDirSurvivesRestart: with WithDataDir the embedded server keeps
// the stream and the state across restarts, and completed runs are not
// handled again.
func TestRunDataDirSurvivesRestart(t *testing.T) {
	noExternal(t)
	dir := t.TempDir()
	class := uniqueClass("Durable")
	var runs []string
	for i := range 2 {
		r := startRunner(t, &linear{class: class}, agent.WithDataDir(dir), agent.Standalone(), quiet(t))
		c := client(t, r.Info().NATSURL)
		w := watch(t, c, class)
		run := newRun(class, "d")
		runs = append(runs, run.Run)
		publish(t, c, run, userMessage("hi"), nil)
		if !event.IsStop(w.terminal(t, run.Run)) {
			t.Fatal("no StopEvent")
		}
		waitAcked(t, c.JetStream(), class)
		for _, id := range runs {
			if evs := controlEvents(t, c, class, id); len(evs) != 4 {
				t.Errorf("restart %d: run %s has %s in the stream, want 4 events", i, id, names(evs))
			}
		}
		_ = c.Close()
		if err := r.stop(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunNATSEndpointEnv: the reference's NATS_ENDPOINT joins that server.
func TestRunNATSEndpointEnv(t *testing.T) {
	noExternal(t)
	s := embedded(t)
	t.Setenv("NATS_ENDPOINT", s.URL())
	r := startRunner(t, &linear{class: uniqueClass("Endpoint")}, agent.Standalone(), quiet(t))
	if i := r.Info(); i.Embedded || i.NATSURL != s.URL() {
		t.Errorf("Info %+v, want the server of NATS_ENDPOINT", i)
	}
}

// TestRunRedisURLEnv: REDIS_URL keeps the run state in Redis.
func TestRunRedisURLEnv(t *testing.T) {
	url := redisURL(t)
	noExternal(t)
	t.Setenv("REDIS_URL", url)
	s := embedded(t)
	r := startRunner(t, &linear{class: uniqueClass("Redis")}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))
	if i := r.Info(); i.Store != "redis" {
		t.Errorf("Info %+v, want the Redis store", i)
	}
}

func redisURL(t *testing.T) string {
	u := os.Getenv("REDIS_URL")
	if u == "" {
		t.Skip("REDIS_URL not set: Redis tests skipped")
	}
	return u
}

// TestRunWithBus: a runner on a shared bus does not close it.
func TestRunWithBus(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("Shared")
	w := watch(t, c, class)
	r := startRunner(t, &linear{class: class}, agent.WithBus(c), agent.Standalone(), quiet(t))
	if i := r.Info(); i.NATSURL != "" || i.Embedded || i.Store != "jetstream-kv" {
		t.Errorf("Info %+v", i)
	}
	run := newRun(class, "s")
	publish(t, c, run, userMessage("hi"), nil)
	w.terminal(t, run.Run)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(context.Background(), &bus.Msg{Subject: "still.open", Data: []byte("x")}); err != nil {
		t.Errorf("the shared bus was closed by the runner: %v", err)
	}
}

// gated blocks its Answer step: until release is closed, or (hold) until
// its context ends.
type gated struct {
	linear
	entered chan string // run ids, as Answer starts
	release chan struct{}
	hold    bool
}

func (g *gated) Steps() []*step.Step {
	return []*step.Step{step.New(g.Ask), step.New(g.Answer), step.New(g.Finish)}
}

func (g *gated) Answer(ctx step.Context, a *Asked) (*Answered, error) {
	g.entered <- ctx.Run().RunID
	if g.hold {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	<-g.release
	return &Answered{Text: "late"}, nil
}

// TestShutdownLetsRunningStepsFinish: a step that is running when the
// runner is cancelled completes, publishes its output and its trigger is
// acknowledged before Run returns nil.
func TestShutdownLetsRunningStepsFinish(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("Graceful")
	g := &gated{linear: linear{class: class}, entered: make(chan string, 1), release: make(chan struct{})}
	stopping := make(chan struct{})
	r := startRunner(t, g, agent.WithNATS(s.URL()), agent.Standalone(), signalOn(t, "agent runner stopping", stopping))
	run := newRun(class, "g")
	publish(t, c, run, userMessage("hi"), nil)
	<-g.entered

	stopped := make(chan error, 1)
	go func() { stopped <- r.stop() }()
	<-stopping // the shutdown has begun while the step runs
	close(g.release)
	if err := <-stopped; err != nil {
		t.Fatalf("Run: %v", err)
	}
	evs := controlEvents(t, c, class, run.Run)
	if count(evs, "Answered") != 1 {
		t.Fatalf("stream %s, want the Answered of the step that was running", names(evs))
	}
	// Its trigger was acknowledged; the Answered waits for the next runner.
	asked := seqOf(t, c, run, "Asked")
	waitConsumer(t, c.JetStream(), class, "past the Asked", func(i *jetstream.ConsumerInfo) bool {
		return i.AckFloor.Stream >= asked
	})
	if n := count(controlEvents(t, c, class, run.Run), "StopEvent"); n != 0 {
		t.Errorf("%d StopEvents: the runner took new events after the shutdown began", n)
	}
}

// TestShutdownHandsBackAfterTimeout: a step still running at the shutdown
// deadline is cancelled, its trigger handed back, and another runner
// completes the run; the run is not failed by the shutdown.
func TestShutdownHandsBackAfterTimeout(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("HandBack")
	w := watch(t, c, class)
	g := &gated{linear: linear{class: class}, entered: make(chan string, 1), hold: true}
	r := startRunner(t, g, agent.WithNATS(s.URL()), agent.Standalone(), agent.WithShutdownTimeout(200*time.Millisecond), quiet(t))
	run := newRun(class, "h")
	publish(t, c, run, userMessage("hi"), nil)
	<-g.entered
	if err := r.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}

	startRunner(t, &linear{class: class}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))
	term := w.terminal(t, run.Run)
	if !event.IsStop(term) {
		t.Fatalf("terminal %s, want StopEvent: the shutdown must not fail the run", names(w.of(run.Run)))
	}
	if n := count(controlEvents(t, c, class, run.Run), "ExceptionEvent"); n != 0 {
		t.Errorf("%d ExceptionEvents in the stream", n)
	}
}

// counting counts executions per (run, step) across replicas.
type counting struct {
	linear
	mu   *sync.Mutex
	seen map[string]int
}

func (c *counting) Steps() []*step.Step {
	return []*step.Step{step.New(c.Ask), step.New(c.Answer), step.New(c.Finish)}
}

func (c *counting) note(ctx step.Context, s string) {
	c.mu.Lock()
	c.seen[ctx.Run().RunID+"/"+s]++
	c.mu.Unlock()
}

func (c *counting) Ask(ctx step.Context, m *event.UserMessageEvent) (*Asked, error) {
	c.note(ctx, "ask")
	return c.linear.Ask(ctx, m)
}

func (c *counting) Answer(ctx step.Context, a *Asked) (*Answered, error) {
	c.note(ctx, "answer")
	return c.linear.Answer(ctx, a)
}

func (c *counting) Finish(ctx step.Context, a *Answered) (*event.StopEvent, error) {
	c.note(ctx, "finish")
	return c.linear.Finish(ctx, a)
}

// TestReplicasShareTheWork: three replicas on one queue group complete 60
// runs, each step once per run, with no coordination beyond NATS and the
// store.
func TestReplicasShareTheWork(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		c := client(t, tg.natsURL)
		class := uniqueClass("Scale")
		dropStream(t, c, class)
		store := storeFor(t, tg, c)
		w := watch(t, c, class)
		var mu sync.Mutex
		seen := map[string]int{}
		for range 3 {
			startRunner(t, &counting{linear{class: class}, &mu, seen}, agent.WithNATS(tg.natsURL), store, agent.Standalone(), quiet(t))
		}
		const runs = 60
		ids := make([]string, runs)
		for i := range runs {
			run := newRun(class, "s")
			ids[i] = run.Run
			publish(t, c, run, userMessage("hi"), nil)
		}
		for _, id := range ids {
			if !event.IsStop(w.terminal(t, id)) {
				t.Fatalf("run %s did not stop", id)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			for _, s := range []string{"ask", "answer", "finish"} {
				if n := seen[id+"/"+s]; n != 1 {
					t.Errorf("run %s: %s ran %d times", id, s, n)
				}
			}
		}
	})
}

// TestPoisonMessageIsDeadLettered: a control message that does not decode is
// terminated and kept on the dead-letter subject with the reason; the
// runner goes on.
func TestPoisonMessageIsDeadLettered(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("Poison")
	w := watch(t, c, class)
	startRunner(t, &linear{class: class}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))

	letters := deadLetterFeed(t, c)

	run := newRun(class, "p")
	subject, _ := run.Event(topic.Control, "UserMessageEvent", event.NewID()).Subject()
	if _, err := c.PublishStream(context.Background(), &bus.Msg{Subject: subject, Data: []byte("{not json")}, "poison-1"); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-letters:
		if m.Subject != bus.DefaultDeadLetters().Subject(subject) || string(m.Data) != "{not json" {
			t.Errorf("dead letter %q %q", m.Subject, m.Data)
		}
	case <-time.After(waitLong):
		t.Fatal("no dead letter")
	}
	ok := newRun(class, "p")
	publish(t, c, ok, userMessage("hi"), nil)
	if !event.IsStop(w.terminal(t, ok.Run)) {
		t.Fatal("the runner stopped working after a poison message")
	}
}

// slow is the linear agent whose Answer step outlasts the AckWait.
type slow struct {
	counting
	d time.Duration
}

func (s *slow) Steps() []*step.Step {
	return []*step.Step{step.New(s.Ask), step.New(s.Answer), step.New(s.Finish)}
}

func (s *slow) Answer(ctx step.Context, a *Asked) (*Answered, error) {
	out, err := s.counting.Answer(ctx, a) // counts the execution as it starts
	time.Sleep(s.d)                       // simulated long work (an LLM call)
	return out, err
}

// TestLongStepHeartbeats: a step that runs longer than the consumer's
// AckWait is not redelivered while it runs (in-progress heartbeats): it
// executes once and the run completes.
func TestLongStepHeartbeats(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("Slow")
	w := watch(t, c, class)
	var mu sync.Mutex
	seen := map[string]int{}
	a := &slow{counting: counting{linear{class: class}, &mu, seen}, d: 2500 * time.Millisecond}
	// Two replicas, so a redelivery would find a taker at once.
	for range 2 {
		startRunner(t, a, agent.WithNATS(s.URL()), agent.Standalone(), agent.WithAckWait(time.Second), quiet(t))
	}
	run := newRun(class, "slow")
	publish(t, c, run, userMessage("hi"), nil)
	if !event.IsStop(w.terminal(t, run.Run)) {
		t.Fatalf("terminal %s", names(w.of(run.Run)))
	}
	mu.Lock()
	defer mu.Unlock()
	if n := seen[run.Run+"/answer"]; n != 1 {
		t.Errorf("the long step started %d times, want 1 (redelivered while it ran)", n)
	}
	info, err := mustConsumer(t, c, class).Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Delivered.Consumer > 4 {
		t.Errorf("%d deliveries for the run's 4 control events", info.Delivered.Consumer)
	}
}

func mustConsumer(t *testing.T, c *natsbus.Bus, class string) jetstream.Consumer {
	t.Helper()
	cons, err := c.JetStream().Consumer(context.Background(), topic.StreamName(class), "agent_runner_"+class)
	if err != nil {
		t.Fatal(err)
	}
	return cons
}

// TestRunFailsFastOnUnreachableServers: Run returns an error naming what it
// could not reach, instead of serving nothing.
func TestRunFailsFastOnUnreachableServers(t *testing.T) {
	noExternal(t)
	s := embedded(t)
	cases := []struct {
		name string
		opts []agent.Option
		want string
	}{
		{"nats", []agent.Option{agent.WithNATS("nats://127.0.0.1:1")}, "127.0.0.1:1"},
		{"redis", []agent.Option{agent.WithNATS(s.URL()), agent.WithRedis("redis://127.0.0.1:1/0")}, "Redis"},
		{"redis url", []agent.Option{agent.WithNATS(s.URL()), agent.WithRedis("http://nope")}, "REDIS_URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitLong)
			defer cancel()
			err := agent.Run(ctx, &linear{class: uniqueClass("Fail")}, append(tc.opts, agent.Standalone(), quiet(t))...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// peak records the most executions of Answer running at once.
type peak struct {
	linear
	mu        sync.Mutex
	now, most int
}

func (p *peak) Steps() []*step.Step {
	return []*step.Step{step.New(p.Ask), step.New(p.Answer), step.New(p.Finish)}
}

func (p *peak) Answer(ctx step.Context, a *Asked) (*Answered, error) {
	p.mu.Lock()
	p.now++
	p.most = max(p.most, p.now)
	p.mu.Unlock()
	time.Sleep(20 * time.Millisecond) // simulated work, so executions would overlap
	p.mu.Lock()
	p.now--
	p.mu.Unlock()
	return p.linear.Answer(ctx, a)
}

// TestWithConcurrencyBoundsEventsInHand: with WithConcurrency(1) a replica
// handles one control event at a time.
func TestWithConcurrencyBoundsEventsInHand(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("Serial")
	w := watch(t, c, class)
	p := &peak{linear: linear{class: class}}
	startRunner(t, p, agent.WithNATS(s.URL()), agent.Standalone(), agent.WithConcurrency(1), quiet(t))
	var ids []string
	for range 8 {
		run := newRun(class, "c")
		ids = append(ids, run.Run)
		publish(t, c, run, userMessage("hi"), nil)
	}
	for _, id := range ids {
		w.terminal(t, id)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.most != 1 {
		t.Errorf("%d executions ran at once, want 1", p.most)
	}
}
