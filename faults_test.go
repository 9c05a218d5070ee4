package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// TestRunReturnsWhenTheConnectionCloses: a NATS connection that is closed
// for good (as nats.go does after "maximum control line exceeded") ends Run
// with an error instead of leaving a runner that takes nothing.
func TestRunReturnsWhenTheConnectionCloses(t *testing.T) {
	s := embedded(t)
	b, err := natsbus.Connect(natsbus.Config{URL: s.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	r, err := agent.New(&linear{class: uniqueClass("Lost")}, agent.WithBus(b), agent.Standalone(), quiet(t),
		agent.WithShutdownTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx) }()
	select {
	case <-r.Ready():
	case err := <-errc:
		t.Fatalf("Run returned before it was ready: %v", err)
	}
	b.Conn().Close() // closed for good, as after a fatal server error
	select {
	case err := <-errc:
		if !errors.Is(err, bus.ErrClosed) {
			t.Fatalf("Run returned %v, want an error wrapping bus.ErrClosed", err)
		}
	case <-time.After(waitLong):
		t.Fatal("Run did not return after its connection closed")
	}
	// The cause stays the health reason, not merely "stopped".
	var he *agent.HealthError
	if err := r.Health(ctx); !errors.As(err, &he) || he.Component != "nats" || he.Reason != "closed" {
		t.Errorf("Health after the connection closed: %v, want nats closed", err)
	}
}

// TestOverlongSubjectIsDeadLettered: a trigger whose subject the server
// accepted, but whose outputs' subjects would be over the limit, ends in a
// dead letter naming the limit; the runner's connection survives and it
// serves the next run.
func TestOverlongSubjectIsDeadLettered(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("Long")
	w := watch(t, c, class)
	startRunner(t, &linear{class: class}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))

	letters := deadLetterFeed(t, c)

	run := newRun(class, "x")
	ev := userMessage("hi")
	event.Stamp(ev)
	data, err := event.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	// Built by hand: the topic builders refuse it, but it fits on the wire
	// (a foreign publisher's). Every subject of its run is over the limit.
	tail := "." + run.Thread + "." + run.Display + "." + run.Run + ".control_event.UserMessageEvent." + ev.EventBase().EventID
	head := "agent." + class + "."
	id := strings.Repeat("i", topic.MaxSubjectLen-len(head)-len(tail)+100)
	subject := head + id + tail
	if _, err := c.PublishStream(context.Background(), &bus.Msg{Subject: subject, Data: data}, ev.EventBase().EventID); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-letters:
		reason := m.Header.Get(bus.HeaderDeadLetterReason)
		if m.Header.Get(bus.HeaderDeadLetterSubject) != subject || !strings.Contains(reason, "3584") {
			t.Errorf("dead letter %.60q, reason %q; want the trigger and the limit", m.Subject, reason)
		}
	case <-time.After(waitLong):
		t.Fatal("no dead letter")
	}
	ok := newRun(class, "p")
	publish(t, c, ok, userMessage("hi"), nil)
	if !event.IsStop(w.terminal(t, ok.Run)) {
		t.Fatal("the runner stopped working after an over-long subject")
	}
}
