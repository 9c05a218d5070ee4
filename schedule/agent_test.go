package schedule_test

import (
	"context"
	"testing"
	"time"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/schedule"
	"github.com/saap-go/agent/step"
	memstore "github.com/saap-go/agent/store/memory"
	"github.com/saap-go/agent/topic"
)

// digest is a schedulable agent: its start event is a CronStartEvent.
type digest struct {
	class string
	got   chan *event.CronStartEvent
}

func (d *digest) Class() string { return d.class }

func (d *digest) Describe() agent.Description {
	return agent.Description{Name: event.L("Digest", "Digest", "Digest", "Digest")}
}

func (d *digest) Steps() []*step.Step {
	return []*step.Step{step.New(func(ctx step.Context, e *event.CronStartEvent) (*event.StopEvent, error) {
		d.got <- e
		return event.New[event.StopEvent](), nil
	}, step.Name("Digest"))}
}

// A scheduled occurrence reaches a Go runner of the profile's class and
// runs to its end.
func TestScheduledRunReachesTheAgent(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	b, st := memory.New(memory.Options{}), memstore.New()
	d := &digest{class: uniqueClass("Digest"), got: make(chan *event.CronStartEvent, 4)}
	r, err := agent.New(d, agent.WithBus(b), agent.WithStore(st), agent.Standalone())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("the runner did not stop")
		}
	}()
	select {
	case <-r.Ready():
	case err := <-done:
		t.Fatalf("runner: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("runner not ready")
	}
	stops := make(chan string, 4)
	if _, err := b.Subscribe(ctx, "agent."+d.class+".daily.*.*.*.control_event.StopEvent.*", "", func(m *bus.Msg) {
		at, _ := topic.ParseAgent(m.Subject)
		stops <- at.Run
	}); err != nil {
		t.Fatal(err)
	}

	clock := newClock(utc("2026-03-02T06:59:50Z"))
	s, err := schedule.New(schedule.Config{Bus: b, Store: st, Clock: clock, Name: d.class,
		Source: schedule.List{{Class: d.class, AgentID: "daily", Cron: every("0 7 * * *", "")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * time.Second)
	if rep, err := s.Tick(ctx); err != nil || rep.Fired != 1 {
		t.Fatalf("tick: %+v, %v", rep, err)
	}
	select {
	case e := <-d.got:
		if !e.ScheduledFor.Equal(utc("2026-03-02T07:00:00Z")) || e.User != nil {
			t.Errorf("the step got scheduled_for %v, user %v", e.ScheduledFor, e.User)
		}
	case <-time.After(time.Minute):
		t.Fatal("the step never ran")
	}
	select {
	case run := <-stops:
		_, tops := fired(t, b, d.class)
		if len(tops) != 1 || tops[0].Run != run {
			t.Errorf("the run %s ended; the scheduled runs are %v", run, tops)
		}
	case <-time.After(time.Minute):
		t.Fatal("the run did not end")
	}
}
