package agent_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/crashtest"
	"github.com/saap-go/agent/topic"
)

const envAITLWorker = "SAAP_CRASH_AITL_WORKER"

func init() { helperModes["aitlcaller"] = aitlCallerMain }

// aitlCallerMain is the helper process: the orchestrator of class
// SAAP_CRASH_CLASS delegating to SAAP_CRASH_AITL_WORKER.
func aitlCallerMain() int {
	url, class, worker := os.Getenv(envCrashURL), os.Getenv(envCrashClass), os.Getenv(envAITLWorker)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err := agent.Run(ctx, &orchestrator{class: class, worker: worker},
		agent.WithNATS(url), agent.Standalone(), agent.Discoverable(false),
		agent.WithAckWait(crashAckWait), agent.WithShutdownTimeout(5*time.Second), agent.WithLogger(log),
		agent.WithReady(func(agent.Info) { crashtest.Ready() }))
	if err != nil {
		fmt.Fprintln(os.Stderr, "Run:", err)
		return 1
	}
	return 0
}

// TestCrashAITLCallerKilled: the caller of a delegation is killed with
// SIGKILL while the delegate works; the delegate answers while no caller
// runs; after a restart the caller's run completes with the delegate's
// answer, once.
func TestCrashAITLCallerKilled(t *testing.T) {
	e := newCrashEnv(t)
	worker := uniqueClass("RefWorker")
	c := client(t, e.srv.URL())
	d := startRefDelegate(t, c, worker, func(*bus.Msg, topic.Agent) (string, []byte) { return "", nil })
	env := []string{envCrashURL + "=" + e.srv.URL(), envCrashClass + "=" + e.class, envAITLWorker + "=" + worker, "REDIS_URL="}
	ready := func(ch *crashtest.Child) {
		ctx, cancel := context.WithTimeout(context.Background(), waitLong)
		defer cancel()
		ch.WaitReady(ctx)
	}
	first := crashtest.Start(t, "caller-1", "aitlcaller", env...)
	ready(first)

	run := newRun(e.class, "boss")
	publish(t, c, run, userMessage("8"), nil)
	start := d.next(t)
	first.Kill() // the delegate is at work; its caller dies

	tp, err := topic.ParseAgent(start.Subject)
	if err != nil {
		t.Fatal(err)
	}
	id := event.NewID()
	subj, _ := tp.Event(topic.Control, "WorkerDoneStop", id).Subject()
	if _, err := c.PublishStream(context.Background(), &bus.Msg{Subject: subj, Data: []byte(strings.Replace(refStop, "EVENT_ID", id, 1))}, id); err != nil {
		t.Fatal(err)
	}

	second := crashtest.Start(t, "caller-2", "aitlcaller", env...)
	ready(second)
	done := awaitControl(t, c, run, "Result")
	if len(controlEventsNamed(t, c, run, "Result")) == 0 {
		select {
		case <-done:
		case <-second.Done():
			t.Fatalf("caller-2 exited: %s", second.Output())
		case <-time.After(waitLong):
			t.Fatalf("the caller run never completed after the restart; events %s", names(controlEvents(t, c, e.class, run.Run)))
		}
	}
	if err := second.Stop(waitLong); err != nil {
		t.Errorf("caller-2 did not shut down cleanly: %v\n%s", err, second.Output())
	}
	evs := controlEvents(t, c, e.class, run.Run)
	if count(evs, "AgentInTheLoopRequestEvent") != 1 || count(evs, "AgentInTheLoopResponseEvent") != 1 || count(evs, "Result") != 1 {
		t.Errorf("caller run after the crash: %s, want one request, one response, one Result", names(evs))
	}
	for _, ev := range evs {
		if r, ok := ev.(*Result); ok && r.From != "WorkerDoneStop" {
			t.Errorf("Result from %q, want the delegate's WorkerDoneStop", r.From)
		}
	}
	d.mu.Lock()
	starts := len(d.starts)
	d.mu.Unlock()
	t.Logf("AITL caller killed: caller events %s, delegate started %d time(s)", names(evs), starts)
}

func controlEventsNamed(t *testing.T, b bus.Bus, run topic.Agent, name string) []event.Event {
	var out []event.Event
	for _, ev := range controlEvents(t, b, run.Class, run.Run) {
		if event.Name(ev) == name {
			out = append(out, ev)
		}
	}
	return out
}
