package engine_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/saap-go/agent/internal/engine"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/step"
)

// A StartEvent seeds the run: the configuration, the X-AIHub headers and
// every public field of the start event land in the run context.
func TestStartSeedsRunContext(t *testing.T) {
	var seen map[string]json.RawMessage
	s := step.New(func(ctx step.Context, q *Question) (*Retrieved, error) {
		seen = map[string]json.RawMessage{}
		keys, err := ctx.RunState().Keys(ctx)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			var v json.RawMessage
			if _, err := ctx.RunState().Get(ctx, k, &v); err != nil {
				return nil, err
			}
			seen[k] = v
		}
		return &Retrieved{}, nil
	}, step.Name("s"))
	w, err := step.NewPartialWorkflow("Seed", s)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	b := memory.New(memory.Options{Manual: true})
	defer b.Close()
	startEngines(t, b, w, memstore.New(), 1)
	h := bus.Header{}
	h.Set("X-AIHub-User-Token", "tok")
	h.Set("Other", "x")
	startRun(t, b, "Seed", &Question{Text: "hello"}, h)
	b.DeliverAll(ctx)

	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{engine.KeyAgentConfig, engine.KeyAIHubHeaders, "display_description", "display_name", "text"}
	if !slices.Equal(keys, want) {
		t.Fatalf("run context keys %q, want %q", keys, want)
	}
	if string(seen["text"]) != `"hello"` {
		t.Fatalf("text = %s, want \"hello\"", seen["text"])
	}
	var hdr map[string]string
	if err := json.Unmarshal(seen[engine.KeyAIHubHeaders], &hdr); err != nil || hdr["x-aihub-user-token"] != "tok" || len(hdr) != 1 {
		t.Fatalf("_aihub_headers = %s, %v; want only x-aihub-user-token", seen[engine.KeyAIHubHeaders], err)
	}
	if string(seen[engine.KeyAgentConfig]) != `{}` {
		t.Fatalf("_agent_config = %s, want {} from the default resolver", seen[engine.KeyAgentConfig])
	}
}
