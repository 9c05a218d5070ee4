package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
)

func userText(s string) []llm.Message { return []llm.Message{llm.UserText(s)} }

func assistantText(s string) llm.Message { return llm.AssistantText(s) }

func ptr[T any](v T) *T { return &v }

func TestRunInParallel(t *testing.T) {
	// Each guard waits until the other has started: run one after the
	// other, they would never decide.
	a, b := make(chan struct{}), make(chan struct{})
	wait := func(own, other chan struct{}) func(context.Context, *Check) (Verdict, error) {
		return func(ctx context.Context, _ *Check) (Verdict, error) {
			close(own)
			select {
			case <-other:
				return Accept("ok"), nil
			case <-time.After(30 * time.Second):
				return Verdict{}, errors.New("the other guard never started: guards ran one after the other")
			}
		}
	}
	before := time.Now().UnixNano()
	out, err := Run(context.Background(), &Check{Stage: Input}, Func("a", wait(a, b)), Func("b", wait(b, a)))
	after := time.Now().UnixNano()
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Decisions) != 2 || out.Decisions[0].Guard != "a" || out.Decisions[1].Guard != "b" || !out.Accepted() {
		t.Fatalf("decisions %+v", out.Decisions)
	}
	for _, d := range out.Decisions {
		if _, ok := d.Event.(*event.GuardAcceptEvent); !ok {
			t.Errorf("%s: event %T, want GuardAcceptEvent", d.Guard, d.Event)
		}
		var s, e int64
		rs, _ := event.Extra(d.Event, "started_at")
		re, _ := event.Extra(d.Event, "ended_at")
		if json.Unmarshal(rs, &s) != nil || json.Unmarshal(re, &e) != nil || s < before || e < s || e > after {
			t.Errorf("%s: started_at %s, ended_at %s, want within [%d, %d]", d.Guard, rs, re, before, after)
		}
	}
}

func TestRunErrors(t *testing.T) {
	_, err := Run(context.Background(), &Check{}, Func("boom", func(context.Context, *Check) (Verdict, error) { panic("boom") }),
		Func("fails", func(context.Context, *Check) (Verdict, error) { return Verdict{}, errors.New("down") }), nil)
	if err == nil || !strings.Contains(err.Error(), "guard boom: the guard panicked: boom") || !strings.Contains(err.Error(), "guard fails: down") ||
		!strings.Contains(err.Error(), "nil Guard") {
		t.Errorf("error %v", err)
	}
}

func TestInputSize(t *testing.T) {
	g := &InputSize{Budget: 10, Count: func(s string) int { return len(strings.Fields(s)) }}
	c := &Check{Stage: Input, System: "be brief", Messages: []llm.Message{
		llm.UserText(strings.Repeat("old ", 100)), llm.AssistantText("ok"), llm.UserText("three short words")}}
	// The old turns can be trimmed; the system prompt and the last turn cannot.
	// One token for each role, as the reference counts.
	if n := g.Tokens(c); n != 1+2+1+3 {
		t.Errorf("Tokens = %d, want 7", n)
	}
	if v, _ := g.Check(context.Background(), c); !v.Accepted {
		t.Errorf("within the budget: %+v", v)
	}
	c.Messages = append(c.Messages, llm.Message{Role: llm.RoleUser, Content: []llm.Block{{Kind: llm.BlockImage, URL: "http://x/y.png"}}})
	v, _ := g.Check(context.Background(), c)
	if v.Accepted || v.Refusal != event.RefusalInputTooLarge || !strings.Contains(v.Reason, "2129 tokens") {
		t.Errorf("an image over the budget: %+v", v)
	}
	if v, _ := (&InputSize{}).Check(context.Background(), c); !v.Accepted {
		t.Errorf("no budget: %+v", v)
	}
	if EstimateTokens("abcde") != 2 || EstimateTokens("") != 0 {
		t.Errorf("EstimateTokens")
	}
}

func TestParseJudgement(t *testing.T) {
	for _, c := range []struct {
		text string
		want Judgement
		err  bool
	}{
		{`{"success": true, "reasoning": "fits"}`, Judgement{Success: true, Reasoning: "fits"}, false},
		{"```json\n{\"success\": false, \"reasoning\": \"off topic\"}\n```", Judgement{Reasoning: "off topic"}, false},
		{`Sure. {"note": 1} then {"success": false, "reason": "r", "new_query": " q "}`, Judgement{Reasoning: "r", NewQuery: "q"}, false},
		{`{"success": "yes"}`, Judgement{}, true},
		{`I think it is fine.`, Judgement{}, true},
		{`{"success": tru`, Judgement{}, true},
		{``, Judgement{}, true},
	} {
		got, err := ParseJudgement(c.text)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseJudgement(%q) = %+v, %v; want %+v, error %v", c.text, got, err, c.want, c.err)
		}
		if err != nil && !errors.Is(err, ErrNoVerdict) {
			t.Errorf("error %v does not wrap ErrNoVerdict", err)
		}
	}
}

func FuzzParseJudgement(f *testing.F) {
	for _, s := range []string{`{"success": true}`, "```{", `{{{`, `x{"success":false,"reasoning":"a"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := ParseJudgement(s); err != nil && !errors.Is(err, ErrNoVerdict) {
			t.Fatalf("error %v does not wrap ErrNoVerdict", err)
		}
	})
}

func TestModelJudge(t *testing.T) {
	p := llmtest.New(llmtest.Reply(`{"success": false, "reasoning": "The agent answers tax questions only."}`), llmtest.Reply("no idea"))
	j := &ModelJudge{Provider: p, Model: "judge-model"}
	g := &AgentSuitability{Description: "Answers questions on Swiss taxes.", Judge: j}
	c := &Check{Stage: Input, Messages: []llm.Message{llm.UserText("hi"), llm.AssistantText("Hello!"), llm.UserText("Write me a poem.")}}
	v, err := g.Check(context.Background(), c)
	if err != nil || v.Accepted || v.Reason != "The agent answers tax questions only." || v.Refusal != event.RefusalOutOfScope {
		t.Fatalf("verdict %+v, %v", v, err)
	}
	req := p.Requests()[0]
	prompt := req.Messages[0].Text()
	if req.Model != "judge-model" || !strings.Contains(req.System, `"success"`) || !strings.Contains(prompt, "Answers questions on Swiss taxes.") ||
		!strings.Contains(prompt, "User: hi\nAgent: Hello!\n") || !strings.HasSuffix(prompt, "Write me a poem.") {
		t.Errorf("request %+v, prompt %q", req, prompt)
	}
	// An answer without a verdict accepts, as the reference's guards do.
	v, err = g.Check(context.Background(), c)
	if err != nil || !v.Accepted {
		t.Errorf("no verdict: %+v, %v", v, err)
	}
	// A failing model fails the guard.
	v, err = g.Check(context.Background(), c)
	if err == nil {
		t.Errorf("a failing judge: %+v, no error", v)
	}
}

func fixed(j Judgement) Judge {
	return JudgeFunc(func(context.Context, string, string) (Judgement, error) { return j, nil })
}

func TestJudgedGuards(t *testing.T) {
	ctx := context.Background()
	c := &Check{Stage: Input, Messages: userText("q")}
	// Few-shot without examples accepts without asking.
	v, err := (&FewShot{Judge: JudgeFunc(func(context.Context, string, string) (Judgement, error) {
		return Judgement{}, errors.New("must not be asked")
	})}).Check(ctx, c)
	if err != nil || !v.Accepted {
		t.Errorf("few-shot without examples: %+v, %v", v, err)
	}
	// Few-shot with examples: the prompt shows them; a soft rejection.
	var prompt string
	fs := &FewShot{Examples: []Example{{User: "What is VAT?", Success: true, Reason: "tax"}, {User: "Tell a joke", Reason: "not tax"}},
		OnReject: "Tell the user you answer tax questions.",
		Judge: JudgeFunc(func(_ context.Context, _, p string) (Judgement, error) {
			prompt = p
			return Judgement{Reasoning: "not about tax"}, nil
		})}
	v, _ = fs.Check(ctx, c)
	if v.Accepted || v.Instruction != "Tell the user you answer tax questions.\n\nReason: not about tax" ||
		!strings.Contains(prompt, "User: Tell a joke\nSuccess: false\nReason: not tax") {
		t.Errorf("few-shot: %+v, prompt %q", v, prompt)
	}
	if _, ok := fs.Record(v).(*event.FewShotRejectEvent); !ok {
		t.Errorf("few-shot records %T", fs.Record(v))
	}
	// Context sufficiency reads the tool results when no context is given.
	cs := &ContextSufficiency{Judge: JudgeFunc(func(_ context.Context, _, p string) (Judgement, error) {
		prompt = p
		return Judgement{Reasoning: "missing", NewQuery: "better"}, nil
	})}
	cc := &Check{Stage: Input, System: "Docs follow.", Messages: []llm.Message{llm.UserText("q"),
		{Role: llm.RoleTool, Content: []llm.Block{llm.ToolResult("1", "the result", false), llm.ToolResult("2", "failed", true)}}}}
	v, _ = cs.Check(ctx, cc)
	if v.Accepted || v.NewQuery != "better" || v.Instruction != "" || !strings.Contains(prompt, "[1] Docs follow.\n[2] the result\n") ||
		strings.Contains(prompt, "failed") {
		t.Errorf("context: %+v, prompt %q", v, prompt)
	}
	if _, ok := cs.Record(Accept("ok")).(*event.ContextSufficientAcceptEvent); !ok {
		t.Errorf("context accept records %T", cs.Record(Accept("ok")))
	}
	// A judged guard without a judge is an error, not a panic.
	if _, err := (&AgentSuitability{}).Check(ctx, c); err == nil {
		t.Errorf("no judge: no error")
	}
	if v, _ := (&AgentSuitability{Judge: fixed(Judgement{Success: true})}).Check(ctx, c); !v.Accepted || v.Reason != "accepted" {
		t.Errorf("suitability: %+v", v)
	}
}

func TestSetEmits(t *testing.T) {
	s := &Set{Input: []Guard{&InputSize{}, &SensitiveInfo{}, Func("x", nil)}, Output: []Guard{&SensitiveInfo{}}}
	var names []string
	for _, e := range s.Emits() {
		names = append(names, strings.TrimPrefix(fmt.Sprintf("%T", e), "*event."))
	}
	want := "GuardAcceptEvent GuardRejectionEvent SensitiveInfoAcceptEvent SensitiveInfoRejectEvent RefusalStopEvent"
	if strings.Join(names, " ") != want {
		t.Errorf("Emits = %v, want %s", names, want)
	}
}
