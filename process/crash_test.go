package process_test

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/crashtest"
	"github.com/saap-go/agent/process"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store/natskv"
	"github.com/saap-go/agent/topic"
)

func TestMain(m *testing.M) {
	crashtest.Main(map[string]func() int{"runner": crashRunner})
	os.Exit(m.Run())
}

const inStepSubject = "processtest.instep"

// crashRunner is the child: the Onboarding runner and its agent delegator.
// With PROC_BLOCK set, the Checked step announces itself and never returns,
// so the parent can kill the child in the middle of it.
func crashRunner() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	b, err := natsbus.Connect(natsbus.Config{URL: os.Getenv("PROC_NATS_URL")})
	if err != nil {
		log.Error("connect", "error", err)
		return 1
	}
	defer b.Close()
	st, err := natskv.New(ctx, b.JetStream(), natskv.Config{Bucket: os.Getenv("PROC_BUCKET"), TTL: time.Hour})
	if err != nil {
		log.Error("store", "error", err)
		return 1
	}
	p := onboardingProcess()
	if os.Getenv("PROC_BLOCK") != "" {
		var o onboarding
		checked := step.New(func(sctx step.Context, d *DocumentChecked) (step.Either[*ApproveRequest, *Rejected], error) {
			_ = b.Publish(sctx, &bus.Msg{Subject: inStepSubject, Data: []byte("in step")})
			<-make(chan struct{}) // killed here
			return o.Checked(sctx, d)
		}, step.Name("Checked"))
		p.Steps = []*step.Step{step.New(o.Begin), checked, step.New(o.Approved), step.New(o.Created)}
	}
	err = process.Run(ctx, p, process.WithBus(b), process.WithStore(st), process.WithLogger(log),
		process.WithAckWait(2*time.Second), process.WithConfigTimeout(time.Second),
		process.WithReady(func(process.Info) { crashtest.Ready() }))
	if err != nil {
		log.Error("run", "error", err)
		return 1
	}
	return 0
}

// TestCrash kills the runner and its agent delegator twice during one
// walkthrough: once while the agent works (its stop arrives while no
// delegator runs), once in the middle of a step. After each restart the
// walkthrough goes on, and in the end every event of it is in the stream
// once.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	env := newNATS(t, t.TempDir())
	url := env.srv.URL()
	bucket := "processcrash"
	childEnv := []string{"PROC_NATS_URL=" + url, "PROC_BUCKET=" + bucket}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	out := feed(t, env.b, "process.Onboarding.>")
	agents := feed(t, env.b, "agent.DocChecker.*.*.*.*.control_event.CheckStart.*")
	inStep := feed(t, env.b, inStepSubject)

	a := crashtest.Start(t, "runner-a", "runner", childEnv...)
	a.WaitReady(ctx)
	walk := "6650f0c2a1b2c3d4e5f607a0"
	pub(t, env.b, "process.Onboarding.acme."+walk+".work.Application.6650f0c2a1b2c3d4e5f60701",
		readFile(t, "in-application-start.json"))
	start := next(t, agents, ".CheckStart.")
	a.Kill() // the agent's run is open; nobody waits for it now

	at, err := topic.ParseAgent(start.Subject)
	if err != nil {
		t.Fatal(err)
	}
	at.Name, at.EventID = "CheckStop", "6650f0c2a1b2c3d4e5f60702"
	subj, _ := at.Subject()
	pub(t, env.b, subj, readFile(t, "in-agent-stop.json"))

	b := crashtest.Start(t, "runner-b", "runner", append(childEnv, "PROC_BLOCK=1")...)
	b.WaitReady(ctx)
	next(t, inStep, inStepSubject) // the agent's work came back; Checked runs
	b.Kill()

	c := crashtest.Start(t, "runner-c", "runner", childEnv...)
	c.WaitReady(ctx)
	hreq := next(t, out, ".work_request.ApproveRequest.")

	st, err := natskv.New(ctx, env.b.JetStream(), natskv.Config{Bucket: bucket, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := process.NewSubmitter(env.b, st, onboardingProcess())
	if err != nil {
		t.Fatal(err)
	}
	ht, _ := topic.ParseProcess(hreq.Subject)
	ap := &Approval{Approved: true}
	ap.InResponseTo = &ht.EventID
	if err := sub.Submit(ctx, "Onboarding", "acme", walk, ap, manager); err != nil {
		t.Fatal(err)
	}
	preq := next(t, out, ".work_request.CreateAccount.")
	pt, _ := topic.ParseProcess(preq.Subject)
	ac := &AccountCreated{Account: "acc-1"}
	ac.InResponseTo = &pt.EventID
	if err := sub.Submit(ctx, "Onboarding", "acme", walk, ac, program); err != nil {
		t.Fatal(err)
	}
	next(t, out, ".work.Onboarded.")
	if err := c.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	counts := countNames(t, env.b, topic.ProcessStreamName("Onboarding"), "process.Onboarding.*."+walk+".*.*.*")
	want := map[string]int{"Application": 1, "CheckDocument": 1, "DocumentChecked": 1, "ApproveRequest": 1,
		"Approval": 1, "CreateAccount": 1, "AccountCreated": 1, "Onboarded": 1}
	for n, k := range want {
		if counts[n] != k {
			t.Errorf("%s stored %d times, want %d (all: %v)", n, counts[n], k, counts)
		}
	}
	if len(counts) != len(want) {
		t.Errorf("stream holds %v", counts)
	}
	starts := countNames(t, env.b, topic.StreamName("DocChecker"), "agent.DocChecker.>")
	if starts["CheckStart"] != 1 {
		t.Errorf("the agent was started %d times", starts["CheckStart"])
	}
}

// countNames counts the messages of stream matching filter by event name.
func countNames(t *testing.T, b bus.Bus, stream, filter string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for seq := uint64(1); ; {
		m, err := b.NextMsg(context.Background(), stream, filter, seq)
		if err != nil {
			break
		}
		seq = m.Seq + 1
		e, err := event.Unmarshal(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		counts[event.Name(e)]++
	}
	return counts
}
