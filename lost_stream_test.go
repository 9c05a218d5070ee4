package agent_test

import (
	"context"
	"strings"
	"testing"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/store/natskv"
	"github.com/saap-go/agent/topic"
)

// TestDeletedStreamRunnerRecovers: the class stream is deleted under the
// runner. The runner notices, recreates its stream and consumer, and ends
// every run it had accepted with an ExceptionEvent (their record went with
// the stream); a run started afterwards is served.
func TestDeletedStreamRunnerRecovers(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("Lost")
	w := watch(t, c, class)
	startRunner(t, &greeter{class: class}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))

	var paused []topic.Agent
	for range 3 {
		run, _ := askedRun(t, c, w, class)
		paused = append(paused, run)
	}
	if err := c.DeleteStream(context.Background(), topic.StreamName(class)); err != nil {
		t.Fatal(err)
	}
	for _, run := range paused {
		evs := w.until(t, run.Run, "an end", func(evs []event.Event) bool { return findTerminal(evs) != nil })
		exc, ok := findTerminal(evs).(*event.ExceptionEvent)
		if !ok || !strings.Contains(exc.Message, "lost") {
			t.Errorf("run %s ended with %s, want an ExceptionEvent saying its events were lost", run.Run, names(evs))
		}
	}
	// The runner serves new runs on the recreated stream.
	askedRun(t, c, w, class)
}

// TestDeletedConsumerRunnerRecovers: the runner consumer alone is deleted.
// The runner recreates it; the stream kept the runs' records, so a paused
// run goes on when its question is answered.
func TestDeletedConsumerRunnerRecovers(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("LostConsumer")
	w := watch(t, c, class)
	startRunner(t, &greeter{class: class}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))

	run, req := askedRun(t, c, w, class)
	if err := c.DeleteConsumer(context.Background(), topic.StreamName(class), "agent_runner_"+class); err != nil {
		t.Fatal(err)
	}
	publish(t, c, run, &event.HumanInTheLoopInputResponseEvent{Response: "Ada", RequestEvent: req}, nil)
	evs := w.until(t, run.Run, "an end", func(evs []event.Event) bool { return findTerminal(evs) != nil })
	if _, ok := findTerminal(evs).(*event.StopEvent); !ok {
		t.Fatalf("the paused run ended with %s, want its StopEvent", names(evs))
	}
}

// TestDeletedStateBucketRunnerRecovers: the state store's bucket is deleted
// under the runner. The runner's next store operation finds it gone: the
// store recreates it, and the runner ends the runs it held with an
// ExceptionEvent (their claims went with the bucket); a run started
// afterwards is served.
func TestDeletedStateBucketRunnerRecovers(t *testing.T) {
	t.Setenv("REDIS_URL", "") // the runner's default store on this bus is what is tested
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("LostState")
	w := watch(t, c, class)
	startRunner(t, &greeter{class: class}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))

	run, req := askedRun(t, c, w, class)
	if err := c.JetStream().DeleteKeyValue(context.Background(), natskv.DefaultBucket); err != nil {
		t.Fatal(err)
	}
	// The answer makes the runner use its store.
	publish(t, c, run, &event.HumanInTheLoopInputResponseEvent{Response: "Ada", RequestEvent: req}, nil)
	evs := w.until(t, run.Run, "an end", func(evs []event.Event) bool { return findTerminal(evs) != nil })
	if exc, ok := findTerminal(evs).(*event.ExceptionEvent); !ok || !strings.Contains(exc.Message, "lost this run's state") {
		t.Errorf("run %s ended with %s, want an ExceptionEvent saying its state was lost", run.Run, names(evs))
	}
	// The runner serves new runs on the recreated bucket.
	next := newRun(class, "wiki")
	publish(t, c, next, userMessage("hi"), nil)
	w.until(t, next.Run, "the question", func(evs []event.Event) bool {
		return count(evs, "HumanInTheLoopInputRequestEvent") == 1
	})
}

// TestPurgedStreamEndsPausedRuns: the class stream is purged under the
// runner (its consumer stays), and the runner restarts, so no cache holds
// the runs' histories either. A paused run's answer still ends it visibly,
// never leaving it waiting.
func TestPurgedStreamEndsPausedRuns(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("Purged")
	w := watch(t, c, class)
	st := newStore(t, target{name: "embedded", natsURL: s.URL()}, c)
	r := startRunner(t, &greeter{class: class}, agent.WithNATS(s.URL()), agent.WithStore(st), agent.Standalone(), quiet(t))

	run, req := askedRun(t, c, w, class)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	stream, err := c.JetStream().Stream(context.Background(), topic.StreamName(class))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(context.Background()); err != nil {
		t.Fatal(err)
	}
	startRunner(t, &greeter{class: class}, agent.WithNATS(s.URL()), agent.WithStore(st), agent.Standalone(), quiet(t))
	publish(t, c, run, &event.HumanInTheLoopInputResponseEvent{Response: "Ada", RequestEvent: req}, nil)
	evs := w.until(t, run.Run, "an end", func(evs []event.Event) bool { return findTerminal(evs) != nil })
	switch findTerminal(evs).(type) {
	case *event.StopEvent, *event.ExceptionEvent:
	default:
		t.Fatalf("the purged run ended with %s", names(evs))
	}
}
