package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestOfficialOpenAIClient runs interop/openai/run.mjs: the official openai
// npm client lists a model, uses it, reads usage (streamed and not) and
// sees a parameter the endpoint cannot honour refused.
func TestOfficialOpenAIClient(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the official OpenAI client test needs it")
	}
	dir, err := filepath.Abs(filepath.Join("..", "interop", "openai"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Skipf("%s/node_modules is missing: run `npm ci` there for the official client test", dir)
	}
	e := newEnv(t, buses[0].new)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "run.mjs", e.srv.URL, tokenAlice)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node: %v\n%s", err, stderr)
	}
	type usage struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
		Total      int `json:"total_tokens"`
	}
	var res struct {
		Models     []string `json:"models"`
		Completion struct {
			Model   string `json:"model"`
			Content string `json:"content"`
			Usage   *usage `json:"usage"`
		} `json:"completion"`
		Stream struct {
			Content string `json:"content"`
			Usage   *usage `json:"usage"`
		} `json:"stream"`
		Tools struct {
			Status int     `json:"status"`
			Param  *string `json:"param"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	if !slices.Equal(res.Models, []string{"EchoAgent"}) {
		t.Errorf("models %q", res.Models)
	}
	want := usage{11, 4, 15}
	if c := res.Completion; c.Model != "EchoAgent" || c.Content != "Hello" || c.Usage == nil || *c.Usage != want {
		t.Errorf("completion with the listed model: %+v (usage %+v), want Hello and %+v", c, c.Usage, want)
	}
	if s := res.Stream; s.Content != "Hello" || s.Usage == nil || *s.Usage != want {
		t.Errorf("stream: %+v (usage %+v), want Hello and %+v", s, s.Usage, want)
	}
	if res.Tools.Status != 400 || res.Tools.Param == nil || *res.Tools.Param != "tools" {
		t.Errorf("tools: %+v, want a 400 naming tools", res.Tools)
	}
}
