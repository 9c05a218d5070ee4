package faults

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	agent "github.com/saap-go/agent"
)

// Exit statuses of faultagent.
const (
	exitPoison   = 3
	exitAfterPub = 4
)

// TestPoisonEvent runs an agent that exits in the middle of a step every
// time one event is delivered (a poison event), under a supervisor that
// restarts it. The run must end with an ExceptionEvent and a dead letter
// once the delivery budget is spent, instead of crash-looping or vanishing;
// the other runs must complete.
func TestPoisonEvent(t *testing.T) {
	// The first delivery dies with the process; its redeliveries are
	// handled one at a time and counted, and after the crash-loop limit's
	// three more deaths the event is given up. The budget leaves room for
	// the innocent events that were delivered beside it each time.
	const budget, tries = "60s", 1 + agent.DefaultCrashLoopLimit
	others := size(20, 100)
	e := newEnv(t, natsOpts{})
	a := startAgent(t, "agent", e.agentEnv("FAULT_OUTAGE_BUDGET="+budget)...)

	poison := e.newRun()
	e.start(poison, "poison")
	for range others {
		e.start(e.newRun(), "hello")
	}
	r := e.check(size(45*time.Second, 120*time.Second), "saap-agent "+e.class)
	r.log(t, "poison-event")
	r.assertInvariants(t)

	if got := r.outcome[poison.Run]; got != "exception" {
		t.Errorf("poison run: %s, want an ExceptionEvent", got)
	}
	if len(r.deadletters[poison.Run]) == 0 {
		t.Errorf("poison run: no dead letter")
	}
	if r.Completed != others {
		t.Errorf("%d of the %d other runs completed, want all", r.Completed, others)
	}
	crashes := 0
	for _, c := range a.exited() {
		if c == exitPoison {
			crashes++
		}
	}
	if crashes == 0 || crashes > tries {
		t.Errorf("the agent crashed %d times on the poison event, want 1..%d (the tries the budget allows)", crashes, tries)
	}
	t.Logf("poison crashes=%d dead letters of the run: %v", crashes, r.deadletters[poison.Run])
}

// TestDownPastDuplicateWindow kills the agent right after the stream took a
// step's output (which is the step's completion) and before the trigger was
// acked, and keeps it down longer than the stream's duplicate window. When
// it comes back the redelivered trigger must neither run the step again nor
// store its output a second time: the fence is the output's own subject,
// not the window.
func TestDownPastDuplicateWindow(t *testing.T) {
	const window = 2 * time.Second
	others := size(10, 50)
	e := newEnv(t, natsOpts{})
	e.ensureStream(window)
	// Down for two windows and a second: the server forgets msg ids on a
	// timer, so an id can outlive the window by up to one more window.
	victim := e.newRun()
	a := startAgentDelay(t, "agent", 2*window+time.Second, e.agentEnv("FAULT_EXIT_RUN="+victim.Run)...)

	e.start(victim, "hello")
	for range others {
		e.start(e.newRun(), "hello")
	}
	r := e.check(size(45*time.Second, 120*time.Second), "saap-agent "+e.class)
	r.log(t, fmt.Sprintf("down-past-duplicate-window(%s)", window))
	r.assertInvariants(t)
	if !slices.Contains(a.exited(), exitAfterPub) {
		t.Fatalf("the agent never exited after publishing (exits %v): the crash point was not reached", a.exited())
	}
	if got := r.outcome[victim.Run]; got != "completed" {
		t.Errorf("the run the agent crashed in: %s, want completed", got)
	}
	if r.Completed != others+1 {
		t.Errorf("%d of %d runs completed, want all", r.Completed, others+1)
	}
	if r.effects[victim.Run] != 1 || r.reruns[victim.Run] != 0 {
		t.Errorf("the crashed step ran %d times (side effect %d), want once", r.effects[victim.Run]+r.reruns[victim.Run], r.effects[victim.Run])
	}
}

// TestOutputOverMaxPayload has a step return an output larger than the
// server's max payload. Retrying cannot help: the run must end with an
// ExceptionEvent and a dead letter at once, the step must run once, and the
// agent's connection must stay up (the oversize message never reaches the
// server).
func TestOutputOverMaxPayload(t *testing.T) {
	const maxPayload = 32 * 1024
	others := size(10, 50)
	e := newEnv(t, natsOpts{maxPayload: maxPayload})
	a := startAgent(t, "agent", e.agentEnv()...)

	big := e.newRun()
	e.start(big, "big:"+strconv.Itoa(2*maxPayload))
	for range others {
		e.start(e.newRun(), "hello")
	}
	r := e.check(size(45*time.Second, 120*time.Second), "saap-agent "+e.class)
	r.log(t, "output-over-max-payload")
	r.assertInvariants(t)
	if got := r.outcome[big.Run]; got != "exception" {
		t.Errorf("the run with the oversize output: %s, want an ExceptionEvent", got)
	}
	if len(r.deadletters[big.Run]) == 0 {
		t.Errorf("the run with the oversize output left no dead letter")
	}
	if r.effects[big.Run] != 1 || r.reruns[big.Run] != 0 {
		t.Errorf("the step with the oversize output ran %d times, want once", r.effects[big.Run]+r.reruns[big.Run])
	}
	if r.Completed != others {
		t.Errorf("%d of the %d other runs completed, want all", r.Completed, others)
	}
	if ex := a.exited(); len(ex) > 0 {
		t.Errorf("the agent exited (%v)", ex)
	}
}

// TestRetryAttemptsSurviveSIGKILL gives Work a retry policy of 4 attempts
// and makes it fail every time; the runner SIGKILLs itself in the middle of
// the second attempt. The attempts are the trigger's deliveries, which the
// server counts: the restarted runner goes on from there, so Work runs 4
// times in all (not 2 + 4), and the give-up ends the run with an
// ExceptionEvent and a dead letter.
func TestRetryAttemptsSurviveSIGKILL(t *testing.T) {
	const attempts = 4
	others := size(5, 20)
	e := newEnv(t, natsOpts{})
	a := startAgent(t, "agent", e.agentEnv("FAULT_RETRY_ATTEMPTS="+strconv.Itoa(attempts), "FAULT_KILL_AT_ATTEMPT=2", "FAULT_ACK_WAIT=1s")...)

	failing := e.newRun()
	e.start(failing, "fail")
	for range others {
		e.start(e.newRun(), "hello")
	}
	r := e.check(size(45*time.Second, 120*time.Second), "saap-agent "+e.class)
	r.log(t, "retry-attempts-survive-sigkill")
	r.assertInvariants(t)
	if !slices.Contains(a.exited(), -1) { // killed by a signal
		t.Fatalf("the agent was not killed (exits %v): the crash point was not reached", a.exited())
	}
	if got := r.outcome[failing.Run]; got != "exception" {
		t.Errorf("the failing run: %s, want an ExceptionEvent", got)
	}
	dead := r.deadletters[failing.Run]
	if len(dead) == 0 || !strings.Contains(dead[0].reason, "gave up after 4 attempts") {
		t.Errorf("the failing run's dead letters %v, want one saying Work gave up after 4 attempts", dead)
	}
	tried, err := filepath.Glob(filepath.Join(e.effects, "attempt_"+failing.Run+"_*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tried) != attempts {
		t.Errorf("Work ran %d times, want the policy's %d (a restart must not reset the count)", len(tried), attempts)
	}
	if r.Completed != others {
		t.Errorf("%d of %d other runs completed, want all", r.Completed, others)
	}
	t.Logf("attempts=%d dead letters=%v", len(tried), dead)
}
