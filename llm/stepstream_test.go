package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
	"github.com/saap-go/agent/step"
)

// fakeContext is a step.Context that records what a step emits.
type fakeContext struct {
	context.Context
	emitted []event.Event
	discard bool
}

func (c *fakeContext) Run() step.Run             { return step.Run{} }
func (c *fakeContext) RunState() step.State      { return nil }
func (c *fakeContext) ThreadState() step.State   { return nil }
func (c *fakeContext) IdempotencyKey() string    { return "k" }
func (c *fakeContext) Logger() *slog.Logger      { return slog.New(slog.DiscardHandler) }
func (c *fakeContext) Tracer() trace.Tracer      { return noop.NewTracerProvider().Tracer("") }
func (c *fakeContext) Config() any               { return nil }
func (c *fakeContext) Locale() string            { return step.DefaultLocale }
func (c *fakeContext) Translate(k string) string { return k }
func (c *fakeContext) Emit(e event.Event) error {
	if event.IsControl(e) {
		return errors.New("control event")
	}
	if !c.discard {
		c.emitted = append(c.emitted, e)
	}
	return nil
}

func TestThinkSplitterEveryCut(t *testing.T) {
	text := "a<b<think>reason <x></think>answer</think> <think"
	// Every way of cutting the text in three gives the same pieces.
	for i := 0; i <= len(text); i++ {
		for j := i; j <= len(text); j++ {
			var s llm.ThinkSplitter
			var segs []llm.Segment
			for _, d := range []string{text[:i], text[i:j], text[j:]} {
				segs = s.Split(d, segs)
			}
			segs = s.Flush(segs)
			var thought, answer strings.Builder
			for _, g := range segs {
				if g.Thought {
					thought.WriteString(g.Text)
				} else {
					answer.WriteString(g.Text)
				}
			}
			if thought.String() != "reason <x>" || answer.String() != "a<banswer</think> <think" {
				t.Fatalf("cut at %d,%d: thought %q, answer %q", i, j, thought.String(), answer.String())
			}
		}
	}
}

func TestSplitThinkTags(t *testing.T) {
	m := llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.Text("<think>plan</think>Answer"), llm.ToolUse("c", "t", json.RawMessage(`{}`))}}
	got := llm.SplitThinkTags(m)
	want := []llm.Block{{Kind: llm.BlockThinking, Text: "plan"}, llm.Text("Answer"), llm.ToolUse("c", "t", json.RawMessage(`{}`))}
	agentEqual(t, got.Content, want)
	if plain := llm.AssistantText("no tags"); len(llm.SplitThinkTags(plain).Content) != 1 {
		t.Error("a message without tags changed")
	}
}

func TestStreamToEvents(t *testing.T) {
	p := llmtest.New(llmtest.NewTurn().Think("s", "hmm").Text("Hel", "lo").Usage(5, 2).Model("m-9"))
	ctx := &fakeContext{Context: context.Background()}
	call, err := llm.StreamTo(ctx, p, &llm.Request{Model: "m", System: "Be brief.", Messages: []llm.Message{llm.UserText("hi")}},
		llm.WithChunkModel("shown"), llm.WithPrices(llm.Prices{"m-": {Input: 1, Output: 2}}))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ctx.emitted {
		names = append(names, event.Name(e))
	}
	agentEqual(t, names, []string{"ThoughtEvent", "ChunkEvent", "ChunkEvent", "LLMCostEvent"})
	agentEqual(t, ctx.emitted[1].(*event.ChunkEvent).ModelName, "shown")
	ev := call.Event
	agentEqual(t, len(ev.InputMessages), 2)
	agentEqual(t, ev.InputMessages[0].Role, "system")
	agentEqual(t, ev.OutputMessages[0].Content(), "Hello")
	agentEqual(t, *ev.ChatModelName, "m-9")
	agentEqual(t, string(ev.InvocationParameters["model"]), `"m"`)
	stop := call.StopEvent()
	if !event.IsStop(stop) || stop.OutputMessages[0].Content() != "Hello" || stop.EventID != "" {
		t.Errorf("stop event %+v", stop)
	}
	// The stop event is valid on the wire.
	if _, err := event.Marshal(stop); err != nil {
		t.Error(err)
	}
}

// Cancelling the run's context ends a call that is waiting for the model.
func TestStreamToCancel(t *testing.T) {
	base, cancel := context.WithCancel(context.Background())
	ctx := &fakeContext{Context: base}
	p := llmtest.New(llmtest.Reply("first").Hold())
	done := make(chan error, 1)
	go func() {
		_, err := llm.StreamTo(ctx, p, &llm.Request{})
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestStreamToErrors(t *testing.T) {
	ctx := &fakeContext{Context: context.Background()}
	rate := &llm.Error{Kind: llm.ErrRateLimited, Provider: "x", Message: "secret org id"}
	_, err := llm.StreamTo(ctx, llmtest.New(llmtest.NewTurn().FailToOpen(rate)), &llm.Request{})
	msg, ok := step.UserMessage(err)
	code, _ := step.HTTPStatus(err)
	if !ok || strings.Contains(msg, "secret") || code != 429 || !errors.Is(err, rate) {
		t.Errorf("err %v: user message %q, status %d", err, msg, code)
	}
	_, err = llm.StreamTo(ctx, llmtest.New(llmtest.Reply("x").Truncate()), &llm.Request{})
	if code, _ := step.HTTPStatus(err); !errors.Is(err, llm.ErrTruncated) || code != 503 {
		t.Errorf("truncated: %v (%d)", err, code)
	}
	_, err = llm.StreamTo(ctx, llmtest.New(), &llm.Request{})
	if _, ok := step.HTTPStatus(err); !errors.Is(err, llmtest.ErrNoTurn) || ok {
		t.Errorf("plain error: %v", err)
	}
}

type weatherArgs struct {
	City string `json:"city" jsonschema:"description=the city"`
	Days int    `json:"days,omitempty"`
}

func TestFuncToolSchemaAndCall(t *testing.T) {
	tool := llm.Func("weather", "Forecast.", func(_ context.Context, a weatherArgs) (map[string]any, error) {
		return map[string]any{"city": a.City, "days": a.Days}, nil
	})
	var schema map[string]any
	if err := json.Unmarshal(tool.Definition().Schema, &schema); err != nil {
		t.Fatal(err)
	}
	props, _ := schema["properties"].(map[string]any)
	city, _ := props["city"].(map[string]any)
	if schema["type"] != "object" || city["type"] != "string" || city["description"] != "the city" || schema["$schema"] != nil || schema["$ref"] != nil {
		t.Errorf("schema %s", tool.Definition().Schema)
	}
	agentEqual(t, schema["required"], any([]any{"city"}))
	out, err := tool.Call(context.Background(), json.RawMessage(`{"city":"Bern","days":2}`))
	if err != nil || out != `{"city":"Bern","days":2}` {
		t.Errorf("call: %q %v", out, err)
	}
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"city":3}`)); err == nil || !strings.Contains(err.Error(), "invalid arguments for weather") {
		t.Errorf("bad arguments: %v", err)
	}
	if _, err := llm.Raw("r", "", json.RawMessage(`[1]`), nil); err == nil {
		t.Error("Raw accepted a schema that is not an object")
	}
	raw, err := llm.Raw("echo", "Echoes.", json.RawMessage(`{"type":"object"}`), func(_ context.Context, a json.RawMessage) (string, error) { return string(a), nil })
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := raw.Call(context.Background(), json.RawMessage(`{"x":1}`)); out != `{"x":1}` {
		t.Errorf("raw call %q", out)
	}
}

// BenchmarkStreamTextDelta measures one text delta through the stream to
// the ChunkEvent handed to Emit (which discards it), with <think> tags
// watched for; allocs/op is per delta.
func BenchmarkStreamTextDelta(b *testing.B) {
	for _, tags := range []bool{true, false} {
		name := "think-tags"
		if !tags {
			name = "no-think-tags"
		}
		b.Run(name, func(b *testing.B) {
			const n = 1000
			turn := llmtest.NewTurn()
			pieces := make([]string, n)
			for i := range pieces {
				pieces[i] = "tok "
			}
			turn.Text(pieces...)
			var opts []llm.StreamOption
			if !tags {
				opts = append(opts, llm.WithoutThinkTags())
			}
			ctx := &fakeContext{Context: context.Background(), discard: true}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += n {
				p := llmtest.New(turn)
				if _, err := llm.StreamTo(ctx, p, &llm.Request{Model: "m"}, opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStreamTextDeltaBaseline is the floor StreamTo is compared
// with: the same stream read by hand, each delta wrapped in a ChunkEvent
// and emitted, with no accumulation and no tag watching.
func BenchmarkStreamTextDeltaBaseline(b *testing.B) {
	const n = 1000
	pieces := make([]string, n)
	for i := range pieces {
		pieces[i] = "tok "
	}
	turn := llmtest.NewTurn().Text(pieces...)
	ctx := &fakeContext{Context: context.Background(), discard: true}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += n {
		s, err := llmtest.New(turn).Stream(ctx, &llm.Request{Model: "m"})
		if err != nil {
			b.Fatal(err)
		}
		for s.Next() {
			if ev := s.Event(); ev.Kind == llm.EventText {
				if err := ctx.Emit(&event.ChunkEvent{Content: ev.Text, ModelName: "m"}); err != nil {
					b.Fatal(err)
				}
			}
		}
		s.Close()
	}
}
