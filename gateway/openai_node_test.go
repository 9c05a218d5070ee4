package gateway_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/saap-go/agent/gateway/internal/adaptertest"
)

// TestOfficialOpenAIClient runs interop/openai/run.mjs: the official openai
// npm client lists a model, uses it, reads usage (streamed and not) and
// sees a parameter the endpoint cannot honour refused.
func TestOfficialOpenAIClient(t *testing.T) {
	e := newEnv(t, buses[0].new)
	out := adaptertest.RunNode(t, "openai", e.srv.URL, tokenAlice)
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
