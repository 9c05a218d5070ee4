package devdemo

import (
	"os"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/step"
)

// TestReplay replays the recorded runs in testdata/recordings and the one
// `saap replay` names. DEVDEMO_PREFIX changes the replies, so the saap
// command's tests can see a replay differ.
func TestReplay(t *testing.T) {
	e := &Echo{Prefix: os.Getenv("DEVDEMO_PREFIX")}
	w, err := step.NewWorkflow(e.Class(), e.Steps()...)
	if err != nil {
		t.Fatal(err)
	}
	agenttest.ReplayRecordings(t, w)
}
