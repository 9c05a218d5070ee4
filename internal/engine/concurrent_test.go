package engine_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/engine"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Many runs at once on an automatic bus, steps of one trigger in parallel:
// every run ends exactly once, and each join runs exactly once per run.
func TestConcurrentRuns(t *testing.T) {
	const runs = 20
	var mu sync.Mutex
	joins := map[string]int{}
	split := step.New(func(ctx step.Context, q *Question) ([]*Work, error) {
		return []*Work{{Part: 1}, {Part: 2}, {Part: 3}, {Part: 4}}, nil
	}, step.Name("split"))
	// Two parallel consumers of every Work, and a fixed-size join.
	double := step.New(func(ctx step.Context, w *Work) (*In, error) { return &In{N: 2 * w.Part}, nil }, step.Name("double"))
	triple := step.New(func(ctx step.Context, w *Work) (*Out, error) { return &Out{}, nil }, step.Name("triple"))
	join := step.New(func(ctx step.Context, ins [4]*In, outs [4]*Out) (*Answer, error) {
		mu.Lock()
		joins[ctx.Run().RunID]++
		mu.Unlock()
		sum := 0
		for _, in := range ins {
			sum += in.N
		}
		return &Answer{Text: fmt.Sprint(sum)}, nil
	}, step.Name("join"))
	w, err := step.NewWorkflow("Parallel", split, double, triple, join)
	if err != nil {
		t.Fatal(err)
	}

	ctx := t.Context()
	b := memory.New(memory.Options{})
	defer b.Close()
	// Three replicas on the queue group, one store.
	consumers := startEngines(t, b, w, memstore.New(), 3, engine.WithHeartbeat(time.Millisecond))
	answers := make(chan *Answer, runs*2)
	pattern, _ := topic.ClassControl("Parallel")
	sub, err := b.Subscribe(ctx, pattern, "", func(m *bus.Msg) {
		if e, err := event.Unmarshal(m.Data); err == nil {
			if a, ok := e.(*Answer); ok {
				answers <- a
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		startRun(t, b, "Parallel", &Question{Text: fmt.Sprint(i)}, nil)
	}
	for range runs {
		select {
		case a := <-answers:
			if a.Text != "20" {
				t.Errorf("answer %q, want 20", a.Text)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("runs did not finish")
		}
	}
	_ = sub.Unsubscribe()
	for _, c := range consumers {
		_ = c.Stop()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(joins) != runs {
		t.Fatalf("%d runs joined, want %d", len(joins), runs)
	}
	for run, n := range joins {
		if n != 1 {
			t.Errorf("run %s joined %d times, want 1", run, n)
		}
	}
}
