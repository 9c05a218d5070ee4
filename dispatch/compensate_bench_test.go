package dispatch_test

import (
	"testing"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// BenchmarkCompensationDeclared compares the 3-step linear run of
// BenchmarkLinearRun (without) with the same run whose first two steps
// declare compensations that are never needed (declared): the run
// succeeds, so the only cost is the compensation record each compensable
// step leaves in the run context. Both on the manual in-memory bus and
// store, in the same run; the ratio declared/without is what is reported.
func BenchmarkCompensationDeclared(b *testing.B) {
	undoStart := func(step.Context, *event.StartEvent, *In) error { return nil }
	undoIn := func(step.Context, *In, *Out) error { return nil }
	declared := func(b *testing.B, class string) *step.Workflow {
		s1 := step.New(func(ctx step.Context, s *event.StartEvent) (*In, error) { return &In{}, nil }, step.Name("s1"), step.Compensate(undoStart))
		s2 := step.New(func(ctx step.Context, a *In) (*Out, error) { return &Out{}, nil }, step.Name("s2"), step.Compensate(undoIn))
		s3 := step.New(func(ctx step.Context, o *Out) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("s3"))
		w, err := step.NewWorkflow(class, s1, s2, s3)
		if err != nil {
			b.Fatal(err)
		}
		return w
	}
	// The two runs alternate within one loop, so that the load of a shared
	// machine weighs on both alike; each run is timed on its own.
	without := newBenchEnv(b, linearWorkflow(b, "BenchCompWithout"))
	with := newBenchEnv(b, declared(b, "BenchCompDeclared"))
	var tWithout, tWith time.Duration
	n := 0
	for b.Loop() {
		envs := [2]*benchEnv{without, with}
		if n%2 == 1 {
			envs = [2]*benchEnv{with, without}
		}
		for _, env := range envs {
			t0 := time.Now()
			env.start(b, &event.StartEvent{})
			if d := time.Since(t0); env == with {
				tWith += d
			} else {
				tWithout += d
			}
		}
		n++
	}
	b.ReportMetric(float64(tWithout.Nanoseconds())/float64(n), "ns/run-without")
	b.ReportMetric(float64(tWith.Nanoseconds())/float64(n), "ns/run-declared")
	b.ReportMetric(float64(tWith)/float64(tWithout), "ratio")
}
