package engine_test

import (
	"context"
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

// beatRecorder is a Delivery that signals its first InProgress.
type beatRecorder struct {
	recorder
	once sync.Once
	beat chan struct{}
}

func (d *beatRecorder) InProgress() error {
	d.once.Do(func() { close(d.beat) })
	return nil
}

// A step that runs longer than the heartbeat interval gets in-progress
// acknowledgements, so AckWait does not expire; the delivery is acked
// after the step.
func TestHeartbeatWhileStepRuns(t *testing.T) {
	d := &beatRecorder{beat: make(chan struct{})}
	handleSlow(t, 5*time.Millisecond, d, &d.recorder, func() {
		select {
		case <-d.beat:
		case <-time.After(10 * time.Second):
			t.Error("no heartbeat while the step ran")
		}
	})
}

// countingBeats is a Delivery that counts InProgress calls.
type countingBeats struct {
	recorder
	mu    sync.Mutex
	beats int
}

func (d *countingBeats) InProgress() error {
	d.mu.Lock()
	d.beats++
	d.mu.Unlock()
	return nil
}

// WithHeartbeat(0) and negative durations disable heartbeats: a step that
// runs for a while sends no InProgress at all (a zero-duration timer would
// send thousands).
func TestHeartbeatDisabled(t *testing.T) {
	for _, every := range []time.Duration{0, -time.Second} {
		t.Run(every.String(), func(t *testing.T) {
			d := &countingBeats{}
			// An observation window, not synchronisation: heartbeats
			// would arrive during it.
			handleSlow(t, every, d, &d.recorder, func() { time.Sleep(30 * time.Millisecond) })
			d.mu.Lock()
			defer d.mu.Unlock()
			if d.beats != 0 {
				t.Fatalf("%d InProgress calls with heartbeats disabled, want 0", d.beats)
			}
		})
	}
}

// handleSlow runs one Question through an engine whose only step runs work,
// with the given heartbeat interval, and checks that d (whose recorder is
// rec) was acked.
func handleSlow(t *testing.T, every time.Duration, d bus.Delivery, rec *recorder, work func()) {
	t.Helper()
	slow := step.New(func(ctx step.Context, q *Question) (*Answer, error) {
		work()
		return &Answer{}, nil
	}, step.Name("slow"))
	w, err := step.NewWorkflow("Slow", slow)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b := memory.New(memory.Options{})
	defer b.Close()
	if err := b.EnsureStream(ctx, bus.AgentStream("Slow")); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(w, b, memstore.New(), engine.WithHeartbeat(every),
		engine.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	q := event.Stamp(&Question{Text: "?"})
	data, _ := event.Marshal(q)
	run := event.NewID()
	subj, _ := topic.Agent{Class: "Slow", ID: "a", Thread: run, Display: run, Run: run, Type: topic.Control,
		Name: "Question", EventID: q.EventBase().EventID}.Subject()
	rec.msg = bus.Msg{Subject: subj, Data: data}
	eng.Handle(ctx, d)
	if rec.settled != "ack" {
		t.Fatalf("settled %q, want ack", rec.settled)
	}
}
