package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
)

// sliceStream replays events.
type sliceStream struct {
	evs []llm.StreamEvent
	i   int
	err error
}

func (s *sliceStream) Next() bool {
	if s.i >= len(s.evs) {
		return false
	}
	s.i++
	return true
}
func (s *sliceStream) Event() llm.StreamEvent { return s.evs[s.i-1] }
func (s *sliceStream) Err() error             { return s.err }
func (s *sliceStream) Close() error           { return nil }

// randomResponse makes an answer with up to six blocks of every kind.
func randomResponse(r *rand.Rand) *llm.Response {
	resp := &llm.Response{Model: "m", Message: llm.Message{Role: llm.RoleAssistant},
		Usage: llm.Usage{InputTokens: 1 + r.IntN(500), OutputTokens: 1 + r.IntN(500), CacheReadTokens: r.IntN(3) * 7}}
	words := []string{"alpha ", "βeta ", "<think>", "{", "\"x\"", ":", "1", "}", "\n", "ünï ", "", "end."}
	text := func() string {
		var sb strings.Builder
		for n := 1 + r.IntN(8); n > 0; n-- {
			sb.WriteString(words[r.IntN(len(words))])
		}
		if sb.Len() == 0 {
			sb.WriteString("x")
		}
		return sb.String()
	}
	tools := 0
	for n := 1 + r.IntN(6); n > 0; n-- {
		switch r.IntN(3) {
		case 0:
			resp.Message.Content = append(resp.Message.Content, llm.Text(text()))
		case 1:
			sig := ""
			if r.IntN(2) == 0 {
				sig = fmt.Sprintf("sig%d", r.IntN(100))
			}
			resp.Message.Content = append(resp.Message.Content, llm.Block{Kind: llm.BlockThinking, Text: text(), Signature: sig})
		default:
			tools++
			args, _ := json.Marshal(map[string]any{"q": text(), "n": r.IntN(10), "nested": map[string]any{"ok": r.IntN(2) == 0}})
			resp.Message.Content = append(resp.Message.Content, llm.ToolUse(fmt.Sprintf("call_%d", tools), fmt.Sprintf("tool%d", r.IntN(3)), args))
		}
	}
	resp.StopReason = llm.StopEndTurn
	if tools > 0 {
		resp.StopReason = llm.StopToolUse
	}
	if r.IntN(4) == 0 {
		resp.StopReason = llm.StopMaxTokens
	}
	return resp
}

// split cuts s into 1..4 random pieces, some possibly empty.
func split(r *rand.Rand, s string) []string {
	n := 1 + r.IntN(4)
	var out []string
	for i := 0; i < n-1 && len(s) > 0; i++ {
		k := r.IntN(len(s) + 1)
		out = append(out, s[:k])
		s = s[k:]
	}
	return append(out, s)
}

// streamOf turns resp into a stream as a provider might send it: deltas
// of random sizes, the argument fragments of parallel tool calls
// interleaved, usage in parts, the stop last.
func streamOf(r *rand.Rand, resp *llm.Response) []llm.StreamEvent {
	type queue struct{ evs []llm.StreamEvent }
	var qs []*queue
	for i, b := range resp.Message.Content {
		q := &queue{}
		switch b.Kind {
		case llm.BlockText:
			for _, p := range split(r, b.Text) {
				q.evs = append(q.evs, llm.StreamEvent{Kind: llm.EventText, Index: i, Text: p})
			}
		case llm.BlockThinking:
			for _, p := range split(r, b.Text) {
				q.evs = append(q.evs, llm.StreamEvent{Kind: llm.EventThinking, Index: i, Text: p})
			}
			if b.Signature != "" {
				q.evs = append(q.evs, llm.StreamEvent{Kind: llm.EventThinking, Index: i, Signature: b.Signature})
			}
		case llm.BlockToolUse:
			q.evs = append(q.evs, llm.StreamEvent{Kind: llm.EventToolUseStart, Index: i, ToolUseID: b.ToolUseID, ToolName: b.ToolName})
			for _, p := range split(r, string(b.Input)) {
				q.evs = append(q.evs, llm.StreamEvent{Kind: llm.EventToolUseDelta, Index: i, Text: p})
			}
			q.evs = append(q.evs, llm.StreamEvent{Kind: llm.EventToolUseEnd, Index: i, ToolUseID: b.ToolUseID})
		}
		qs = append(qs, q)
	}
	evs := []llm.StreamEvent{{Kind: llm.EventUsage, Usage: llm.Usage{InputTokens: resp.Usage.InputTokens, CacheReadTokens: resp.Usage.CacheReadTokens}}}
	// Blocks open in order; a tool block's fragments may interleave with
	// the next tool block's once both are open (OpenAI's parallel calls).
	for i := 0; i < len(qs); {
		q := qs[i]
		if len(q.evs) == 0 {
			i++
			continue
		}
		j := i
		if i+1 < len(qs) && resp.Message.Content[i].Kind == llm.BlockToolUse && resp.Message.Content[i+1].Kind == llm.BlockToolUse &&
			len(qs[i+1].evs) > 0 && r.IntN(3) == 0 {
			j = i + 1
		}
		evs = append(evs, qs[j].evs[0])
		qs[j].evs = qs[j].evs[1:]
	}
	evs = append(evs, llm.StreamEvent{Kind: llm.EventStop, StopReason: resp.StopReason, Usage: llm.Usage{OutputTokens: resp.Usage.OutputTokens}})
	evs[0].Model = resp.Model
	return evs
}

// Folding a stream gives the non-streaming answer, for random answers cut
// into random deltas.
func TestAccumulatorProperty(t *testing.T) {
	for seed := uint64(0); seed < 500; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		want := randomResponse(r)
		evs := streamOf(r, want)
		got, err := llm.Collect(&sliceStream{evs: evs})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("seed %d: folded stream differs from the answer (-want +got):\n%s\nevents: %+v", seed, d, evs)
		}
	}
}

// The scripted provider's turns: the folded stream equals Generate's
// answer, which the turn builds from its own record.
func TestAccumulatorScriptedFixtures(t *testing.T) {
	fixtures := map[string]func() *llmtest.Turn{
		"text": func() *llmtest.Turn { return llmtest.Reply("Hel", "lo", ", world").Usage(3, 4).Model("m-1") },
		"parallel": func() *llmtest.Turn {
			return llmtest.NewTurn().Text("Let me look.").Tool("a", "add", `{"a":1,"b":2}`, `{"a":1`, `,"b":2}`).Tool("b", "now", ``)
		},
		"thinking": func() *llmtest.Turn {
			return llmtest.NewTurn().Think("sig", "Hmm, ", "two plus two").Text("4").Usage(9, 9)
		},
		"refusal": func() *llmtest.Turn { return llmtest.Reply("I can't help with that.").Stop(llm.StopRefusal) },
		"max":     func() *llmtest.Turn { return llmtest.Reply("cut sh").Stop(llm.StopMaxTokens) },
	}
	for name, mk := range fixtures {
		t.Run(name, func(t *testing.T) {
			p := llmtest.New(mk(), mk())
			ctx := context.Background()
			s, err := p.Stream(ctx, &llm.Request{})
			if err != nil {
				t.Fatal(err)
			}
			folded, err := llm.Collect(s)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := p.Generate(ctx, &llm.Request{})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(whole, folded); d != "" {
				t.Errorf("(-generate +stream):\n%s", d)
			}
		})
	}
}

// Failures: an error mid-stream and a stream without its stop keep what
// arrived and say what happened.
func TestCollectFailures(t *testing.T) {
	boom := &llm.Error{Kind: llm.ErrOverloaded, Provider: "scripted", Message: "busy"}
	p := llmtest.New(
		llmtest.Reply("partial ").Fail(boom).Text("never"),
		llmtest.Reply("cut").Truncate(),
		llmtest.NewTurn().FailToOpen(boom),
	)
	s, _ := p.Stream(context.Background(), &llm.Request{})
	resp, err := llm.Collect(s)
	if !errors.Is(err, &llm.Error{Kind: llm.ErrOverloaded}) || resp.Message.Text() != "partial " {
		t.Errorf("mid-stream error: %v, text %q", err, resp.Message.Text())
	}
	s, _ = p.Stream(context.Background(), &llm.Request{})
	resp, err = llm.Collect(s)
	if !errors.Is(err, llm.ErrTruncated) || resp.Message.Text() != "cut" {
		t.Errorf("truncated: %v, text %q", err, resp.Message.Text())
	}
	if _, err := p.Stream(context.Background(), &llm.Request{}); !errors.Is(err, boom) {
		t.Errorf("open error: %v", err)
	}
	if _, err := p.Stream(context.Background(), &llm.Request{}); !errors.Is(err, llmtest.ErrNoTurn) {
		t.Errorf("after the script: %v", err)
	}
}

// A held stream ends when the caller cancels.
func TestScriptedHoldCancels(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := llmtest.New(llmtest.Reply("a").Hold()).Stream(ctx, &llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Next() || s.Event().Text != "a" {
		t.Fatal("first event")
	}
	cancel()
	if s.Next() || !errors.Is(s.Err(), context.Canceled) {
		t.Fatalf("after cancel: %v", s.Err())
	}
}

func TestAccumulatorEdgeCases(t *testing.T) {
	t.Run("kind conflict", func(t *testing.T) {
		var a llm.Accumulator
		_ = a.Add(llm.StreamEvent{Kind: llm.EventText, Index: 0, Text: "x"})
		err := a.Add(llm.StreamEvent{Kind: llm.EventToolUseDelta, Index: 0, Text: "{"})
		if err == nil || !strings.Contains(err.Error(), "block 0") {
			t.Errorf("err = %v, want a conflict naming block 0", err)
		}
	})
	t.Run("negative index", func(t *testing.T) {
		var a llm.Accumulator
		if err := a.Add(llm.StreamEvent{Kind: llm.EventText, Index: -1}); err == nil {
			t.Error("no error")
		}
	})
	t.Run("unknown kind", func(t *testing.T) {
		var a llm.Accumulator
		if err := a.Add(llm.StreamEvent{Kind: 200}); err == nil || !strings.Contains(err.Error(), "unknown kind") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("gaps and empty arguments", func(t *testing.T) {
		var a llm.Accumulator
		_ = a.Add(llm.StreamEvent{Kind: llm.EventToolUseStart, Index: 2, ToolUseID: "c", ToolName: "now"})
		_ = a.Add(llm.StreamEvent{Kind: llm.EventText, Index: 0, Text: "hi"})
		r := a.Response()
		want := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("hi"), llm.ToolUse("c", "now", json.RawMessage("{}"))}}, StopReason: llm.StopToolUse}
		agentEqual(t, r, want)
		if a.Stopped() {
			t.Error("stopped before the stop")
		}
	})
	t.Run("usage replaces non-zero fields", func(t *testing.T) {
		var a llm.Accumulator
		_ = a.Add(llm.StreamEvent{Kind: llm.EventUsage, Usage: llm.Usage{InputTokens: 10, OutputTokens: 1}})
		_ = a.Add(llm.StreamEvent{Kind: llm.EventUsage, Usage: llm.Usage{OutputTokens: 7, ReasoningTokens: 3}})
		_ = a.Add(llm.StreamEvent{Kind: llm.EventStop, StopReason: llm.StopEndTurn})
		agentEqual(t, a.Response().Usage, llm.Usage{InputTokens: 10, OutputTokens: 7, ReasoningTokens: 3})
		if !a.Stopped() || a.Response().Usage.Total() != 17 {
			t.Errorf("stopped %v, total %d", a.Stopped(), a.Response().Usage.Total())
		}
	})
	t.Run("model from the first event that names it", func(t *testing.T) {
		var a llm.Accumulator
		_ = a.Add(llm.StreamEvent{Kind: llm.EventText, Model: "first"})
		_ = a.Add(llm.StreamEvent{Kind: llm.EventText, Model: "second"})
		if m := a.Response().Model; m != "first" {
			t.Errorf("model %q", m)
		}
	})
}

func agentEqual[T any](t *testing.T, got, want T) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
