package agent_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
)

// BenchmarkDeadlineLateness parks 10,000 runs through agent.Run (NATS in a
// child process, default JetStream KV store), half of them asleep on a
// durable timer (step.Sleep) and half waiting for a confirmation with a
// timeout, each due 30 s plus a random part of up to 100 s after it was
// parked (about 100 deadlines a second once all are parked, with up to
// 10,000 pending). It reports the goroutines the parked runs added to the
// runner's process and how late the TimerFiredEvents and
// HumanInTheLoopTimeoutEvents arrived at a subscriber, from the deadline
// (the event's created_at): p50, p99 and max per kind (ms).
//
//	go test -run '^$' -bench 'DeadlineLateness' -benchtime 1x -timeout 20m .
func BenchmarkDeadlineLateness(b *testing.B) {
	const (
		runs   = 10_000
		wait   = 30 * time.Second  // longer than parking the runs takes
		spread = 100 * time.Second // deadlines spread over 100 s
	)
	kvDefault(b)
	for b.Loop() {
		url := serverProcess(b)
		c := client(b, url)
		class := uniqueClass("Lateness")
		r := startRunner(b, &mixedAgent{class: class, wait: wait, spread: spread},
			agent.WithNATS(url), agent.Standalone(), agent.Discoverable(false), silent())
		ctx := context.Background()

		var mu sync.Mutex
		late := map[string][]time.Duration{}
		got := 0
		all := make(chan struct{})
		sub, err := c.Subscribe(ctx, "agent."+class+".*.*.*.*.control_event.*.*", "", func(m *bus.Msg) {
			at := time.Now()
			if !strings.Contains(m.Subject, ".TimerFiredEvent.") && !strings.Contains(m.Subject, ".HumanInTheLoopTimeoutEvent.") {
				return
			}
			ev, err := event.Unmarshal(m.Data)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			name := event.Name(ev)
			late[name] = append(late[name], at.Sub(time.Unix(0, ev.EventBase().CreatedAt)))
			if got++; got == runs+2 {
				close(all)
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		// Warm up with one run of each kind.
		publish(b, c, newRun(class, "p"), userMessage("timer"), nil)
		publish(b, c, newRun(class, "p"), userMessage("hitl"), nil)
		waitAcked(b, c.JetStream(), class)

		_, gBefore := heapNow()
		for i := range runs {
			text := "timer"
			if i%2 == 1 {
				text = "hitl"
			}
			if err := publishErr(ctx, c, newRun(class, "p"), userMessage(text), nil); err != nil {
				b.Fatal(err)
			}
		}
		waitAcked(b, c.JetStream(), class)
		_, gAfter := heapNow()
		b.ReportMetric(float64(gAfter-gBefore), "goroutines-added")

		select {
		case <-all:
		case <-time.After(wait + spread + 2*time.Minute):
			mu.Lock()
			b.Fatalf("%d of %d deadlines arrived", got, runs+2)
		}
		_ = sub.Unsubscribe()
		for name, unit := range map[string]string{"TimerFiredEvent": "timer", "HumanInTheLoopTimeoutEvent": "timeout"} {
			l := late[name]
			slices.Sort(l)
			p := func(q float64) float64 {
				return float64(l[min(len(l)-1, int(q*float64(len(l))))].Microseconds()) / 1000
			}
			b.ReportMetric(p(0.50), unit+"-late-p50-ms")
			b.ReportMetric(p(0.99), unit+"-late-p99-ms")
			b.ReportMetric(float64(l[len(l)-1].Microseconds())/1000, unit+"-late-max-ms")
		}
		if err := r.stop(); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
}

// mixedAgent sleeps on a timer for a message "timer" and asks a
// confirmation with a timeout for any other, each for wait plus a random
// part of up to spread; the run ends when the timer fires, the question
// times out or is answered.
type mixedAgent struct {
	class        string
	wait, spread time.Duration
}

func (a *mixedAgent) Class() string { return a.class }

func (a *mixedAgent) Steps() []*step.Step {
	return []*step.Step{step.New(a.Wait), step.New(a.Wake), step.New(a.Expire), step.New(a.Decide)}
}

func (a *mixedAgent) Wait(ctx step.Context, m *event.UserMessageEvent) (step.Either[*event.TimerRequestEvent, *event.HumanInTheLoopConfirmationRequestEvent], error) {
	d := a.wait + rand.N(a.spread)
	if m.Messages[0].Content() == "timer" {
		return step.OneOf[*event.TimerRequestEvent, *event.HumanInTheLoopConfirmationRequestEvent](step.Sleep(d)), nil
	}
	q, err := hitl.Confirm("Approve?", hitl.Timeout(d))
	return step.Other[*event.TimerRequestEvent](q), err
}

func (a *mixedAgent) Wake(ctx step.Context, _ *event.TimerFiredEvent) (*event.StopEvent, error) {
	return &event.StopEvent{}, nil
}

func (a *mixedAgent) Expire(ctx step.Context, _ *event.HumanInTheLoopTimeoutEvent) (*event.StopEvent, error) {
	return &event.StopEvent{}, nil
}

func (a *mixedAgent) Decide(ctx step.Context, _ *event.HumanInTheLoopConfirmationResponseEvent) (*event.StopEvent, error) {
	return &event.StopEvent{}, nil
}
