package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/embedhook"
	"github.com/saap-go/agent/step"
)

type linkless struct{}

func (linkless) Steps() []*step.Step {
	return []*step.Step{step.New(func(step.Context, *event.UserMessageEvent) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("Answer"))}
}

// TestRunWithoutAServerNamesTheImport: with no NATS server configured and
// no embedded one linked, Run says which import starts one.
func TestRunWithoutAServerNamesTheImport(t *testing.T) {
	t.Setenv("NATS_URL", "")
	t.Setenv("REDIS_URL", "")
	saved := embedhook.Start
	embedhook.Start = nil
	t.Cleanup(func() { embedhook.Start = saved })
	r, err := New(linkless{}, Standalone())
	if err != nil {
		t.Fatal(err)
	}
	err = r.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), `import _ "github.com/saap-go/agent/embedded"`) {
		t.Fatalf("Run = %v, want an error naming the embedded server's import", err)
	}
}
