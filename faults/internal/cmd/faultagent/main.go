// Command faultagent is the agent under test of the fault suite, run as a
// separate process. Its class has three steps: Begin (UserMessageEvent →
// Begun), Work (Begun → Worked, records a side effect through the step's
// idempotency key) and Finish (Worked → StopEvent).
//
// The user message's text picks a behaviour of Work:
//
//	"poison"  the process exits in the middle of the step, every time
//	"big:N"   the output carries N bytes of text
//	"fail"    the step fails, every time (see FAULT_RETRY_ATTEMPTS); each
//	          attempt leaves a file attempt_<run>_<n>
//	anything else: a small output
//
// Environment:
//
//	FAULT_NATS_URL       the NATS server (required); NATS_NKEY_SEED etc. apply
//	FAULT_CLASS          the agent class (required)
//	FAULT_EFFECTS_DIR    where side effects are recorded, one file each (required)
//	FAULT_REDIS_URL      keep run state in Redis instead of JetStream KV
//	FAULT_ACK_WAIT       the runner consumer's AckWait (default 2s)
//	FAULT_MAX_DELIVER    the runner consumer's MaxDeliver (default: the runner's, unlimited)
//	FAULT_OUTAGE_BUDGET  the runner's outage budget (default: the runner's, 10 minutes)
//	FAULT_DISCOVERABLE   "1": answer the gateway's class discovery
//	FAULT_REPLICAS       copies of the streams and KV buckets it creates (default 1)
//	FAULT_RETRY_ATTEMPTS Work's retry policy: this many attempts, 200 ms apart
//	                     (default: no policy)
//	FAULT_KILL_AT_ATTEMPT the process SIGKILLs itself in the middle of this
//	                     attempt of a "fail" run (once: a marker file remembers it)
//	FAULT_EXIT_RUN       exit at once after publishing Work's output of this
//	                     run, before the claim's completion is recorded (once:
//	                     a marker file in FAULT_EFFECTS_DIR remembers it)
//
// It prints "FAULTAGENT_READY" once it takes events. It exits 0 after
// SIGTERM, 1 when Run fails or returns on its own.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/retry"
	"github.com/saap-go/agent/step"
	_ "github.com/saap-go/agent/store/redis" // REDIS_URL keeps the agent's state in Redis
	"github.com/saap-go/agent/topic"
)

// Events of the fault agent.
type (
	// Begun is Begin's output.
	Begun struct {
		event.ControlEvent
		Text string `json:"text"`
	}
	// Worked is Work's output.
	Worked struct {
		event.ControlEvent
		Text string `json:"text"`
	}
)

func init() {
	event.MustRegister[Begun]()
	event.MustRegister[Worked]()
}

// Exit statuses.
const (
	exitRunFailed = 1
	exitPoison    = 3
	exitAfterPub  = 4
)

func main() { os.Exit(run()) }

func run() int {
	url, class, dir := os.Getenv("FAULT_NATS_URL"), os.Getenv("FAULT_CLASS"), os.Getenv("FAULT_EFFECTS_DIR")
	if url == "" || class == "" || dir == "" {
		fmt.Fprintln(os.Stderr, "faultagent: FAULT_NATS_URL, FAULT_CLASS and FAULT_EFFECTS_DIR are required")
		return 2
	}
	ackWait, err := durationEnv("FAULT_ACK_WAIT", 2*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultagent:", err)
		return 2
	}
	maxDeliver := agent.DefaultMaxDeliver
	if v := os.Getenv("FAULT_MAX_DELIVER"); v != "" {
		if maxDeliver, err = strconv.Atoi(v); err != nil {
			fmt.Fprintln(os.Stderr, "faultagent: FAULT_MAX_DELIVER:", err)
			return 2
		}
	}
	budget, err := durationEnv("FAULT_OUTAGE_BUDGET", agent.DefaultOutageBudget)
	if err != nil {
		fmt.Fprintln(os.Stderr, "faultagent:", err)
		return 2
	}
	replicas := 1
	if v := os.Getenv("FAULT_REPLICAS"); v != "" {
		if replicas, err = strconv.Atoi(v); err != nil {
			fmt.Fprintln(os.Stderr, "faultagent: FAULT_REPLICAS:", err)
			return 2
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := []agent.Option{
		agent.Standalone(),
		agent.Discoverable(os.Getenv("FAULT_DISCOVERABLE") == "1"),
		agent.WithAckWait(ackWait),
		agent.WithMaxDeliver(maxDeliver),
		agent.OutageBudget(budget),
		agent.WithReplicas(replicas),
		agent.WithShutdownTimeout(5 * time.Second),
		agent.WithLogger(log),
		agent.WithReady(func(agent.Info) { fmt.Println("FAULTAGENT_READY") }),
	}
	if r := os.Getenv("FAULT_REDIS_URL"); r != "" {
		opts = append(opts, agent.WithRedis(r))
	}
	if exitRun := os.Getenv("FAULT_EXIT_RUN"); exitRun != "" {
		// The crash point sits between the bus and the engine, so the
		// runner gets a bus it does not own.
		cfg, err := natsbus.ConfigFromEnv()
		if err != nil {
			fmt.Fprintln(os.Stderr, "faultagent:", err)
			return 2
		}
		cfg.URL, cfg.Name, cfg.Logger = url, "saap-agent "+class, log
		b, err := natsbus.Connect(cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "faultagent:", err)
			return exitRunFailed
		}
		defer b.Close()
		opts = append(opts, agent.WithBus(&exitingBus{Bus: b, run: exitRun, marker: filepath.Join(dir, "exited_after_publish")}))
	} else {
		opts = append(opts, agent.WithNATS(url))
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	a := &faultAgent{class: class, dir: dir}
	if v := os.Getenv("FAULT_RETRY_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, "faultagent: FAULT_RETRY_ATTEMPTS:", err)
			return 2
		}
		a.retry = &retry.Policy{MaxAttempts: n, InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 1}
	}
	if v := os.Getenv("FAULT_KILL_AT_ATTEMPT"); v != "" {
		if a.killAt, err = strconv.Atoi(v); err != nil {
			fmt.Fprintln(os.Stderr, "faultagent: FAULT_KILL_AT_ATTEMPT:", err)
			return 2
		}
	}
	if err := agent.Run(ctx, a, opts...); err != nil {
		fmt.Fprintln(os.Stderr, "faultagent: Run:", err)
		return exitRunFailed
	}
	if ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "faultagent: Run returned without being stopped")
		return exitRunFailed
	}
	return 0
}

func durationEnv(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

type faultAgent struct {
	class  string
	dir    string
	retry  *retry.Policy
	killAt int
}

func (a *faultAgent) Class() string { return a.class }

func (a *faultAgent) Steps() []*step.Step {
	var work []step.Option
	if a.retry != nil {
		work = append(work, step.Retry(*a.retry))
	}
	return []*step.Step{step.New(a.Begin), step.New(a.Work, work...), step.New(a.Finish)}
}

// Begin passes the user's text on.
func (a *faultAgent) Begin(ctx step.Context, m *event.UserMessageEvent) (*Begun, error) {
	text := ""
	if len(m.Messages) > 0 {
		text = m.Messages[len(m.Messages)-1].Content()
	}
	return &Begun{Text: text}, nil
}

// Work records its side effect once per idempotency key; a repeat leaves a
// "rerun" file instead, so the test can count executions.
func (a *faultAgent) Work(ctx step.Context, b *Begun) (*Worked, error) {
	if err := a.effect(ctx, "Work"); err != nil {
		return nil, err
	}
	switch {
	case b.Text == "fail":
		return nil, a.fail(ctx)
	case b.Text == "poison":
		fmt.Fprintln(os.Stderr, "faultagent: poison event, exiting mid-step")
		os.Exit(exitPoison)
	case strings.HasPrefix(b.Text, "big:"):
		n, err := strconv.Atoi(strings.TrimPrefix(b.Text, "big:"))
		if err != nil {
			return nil, fmt.Errorf("bad size in %q: %w", b.Text, err)
		}
		return &Worked{Text: strings.Repeat("x", n)}, nil
	}
	return &Worked{Text: "done"}, nil
}

// Finish ends the run.
func (a *faultAgent) Finish(ctx step.Context, w *Worked) (*event.StopEvent, error) {
	return &event.StopEvent{}, nil
}

// fail records an attempt of a failing Work and returns its error; at
// attempt killAt it kills the process instead, once.
func (a *faultAgent) fail(ctx step.Context) error {
	prefix := filepath.Join(a.dir, "attempt_"+ctx.Run().RunID+"_")
	n := 1
	for ; ; n++ {
		f, err := os.OpenFile(prefix+strconv.Itoa(n), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			_ = f.Close()
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	if n == a.killAt {
		if f, err := os.OpenFile(filepath.Join(a.dir, "killed_at_attempt"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
			_ = f.Close()
			fmt.Fprintln(os.Stderr, "faultagent: SIGKILL in attempt", n)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal ends the process
		}
	}
	return fmt.Errorf("work failed (attempt %d)", n)
}

// effect creates effect_<step>_<run>_<key hash> exclusively; when it exists
// the execution is a re-run and leaves rerun_<step>_<run>_<key hash>_<n>.
func (a *faultAgent) effect(ctx step.Context, name string) error {
	sum := sha256.Sum256([]byte(ctx.IdempotencyKey()))
	base := name + "_" + ctx.Run().RunID + "_" + hex.EncodeToString(sum[:8])
	f, err := os.OpenFile(filepath.Join(a.dir, "effect_"+base), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err == nil {
		return f.Close()
	}
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	f, err = os.CreateTemp(a.dir, "rerun_"+base+"_*")
	if err != nil {
		return err
	}
	return f.Close()
}

// exitingBus exits the process right after Work's output of one run is in
// the stream, the first time only.
type exitingBus struct {
	*natsbus.Bus
	run    string
	marker string
}

func (b *exitingBus) PublishStream(ctx context.Context, m *bus.Msg, msgID string) (bus.PubAck, error) {
	ack, err := b.Bus.PublishStream(ctx, m, msgID)
	if err == nil {
		b.exitAfter(m)
	}
	return ack, err
}

// PublishNew is how a step's fenced output reaches the stream.
func (b *exitingBus) PublishNew(ctx context.Context, m *bus.Msg, msgID string) (bus.PubAck, error) {
	ack, err := b.Bus.PublishNew(ctx, m, msgID)
	if err == nil {
		b.exitAfter(m)
	}
	return ack, err
}

func (b *exitingBus) exitAfter(m *bus.Msg) {
	t, perr := topic.ParseAgent(m.Subject)
	if perr == nil && t.Run == b.run && t.Name == "Worked" {
		f, ferr := os.OpenFile(b.marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if ferr == nil {
			_ = f.Close()
			fmt.Fprintln(os.Stderr, "faultagent: exiting right after publishing", m.Subject)
			os.Exit(exitAfterPub)
		}
	}
}
