package agenttest_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/retry"
	"github.com/saap-go/agent/step"
)

// flakyWorkflow is Start → work → Stop, where work fails its first
// failures attempts with err and then succeeds.
func flakyWorkflow(t *testing.T, pol retry.Policy, failures int32, err error, calls *atomic.Int32, opts ...step.Option) *step.Workflow {
	work := step.New(func(ctx step.Context, _ *event.StartEvent) (*A, error) {
		if calls.Add(1) <= failures {
			return nil, err
		}
		return &A{}, nil
	}, append([]step.Option{step.Name("work"), step.Retry(pol)}, opts...)...)
	done := step.New(func(ctx step.Context, _ *A) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("done"))
	return mustPartial(t, "Flaky", work, done)
}

// A step with a retry policy that fails twice runs a third time after the
// policy's backoff (1 s, then 2 s) and the run completes; nothing is
// retried before its delay.
func TestRetryBacksOff(t *testing.T) {
	var calls atomic.Int32
	pol := retry.Policy{MaxAttempts: 3, InitialInterval: time.Second, BackoffCoefficient: 2}
	h := agenttest.New(t, flakyWorkflow(t, pol, 2, errors.New("flaky service"), &calls))
	res := h.Start(&event.StartEvent{})
	agenttest.Equal(t, calls.Load(), int32(1))
	h.Advance(999 * time.Millisecond)
	agenttest.Equal(t, calls.Load(), int32(1))
	h.Advance(time.Millisecond)
	agenttest.Equal(t, calls.Load(), int32(2))
	h.Advance(1999 * time.Millisecond)
	agenttest.Equal(t, calls.Load(), int32(2))
	h.Advance(time.Millisecond)
	agenttest.Equal(t, calls.Load(), int32(3))
	agenttest.Equal(t, res.Ended(), "completed")
	agenttest.Equal(t, res.Count("ExceptionEvent"), 0)
	agenttest.Equal(t, res.Count("A"), 1)
	agenttest.Equal(t, len(res.DeadLetters()), 0)
	var failed int
	for _, x := range res.Executions() {
		if x.Step == "work" && x.Err != nil {
			failed++
		}
	}
	agenttest.Equal(t, failed, 2)
}

// When its attempts are spent the step fails as a step without a policy
// does, and its trigger is dead-lettered with the reason.
func TestRetryGivesUp(t *testing.T) {
	var calls atomic.Int32
	pol := retry.Policy{MaxAttempts: 3, InitialInterval: time.Second}
	h := agenttest.New(t, flakyWorkflow(t, pol, 100, errors.New("service down"), &calls))
	res := h.Start(&event.StartEvent{})
	advance(h, 10, time.Minute)
	agenttest.Equal(t, calls.Load(), int32(3))
	agenttest.Equal(t, res.Ended(), "crashed")
	agenttest.Equal(t, res.Count("ExceptionEvent"), 1)
	dead := res.DeadLetters()
	if len(dead) != 1 || !strings.Contains(dead[0].Reason, "gave up after 3 attempts") || !strings.Contains(dead[0].Reason, "service down") {
		t.Fatalf("dead letters %+v, want one saying the step gave up after 3 attempts", dead)
	}
	// Nothing comes back later.
	advance(h, 10, time.Hour)
	agenttest.Equal(t, calls.Load(), int32(3))
}

// An error the policy does not retry fails at once: one made with
// retry.Permanent, or one NonRetryable names.
func TestRetryNonRetryable(t *testing.T) {
	errBadInput := errors.New("bad input")
	for name, c := range map[string]struct {
		pol retry.Policy
		err error
	}{
		"permanent":     {retry.Policy{MaxAttempts: 5}, retry.Permanent(errors.New("no such customer"))},
		"non-retryable": {retry.Policy{MaxAttempts: 5, NonRetryable: func(err error) bool { return errors.Is(err, errBadInput) }}, errBadInput},
	} {
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int32
			h := agenttest.New(t, flakyWorkflow(t, c.pol, 100, c.err, &calls))
			res := h.Start(&event.StartEvent{})
			advance(h, 10, time.Minute)
			agenttest.Equal(t, calls.Load(), int32(1))
			agenttest.Equal(t, res.Ended(), "crashed")
			if dead := res.DeadLetters(); len(dead) != 1 || !strings.Contains(dead[0].Reason, "does not retry") {
				t.Fatalf("dead letters %+v, want one saying the policy does not retry the error", dead)
			}
		})
	}
}

// A continue-on-error step that gives up leaves the run going; its trigger
// is dead-lettered, so the give-up is not lost.
func TestRetryGivesUpContinueOnError(t *testing.T) {
	var calls atomic.Int32
	pol := retry.Policy{MaxAttempts: 2}
	h := agenttest.New(t, flakyWorkflow(t, pol, 100, errors.New("optional enrichment failed"), &calls, step.ContinueOnError()))
	res := h.Start(&event.StartEvent{})
	advance(h, 10, time.Minute)
	agenttest.Equal(t, calls.Load(), int32(2))
	agenttest.Equal(t, res.Count("ExceptionEvent"), 0)
	agenttest.Equal(t, len(res.DeadLetters()), 1)
}

// A policy whose values make no sense is a declaration problem.
func TestRetryInvalidPolicy(t *testing.T) {
	s := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.StopEvent, error) { return nil, nil },
		step.Name("bad"), step.Retry(retry.Policy{BackoffCoefficient: 0.5}))
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "BackoffCoefficient") {
		t.Fatalf("Err: %v, want the coefficient named", err)
	}
}

// advance moves the harness's clock n times by d: each Nak'ed delivery is
// due only after the Advance that follows it.
func advance(h *agenttest.Harness, n int, d time.Duration) {
	for range n {
		h.Advance(d)
	}
}
