package faults

import (
	"testing"
	"time"
)

// TestNATSKilled kills the NATS server with SIGKILL while runs are in
// flight and starts it again on the same port and store. Every run must
// still end, each once, and the agent must be connected again afterwards.
func TestNATSKilled(t *testing.T) {
	runs := size(40, 200)
	down := size(2*time.Second, 5*time.Second)
	e := newEnv(t, natsOpts{})
	a := startAgent(t, "agent", e.agentEnv()...)

	for i := range runs {
		e.start(e.newRun(), "hello")
		if i == runs/2 {
			// Half the runs are in flight: kill the server under them.
			e.nats.kill()
			time.Sleep(down) // the outage itself
			e.nats.restart()
		}
	}
	r := e.check(size(45*time.Second, 120*time.Second), "saap-agent "+e.class)
	r.log(t, "nats-killed")
	r.assertInvariants(t)
	if r.Completed != runs {
		t.Errorf("%d of %d runs completed, want all (nothing in them fails)", r.Completed, runs)
	}
	for run, o := range r.outcome {
		if o == "completed" && r.effects[run] != 1 {
			t.Errorf("run %s: %d Work side effects, want 1", run, r.effects[run])
		}
	}
	t.Logf("agent restarts after exits: %v", a.exited())
}
