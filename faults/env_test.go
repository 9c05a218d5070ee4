package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// agentProc is the agent under test, restarted whenever it exits unless
// the test stopped it, as a process supervisor would.
type agentProc struct {
	t    *testing.T
	bin  string
	env  []string
	name string

	// restartDelay is how long the agent stays down after an exit.
	restartDelay time.Duration

	mu       sync.Mutex
	p        *proc
	stopping bool
	exits    []int   // exit codes of the processes that ended on their own
	all      []*proc // every process started, for the output of a failed test
	wg       sync.WaitGroup
}

// startAgent starts the agent binary with env and waits until it takes
// events.
func startAgent(t *testing.T, name string, env ...string) *agentProc {
	t.Helper()
	return startAgentDelay(t, name, 0, env...)
}

// startAgentDelay is startAgent with a pause before each restart.
func startAgentDelay(t *testing.T, name string, restartDelay time.Duration, env ...string) *agentProc {
	t.Helper()
	a := &agentProc{t: t, bin: filepath.Join(bins(t), "faultagent"), env: env, name: name, restartDelay: restartDelay}
	p, err := a.spawn(1)
	if err != nil {
		t.Fatal(err)
	}
	a.p = p
	t.Cleanup(a.stop)
	p.waitReady(t)
	a.wg.Add(1)
	go a.supervise()
	return a
}

func (a *agentProc) spawn(n int) (*proc, error) {
	p, err := newProc(fmt.Sprintf("%s#%d", a.name, n), "FAULTAGENT_READY", a.env, a.bin)
	if err == nil {
		a.all = append(a.all, p)
	}
	return p, err
}

func (a *agentProc) supervise() {
	defer a.wg.Done()
	for n := 2; ; n++ {
		a.mu.Lock()
		p := a.p
		a.mu.Unlock()
		<-p.done
		a.mu.Lock()
		if a.stopping {
			a.mu.Unlock()
			return
		}
		a.exits = append(a.exits, p.exitCode())
		a.mu.Unlock()
		time.Sleep(a.restartDelay) // the time the agent is down
		a.mu.Lock()
		if a.stopping {
			a.mu.Unlock()
			return
		}
		np, err := a.spawn(n)
		if err != nil {
			a.mu.Unlock()
			a.t.Errorf("restarting the agent: %v", err)
			return
		}
		a.p = np
		a.mu.Unlock()
	}
}

// stop ends the agent (SIGTERM) and the supervision, and shows the
// output of every process of the agent if the test failed.
func (a *agentProc) stop() {
	a.mu.Lock()
	a.stopping = true
	p := a.p
	a.mu.Unlock()
	select {
	case <-p.done: // killed for good already
	default:
		if err := p.stop(20 * time.Second); err != nil {
			a.t.Logf("%s: %v", a.name, err)
		}
	}
	a.wg.Wait()
	if a.t.Failed() {
		for _, p := range a.all {
			a.t.Logf("output of %s (last 4 KiB):\n%s", p.name, p.tail(4096))
		}
	}
}

// exited returns the exit codes of the processes that ended on their own.
func (a *agentProc) exited() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]int(nil), a.exits...)
}

// env is one scenario's world: a NATS server process, the agent's class,
// its effects directory and the test's own client connection.
type env struct {
	t       *testing.T
	nats    *natsd
	class   string
	effects string
	nc      *nats.Conn
	js      jetstream.JetStream
	runs    []topic.Agent
	// expectDead are runs, not among runs, whose events must be
	// dead-lettered: check waits for their dead letters too.
	expectDead []string
}

func newEnv(t *testing.T, o natsOpts) *env {
	t.Helper()
	n := startNATS(t, o)
	e := &env{t: t, nats: n, class: "Fault_" + event.NewID()[14:], effects: t.TempDir()}
	e.connect()
	return e
}

// connect opens the test's client; it reconnects forever, across server
// restarts.
func (e *env) connect(opts ...nats.Option) {
	e.t.Helper()
	opts = append([]nats.Option{nats.Name("faults-test"), nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}, opts...)
	nc, err := nats.Connect(e.nats.url, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		e.t.Fatal(err)
	}
	e.nc, e.js = nc, js
}

// agentEnv is the agent's environment for this scenario, plus extra.
func (e *env) agentEnv(extra ...string) []string {
	return append([]string{
		"FAULT_NATS_URL=" + e.nats.url,
		"FAULT_CLASS=" + e.class,
		"FAULT_EFFECTS_DIR=" + e.effects,
		"NATS_URL=", "NATS_ENDPOINT=", "REDIS_URL=",
	}, extra...)
}

// newRun returns the topic of a fresh run with ObjectId ids.
func (e *env) newRun() topic.Agent {
	return topic.Agent{Class: e.class, ID: "faults", Thread: event.NewID(), Display: event.NewID(), Run: event.NewID()}
}

// start publishes a UserMessageEvent with text into run, as the gateway
// would, retrying until the stream acknowledges it (the server may be
// down): the event id is the msg id, so a retry is stored once.
func (e *env) start(run topic.Agent, text string) {
	e.t.Helper()
	e.runs = append(e.runs, run)
	e.publishStart(run, text)
}

// publishStart publishes the start of run without counting it among the
// runs that must end.
func (e *env) publishStart(run topic.Agent, text string) {
	e.t.Helper()
	ev := &event.UserMessageEvent{
		User:     &event.UserIdentity{ID: "u1", Name: "Ursula", Email: "u@example.com", Roles: []string{"user"}},
		Messages: []event.ChatMessage{event.Text(event.RoleUser, text)},
	}
	event.Stamp(ev)
	data, err := event.Marshal(ev)
	if err != nil {
		e.t.Fatal(err)
	}
	id := ev.EventBase().EventID
	subj := run.Event(topic.Control, event.Name(ev), id).String()
	deadline := time.Now().Add(waitLong)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := e.js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: data}, jetstream.WithMsgID(id))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("publishing the start of run %s: %v", run.Run, err)
		}
		time.Sleep(100 * time.Millisecond) // retry pause while the server is away
	}
}

// effects counts the Work step's side effects and re-runs, per run.
func (e *env) workEffects() (effects, reruns map[string]int) {
	e.t.Helper()
	ents, err := os.ReadDir(e.effects)
	if err != nil {
		e.t.Fatal(err)
	}
	effects, reruns = map[string]int{}, map[string]int{}
	for _, d := range ents {
		f := strings.Split(d.Name(), "_")
		if len(f) < 4 {
			continue
		}
		switch f[0] {
		case "effect":
			effects[f[2]]++
		case "rerun":
			reruns[f[2]]++
		}
	}
	return effects, reruns
}

// ensureStream creates the class's stream as the runner would, with a
// given duplicate window, before the agent starts (the runner keeps an
// existing stream as it is).
func (e *env) ensureStream(dupWindow time.Duration) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	_, err := e.js.CreateStream(ctx, jetstream.StreamConfig{
		Name:       topic.StreamName(e.class),
		Subjects:   []string{topic.StreamSubject(e.class)},
		Storage:    jetstream.FileStorage,
		Retention:  jetstream.LimitsPolicy,
		Discard:    jetstream.DiscardOld,
		MaxMsgs:    bus.AgentStreamMaxMsgs,
		MaxAge:     bus.AgentStreamMaxAge,
		Duplicates: dupWindow,
	})
	if err != nil {
		e.t.Fatal(err)
	}
}
