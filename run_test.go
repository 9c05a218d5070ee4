package agent_test

import (
	"os"
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/crashtest"

	agent "github.com/saap-go/agent"
)

func TestMain(m *testing.M) {
	crashtest.Main(helperModes)
	os.Exit(m.Run())
}

var helperModes = map[string]func() int{}

func TestRunLinearAgent(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		c := client(t, tg.natsURL)
		class := uniqueClass("Linear")
		dropStream(t, c, class)
		w := watch(t, c, class)
		startRunner(t, &linear{class: class}, agent.WithNATS(tg.natsURL), storeFor(t, tg, c), agent.Standalone())

		run := newRun(class, "dev")
		publish(t, c, run, userMessage("hello"), nil)
		term := w.terminal(t, run.Run)
		if !event.IsStop(term) {
			t.Fatalf("terminal event %s, want StopEvent; events %s", event.Name(term), names(w.of(run.Run)))
		}
		if n := count(w.of(run.Run), "ChunkEvent"); n != 1 {
			t.Errorf("%d ChunkEvents, want 1", n)
		}
	})
}
