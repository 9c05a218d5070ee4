package engine_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// AVeryLongOutputEventNameForTheTest is an output whose name makes its
// subject longer than an ExceptionEvent's on the same run.
type AVeryLongOutputEventNameForTheTest struct{ event.ControlEvent }

func init() { event.MustRegister[AVeryLongOutputEventNameForTheTest]() }

// An output whose subject would be over topic.MaxSubjectLen fails the step
// before any I/O; the run ends with an ExceptionEvent, which still fits.
func TestOverlongOutputSubjectEndsTheRun(t *testing.T) {
	clock := memory.NewManualClock(time.Unix(1700000000, 0))
	mb := memory.New(memory.Options{Manual: true, Clock: clock, Logger: quiet})
	t.Cleanup(func() { _ = mb.Close() })
	var calls atomic.Int32
	s := step.New(func(ctx step.Context, q *Question) (*AVeryLongOutputEventNameForTheTest, error) {
		calls.Add(1)
		return &AVeryLongOutputEventNameForTheTest{}, nil
	}, step.Name("s"))
	startEngines(t, mb, partial(t, "LongOut", s), memstore.New(), 1)
	ctx := t.Context()
	q := &Question{}
	event.Stamp(q)
	data, err := event.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	id := q.EventBase().EventID
	tail := ".t.d.r.control_event.Question." + id
	head := "agent.LongOut."
	// The ExceptionEvent's subject is 6 bytes longer than the trigger's, the
	// output's 26: only the output's is over the limit.
	agentID := strings.Repeat("a", topic.MaxSubjectLen-len(head)-len(tail)-10)
	subject := head + agentID + tail
	if _, err := mb.PublishStream(ctx, &bus.Msg{Subject: subject, Data: data}, id); err != nil {
		t.Fatal(err)
	}
	mb.DeliverAll(ctx)
	clock.Advance(time.Hour)
	mb.DeliverAll(ctx)
	run := topic.Agent{Class: "LongOut", ID: agentID, Thread: "t", Display: "d", Run: "r"}
	filter, err := topic.AgentPattern(run.Event(topic.Control, "ExceptionEvent", "")).Subject()
	if err != nil {
		t.Fatal(err)
	}
	m, err := mb.NextMsg(ctx, topic.StreamName("LongOut"), filter, 1)
	if err != nil {
		t.Fatalf("no ExceptionEvent: %v", err)
	}
	ev, err := event.Unmarshal(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	if msg := ev.(*event.ExceptionEvent).Message; !strings.Contains(msg, "AVeryLongOutputEventNameForTheTest") || !strings.Contains(msg, "3584") {
		t.Fatalf("exception %q must name the output and the limit", msg)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the step ran %d times, want once", n)
	}
	if c := countSubjects(t, mb, topic.StreamName("LongOut")); c["AVeryLongOutputEventNameForTheTest"] != 0 {
		t.Fatalf("stream holds %v", c)
	}
}
