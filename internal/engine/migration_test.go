package engine_test

import (
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"
	"github.com/saap-go/agent/topic"
)

// A runner started on a store that holds runs in flight under the earlier
// layout (every step recorded its outputs in the store before publishing
// them) finishes them by the old rules: a step whose record holds outputs
// the stream never got is not run again, and its kept outputs are
// published, under the ids the record gave them, exactly once.
func TestRunsInFlightUnderThePerStepRecordLayoutFinish(t *testing.T) {
	mb := memory.New(memory.Options{Manual: true, Logger: quiet})
	defer mb.Close()
	var runs atomic.Int32
	s1 := step.New(func(ctx step.Context, q *Question) (*In, error) { return &In{}, nil }, step.Name("s1"))
	s2 := step.New(func(ctx step.Context, in *In) (*Out, error) { runs.Add(1); return &Out{}, nil }, step.Name("s2"))
	w := partial(t, "Layout", s1, s2)
	st := memstore.New()
	eng := newReplicas(t, w, mb, st, 1)[0]
	runID := startRun(t, mb, "Layout", &Question{}, nil)
	if err := processFirst(t, eng, mb, "Layout", "Question"); err != nil {
		t.Fatal(err)
	}
	msgs, err := bus.ReadAll(t.Context(), mb, topic.StreamName("Layout"), "agent.Layout.*.*.*.*.control_event.In.*")
	if err != nil || len(msgs) != 1 {
		t.Fatalf("In in the stream: %d, %v", len(msgs), err)
	}
	in, err := event.Unmarshal(msgs[0].Data)
	if err != nil {
		t.Fatal(err)
	}

	// What the earlier runner left when it died between its record and
	// the publish: s2's record, completed, holding the encoded output.
	key, outID, err := engine.Binding(t.Context(), eng, runID, "s2", in.EventBase().EventID)
	if err != nil {
		t.Fatal(err)
	}
	out := &Out{}
	out.EventID, out.CreatedAt = outID, in.EventBase().CreatedAt+1
	data, err := event.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	run := store.RunKey{Class: "Layout", Run: runID}
	if _, err := st.Record(t.Context(), run, "s2", key, store.Outcome{Outputs: []json.RawMessage{data}}); err != nil {
		t.Fatal(err)
	}

	// The new runner gets the trigger again, as the server redelivers it.
	for range 2 {
		d := &redelivery{recorder: recorder{msg: msgs[0].Msg, delivered: 2}, seq: msgs[0].Seq}
		eng.Handle(t.Context(), d)
		if d.settled != "ack" {
			t.Fatalf("the redelivered trigger was settled %s (%s), want ack", d.settled, d.reason)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("s2 ran %d times, want none: its record says it ran", n)
	}
	outs := stored(t, mb, "Layout", "Out")
	if len(outs) != 1 || outs[0].EventBase().EventID != outID {
		t.Fatalf("the stream holds %d Out (%v), want the recorded one, %s, once", len(outs), outs, outID)
	}
}
