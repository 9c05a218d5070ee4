package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	agent "github.com/saap-go/agent"
)

// TestWithReplicasOnSingleServer: three copies cannot be kept by one
// server, so the start fails with the server's refusal instead of running
// with fewer copies than asked for. (The fault suite's cluster test runs
// WithReplicas(3) on a three-node cluster.)
func TestWithReplicasOnSingleServer(t *testing.T) {
	noExternal(t)
	if _, err := agent.New(&linear{class: "Opt"}, agent.WithReplicas(6)); err == nil || !strings.Contains(err.Error(), "WithReplicas") {
		t.Errorf("WithReplicas(6): %v, want an error naming WithReplicas", err)
	}
	r, err := agent.New(&linear{class: uniqueClass("Replicas")}, agent.Standalone(), quiet(t),
		agent.WithDataDir(t.TempDir()), agent.WithReplicas(3))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = r.Run(ctx)
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "replicas") {
		t.Fatalf("Run with 3 replicas on one server: %v, want the server's refusal naming replicas", err)
	}
	t.Logf("Run: %v", err)
}
