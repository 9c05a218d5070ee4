package engine_test

import (
	"testing"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/cputime"
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
	// machine weighs on both alike; each run is timed on its own, in wall
	// time and in the process's CPU time (getrusage: the bus and the store
	// are in this process, and other processes' load does not count).
	without := newBenchEnv(b, linearWorkflow(b, "BenchCompWithout"))
	with := newBenchEnv(b, declared(b, "BenchCompDeclared"))
	var wall, cpu [2]time.Duration // 0: without, 1: declared
	n := 0
	for b.Loop() {
		order := [2]int{0, 1}
		if n%2 == 1 {
			order = [2]int{1, 0}
		}
		for _, i := range order {
			env := [2]*benchEnv{without, with}[i]
			c0, t0 := cputime.Now(), time.Now()
			env.start(b, &event.StartEvent{})
			wall[i] += time.Since(t0)
			cpu[i] += cputime.Now() - c0
		}
		n++
	}
	b.ReportMetric(float64(wall[0].Nanoseconds())/float64(n), "wall-ns/run-without")
	b.ReportMetric(float64(wall[1].Nanoseconds())/float64(n), "wall-ns/run-declared")
	b.ReportMetric(float64(wall[1])/float64(wall[0]), "wall-ratio")
	b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "cpu-ratio")
}
