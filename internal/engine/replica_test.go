package engine_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/saap-go/agent/interceptor"
	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

type recObserver struct {
	interceptor.Base
	mu    sync.Mutex
	execs map[string][]interceptor.Execution
	ends  map[string][]interceptor.End
}

func (o *recObserver) Executed(_ context.Context, x interceptor.Execution) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.execs[x.Run.Run] = append(o.execs[x.Run.Run], x)
}

func (o *recObserver) Ended(_ context.Context, td interceptor.End) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ends[td.Run.Run] = append(o.ends[td.Run.Run], td)
}

// Two replicas with a one-run history cache take turns on the events of two
// interleaved runs: each replica must load the prefix it has not seen from
// the stream, and the runs come out as on one process.
func TestReplicasLoadHistoryOnDemand(t *testing.T) {
	start := step.New(func(ctx step.Context, _ *event.StartEvent) ([]*In, error) {
		return []*In{{N: 1}, {N: 2}, {N: 3}}, nil
	}, step.Name("start"))
	agg := step.New(func(ctx step.Context, ins []*In) (*Out, error) { return &Out{}, nil }, step.Name("agg"))
	end := step.New(func(ctx step.Context, outs []*Out) (*event.StopEvent, error) { return &event.StopEvent{}, nil },
		step.Name("end"), step.Precondition(func(ctx step.Context, outs []*Out) (bool, error) { return len(outs) == 3, nil }))
	w, err := step.NewWorkflow("Replicas", start, agg, end)
	if err != nil {
		t.Fatal(err)
	}
	b := memory.New(memory.Options{Manual: true, Logger: quiet})
	defer b.Close()
	obs := &recObserver{execs: map[string][]interceptor.Execution{}, ends: map[string][]interceptor.End{}}
	startEngines(t, b, w, memstore.New(), 2, engine.Sequential(), engine.WithCacheSize(1), engine.WithInterceptors(obs))
	var runs []string
	for range 2 {
		runs = append(runs, startRun(t, b, "Replicas", &event.StartEvent{}, nil))
	}
	b.DeliverAll(t.Context())

	for _, run := range runs {
		var lens []int
		var aggInputs [][]string
		for _, x := range obs.execs[run] {
			if x.Err != nil {
				t.Fatalf("run %s: %s failed: %v", run, x.Step, x.Err)
			}
			if x.Step == "agg" {
				lens = append(lens, len(x.Inputs))
				aggInputs = append(aggInputs, x.Inputs)
			}
		}
		if !slices.Equal(lens, []int{1, 2, 3}) {
			t.Fatalf("run %s: agg saw lists of %v, want [1 2 3]", run, lens)
		}
		for i := 1; i < len(aggInputs); i++ {
			if !slices.Equal(aggInputs[i][:i], aggInputs[i-1]) {
				t.Fatalf("run %s: agg inputs %q are not growing prefixes", run, aggInputs)
			}
		}
		if ends := obs.ends[run]; len(ends) != 1 || ends[0].Marker != store.Completed {
			t.Fatalf("run %s: teardowns %+v, want one completed", run, ends)
		}
	}
}
