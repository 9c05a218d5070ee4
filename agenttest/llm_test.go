package agenttest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
)

// The tool loop on the scripted model, run by the real engine.

type addArgs struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

func addTool(runs *atomic.Int32) llm.Callable {
	return llm.Func("add", "Adds two numbers.", func(_ context.Context, a addArgs) (float64, error) {
		if runs != nil {
			runs.Add(1)
		}
		return a.A + a.B, nil
	})
}

func userMessage(text string) *event.UserMessageEvent {
	return &event.UserMessageEvent{User: &event.UserIdentity{}, Messages: []event.ChatMessage{event.Text("user", text)}}
}

func loopHarness(t *testing.T, l *llm.Loop) *agenttest.Harness {
	t.Helper()
	return agenttest.New(t, mustWorkflow(t, "ToolAgent", l.Steps()...), agenttest.FailOnStall())
}

// toolResults returns the tool results of the last tool message of req.
func toolResults(req *llm.Request) []llm.Block {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleTool {
			return req.Messages[i].Content
		}
	}
	return nil
}

func TestLLMLoopParallelTools(t *testing.T) {
	// Both tools wait until the other has started: run one after the
	// other, they would never finish.
	aStarted, bStarted := make(chan struct{}), make(chan struct{})
	// toolIn and toolOut are when each tool's function began and returned.
	var toolIn, toolOut [2]atomic.Int64
	wait := func(own, other chan struct{}, n int) func(context.Context, struct{}) (string, error) {
		return func(ctx context.Context, _ struct{}) (string, error) {
			toolIn[n].Store(time.Now().UnixNano())
			defer func() { toolOut[n].Store(time.Now().UnixNano()) }()
			close(own)
			select {
			case <-other:
				return "done", nil
			case <-time.After(30 * time.Second):
				return "", errors.New("the other tool never started: tools ran one after the other")
			}
		}
	}
	p := llmtest.New(
		llmtest.NewTurn().Text("Let me check.").Tool("c1", "a", `{}`).Tool("c2", "b", `{}`).Usage(10, 3),
		llmtest.Reply("Both ", "done.").Usage(20, 2),
	)
	l := &llm.Loop{Provider: p, Model: "m", Tools: []llm.Callable{
		llm.Func("a", "", wait(aStarted, bStarted, 0)), llm.Func("b", "", wait(bStarted, aStarted, 1)),
	}}
	before := time.Now().UnixNano()
	res := loopHarness(t, l).Start(userMessage("go"))
	after := time.Now().UnixNano()

	stop, ok := agenttest.TerminalAs[*event.LLMStopEvent](res)
	if !ok {
		t.Fatalf("terminal %v, want LLMStopEvent", res.Names())
	}
	out := stop.OutputMessages[len(stop.OutputMessages)-1]
	agenttest.Equal(t, out.Content(), "Both done.")
	agenttest.Equal(t, res.Count("LLMEvent"), 1)
	agenttest.Equal(t, res.Count("ToolEvent"), 2)
	tools := res.Get("ToolEvent")
	agenttest.Equal(t, []string{*tools[0].(*event.ToolEvent).Name, *tools[1].(*event.ToolEvent).Name}, []string{"a", "b"})
	// Each ToolEvent carries what its tool returned, for the traces.
	for _, e := range tools {
		raw, _ := event.Extra(e, "result")
		agenttest.Equal(t, string(raw), `"done"`)
	}
	// And when its call started and ended (Unix nanoseconds), for its span.
	for i, e := range tools {
		var start, end int64
		s, _ := event.Extra(e, "started_at")
		f, _ := event.Extra(e, "ended_at")
		if json.Unmarshal(s, &start) != nil || json.Unmarshal(f, &end) != nil ||
			start < before || start > toolIn[i].Load() || end < toolOut[i].Load() || end > after {
			t.Errorf("%s: started_at %s, ended_at %s; want the call inside [%d, %d], the tool ran [%d, %d]",
				*e.(*event.ToolEvent).Name, s, f, before, after, toolIn[i].Load(), toolOut[i].Load())
		}
	}
	reqs := p.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	agenttest.Equal(t, toolResults(reqs[1]), []llm.Block{llm.ToolResult("c1", "done", false), llm.ToolResult("c2", "done", false)})
	// The first call's record shows the tool calls it asked for.
	call := res.Get("LLMEvent")[0].(*event.LLMEvent)
	if len(call.OutputMessages) != 1 || len(call.OutputMessages[0].ToolCalls) != 2 || *call.TokenCountTotal != 13 {
		t.Errorf("LLMEvent output %+v, tokens %v", call.OutputMessages, call.TokenCountTotal)
	}
	// The answer was streamed as chunks before the stop.
	var chunks []string
	for _, e := range res.Display() {
		if c, ok := e.(*event.ChunkEvent); ok {
			chunks = append(chunks, c.Content)
		}
	}
	agenttest.Equal(t, chunks, []string{"Let me check.", "Both ", "done."})
}

func TestLLMLoopToolErrorsGoBackToTheModel(t *testing.T) {
	p := llmtest.New(
		llmtest.NewTurn().Tool("c1", "fails", `{}`).Tool("c2", "panics", `{}`).Tool("c3", "missing", `{}`).Tool("c4", "add", `{"a":"x"}`),
		llmtest.Reply("Sorry, the tools failed."),
	)
	l := &llm.Loop{Provider: p, Tools: []llm.Callable{
		llm.Func("fails", "", func(context.Context, struct{}) (string, error) { return "", errors.New("disk full") }),
		llm.Func("panics", "", func(context.Context, struct{}) (string, error) { panic("boom") }),
		addTool(nil),
	}}
	res := loopHarness(t, l).Start(userMessage("go"))
	if _, ok := agenttest.TerminalAs[*event.LLMStopEvent](res); !ok {
		t.Fatalf("events %v, want the run to end with the model's answer", res.Names())
	}
	got := toolResults(p.Requests()[1])
	if len(got) != 4 {
		t.Fatalf("results %+v", got)
	}
	for i, want := range []string{"error: disk full", "error: the tool panicked: boom", `error: there is no tool named "missing"`, "error: invalid arguments for add"} {
		if !got[i].IsError || !strings.HasPrefix(got[i].Text, want) {
			t.Errorf("result %d = %+v, want an error starting %q", i, got[i], want)
		}
	}
	agenttest.Equal(t, res.Count("ToolEvent"), 3) // the missing tool did not run
	// Each ToolEvent of a failed call carries the error, and no result.
	for _, e := range res.Get("ToolEvent") {
		raw, ok := event.Extra(e, "error")
		if _, has := event.Extra(e, "result"); !ok || has || len(raw) < 3 { // a non-empty JSON string
			t.Errorf("%s: error %s (%v), result set %v", *e.(*event.ToolEvent).Name, raw, ok, has)
		}
	}
}

func TestLLMLoopIterationLimit(t *testing.T) {
	var runs atomic.Int32
	p := llmtest.Func(func(*llm.Request) *llmtest.Turn {
		return llmtest.NewTurn().Tool("c", "add", `{"a":1,"b":1}`)
	})
	l := &llm.Loop{Provider: p, Tools: []llm.Callable{addTool(&runs)}, MaxIterations: 3}
	res := loopHarness(t, l).Start(userMessage("loop forever"))
	exc, ok := agenttest.TerminalAs[*event.ExceptionEvent](res)
	if !ok {
		t.Fatalf("events %v, want an ExceptionEvent", res.Names())
	}
	agenttest.Equal(t, exc.Message, "the agent stopped after 3 model calls without reaching an answer")
	agenttest.Equal(t, len(p.Requests()), 3)
	agenttest.Equal(t, runs.Load(), int32(3))
}

// approvalLoop is an agent whose "transfer" tool needs approval. The
// model is stateless: it calls the tool until it has a result, then
// reports the result, so a new Loop (a restarted agent) answers the same.
func approvalLoop(runs *atomic.Int32, timeout time.Duration) (*llm.Loop, *llmtest.Provider) {
	p := llmtest.Func(func(req *llm.Request) *llmtest.Turn {
		if rs := toolResults(req); rs != nil {
			return llmtest.Reply("Result: " + rs[0].Text)
		}
		return llmtest.NewTurn().Text("I will transfer.").Tool("t1", "transfer", `{"amount": 100}`).Tool("t2", "add", `{"a":1,"b":2}`)
	})
	transfer := llm.Func("transfer", "Moves money.", func(_ context.Context, a struct {
		Amount int `json:"amount"`
	}) (string, error) {
		runs.Add(1)
		return "transferred", nil
	})
	return &llm.Loop{Provider: p, Tools: []llm.Callable{llm.RequireApproval(transfer), addTool(nil)}, ApprovalTimeout: time.Minute}, p
}

// askApproval starts a run and returns the approval question it pauses on.
func askApproval(t *testing.T, h *agenttest.Harness) (*agenttest.Result, *event.ToolApprovalRequestEvent) {
	t.Helper()
	res := h.Start(userMessage("send 100"))
	qs := res.Get("ToolApprovalRequestEvent")
	if len(qs) != 1 || res.Terminal() != nil {
		t.Fatalf("events %v, want the run paused on one approval question", res.Names())
	}
	q := qs[0].(*event.ToolApprovalRequestEvent)
	agenttest.Equal(t, []string{q.ToolCallID, q.Name, string(q.Arguments["amount"])}, []string{"t1", "transfer", "100"})
	if !strings.HasPrefix(q.Question, `Allow the agent to call transfer with {"amount":100}?`) {
		t.Errorf("question %q", q.Question)
	}
	return res, q
}

// restart replaces the loop's steps with those of a new Loop, on a new
// engine over the same store: nothing of the run is left in memory.
func restart(h *agenttest.Harness, l *llm.Loop) {
	h.Stub("llm_answer", l.Answer)
	h.Stub("llm_approval", l.Approval)
	h.Stub("llm_approval_timeout", l.Expired)
}

// approvalAnswer builds the human's answer as a client sends it back: the
// question as it was published, with its tool fields.
func approvalAnswer(t *testing.T, q *event.ToolApprovalRequestEvent, yes bool) *event.HumanInTheLoopConfirmationResponseEvent {
	t.Helper()
	data, err := event.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	var base event.HumanInTheLoopConfirmationRequestEvent
	if err := event.UnmarshalValue(data, &base); err != nil {
		t.Fatal(err)
	}
	if id, ok := event.Extra(&base, "tool_call_id"); !ok || string(id) != `"`+q.ToolCallID+`"` {
		t.Fatalf("the question's tool_call_id is not kept: %s %v", id, ok)
	}
	return &event.HumanInTheLoopConfirmationResponseEvent{Response: yes, RequestEvent: &base}
}

func TestLLMLoopApprovalGranted(t *testing.T) {
	var runs atomic.Int32
	l, _ := approvalLoop(&runs, time.Minute)
	h := loopHarness(t, l)
	res, q := askApproval(t, h)
	if runs.Load() != 0 || res.Count("ToolEvent") != 0 {
		t.Fatal("a tool ran before the approval")
	}
	l2, p2 := approvalLoop(&runs, time.Minute)
	restart(h, l2)
	h.Send(res, approvalAnswer(t, q, true))
	stop, ok := agenttest.TerminalAs[*event.LLMStopEvent](res)
	if !ok {
		t.Fatalf("events %v, want the answer", res.Names())
	}
	agenttest.Equal(t, stop.OutputMessages[0].Content(), "Result: transferred")
	agenttest.Equal(t, runs.Load(), int32(1))
	agenttest.Equal(t, res.Count("ToolEvent"), 2)
	// The restarted loop sent the whole conversation: the user, the
	// model's calls and both results.
	req := p2.Requests()[0]
	agenttest.Equal(t, len(req.Messages), 3)
	agenttest.Equal(t, toolResults(req), []llm.Block{llm.ToolResult("t1", "transferred", false), llm.ToolResult("t2", "3", false)})
}

func TestLLMLoopApprovalRefused(t *testing.T) {
	var runs atomic.Int32
	l, p := approvalLoop(&runs, time.Minute)
	h := loopHarness(t, l)
	res, q := askApproval(t, h)
	h.Send(res, approvalAnswer(t, q, false))
	stop, ok := agenttest.TerminalAs[*event.LLMStopEvent](res)
	if !ok {
		t.Fatalf("events %v", res.Names())
	}
	agenttest.Equal(t, stop.OutputMessages[0].Content(), "Result: error: the user did not approve this call; it was not run")
	agenttest.Equal(t, runs.Load(), int32(0))
	agenttest.Equal(t, res.Count("ToolEvent"), 1) // add ran, transfer did not
	rs := toolResults(p.Requests()[1])
	if !rs[0].IsError || rs[1].IsError {
		t.Errorf("results %+v", rs)
	}
}

func TestLLMLoopApprovalTimedOut(t *testing.T) {
	var runs atomic.Int32
	l, _ := approvalLoop(&runs, time.Minute)
	h := loopHarness(t, l)
	res, _ := askApproval(t, h)
	restart(h, l)
	h.Advance(time.Minute)
	if res.Count("HumanInTheLoopTimeoutEvent") != 1 {
		t.Fatalf("events %v, want the question's timeout", res.Names())
	}
	stop, ok := agenttest.TerminalAs[*event.LLMStopEvent](res)
	if !ok {
		t.Fatalf("events %v", res.Names())
	}
	agenttest.Equal(t, stop.OutputMessages[0].Content(), "Result: error: nobody approved this call in time; it was not run")
	agenttest.Equal(t, runs.Load(), int32(0))
}

// Two calls needing approval are asked about one after the other.
func TestLLMLoopTwoApprovals(t *testing.T) {
	var runs atomic.Int32
	p := llmtest.Func(func(req *llm.Request) *llmtest.Turn {
		if rs := toolResults(req); rs != nil {
			return llmtest.Reply(rs[0].Text + " / " + rs[1].Text)
		}
		return llmtest.NewTurn().Tool("x", "add", `{"a":1,"b":1}`).Tool("y", "add", `{"a":2,"b":2}`)
	})
	l := &llm.Loop{Provider: p, Tools: []llm.Callable{llm.RequireApproval(addTool(&runs))}}
	h := loopHarness(t, l)
	res := h.Start(userMessage("add"))
	q1 := res.Get("ToolApprovalRequestEvent")[0].(*event.ToolApprovalRequestEvent)
	h.Send(res, approvalAnswer(t, q1, false))
	qs := res.Get("ToolApprovalRequestEvent")
	if len(qs) != 2 || res.Terminal() != nil {
		t.Fatalf("events %v, want a second question", res.Names())
	}
	q2 := qs[1].(*event.ToolApprovalRequestEvent)
	agenttest.Equal(t, []string{q1.ToolCallID, q2.ToolCallID}, []string{"x", "y"})
	h.Send(res, approvalAnswer(t, q2, true))
	stop, ok := agenttest.TerminalAs[*event.LLMStopEvent](res)
	if !ok {
		t.Fatalf("events %v", res.Names())
	}
	agenttest.Equal(t, stop.OutputMessages[0].Content(), "error: the user did not approve this call; it was not run / 4")
	agenttest.Equal(t, runs.Load(), int32(1))
}

// Reasoning inlined in <think> tags, split anywhere across deltas, is
// published as ThoughtEvents; the chunks and the answer carry none of it.
func TestLLMThinkTags(t *testing.T) {
	p := llmtest.New(llmtest.Reply("<thi", "nk>Two plus", " two.</th", "ink>", "It is ", "4<", "."))
	res := loopHarness(t, &llm.Loop{Provider: p}).Start(userMessage("2+2?"))
	var thoughts, chunks []string
	for _, e := range res.Display() {
		switch x := e.(type) {
		case *event.ThoughtEvent:
			thoughts = append(thoughts, *x.ReasoningContent)
		case *event.ChunkEvent:
			chunks = append(chunks, x.Content)
		}
	}
	agenttest.Equal(t, strings.Join(thoughts, ""), "Two plus two.")
	agenttest.Equal(t, strings.Join(chunks, ""), "It is 4<.")
	stop, _ := agenttest.TerminalAs[*event.LLMStopEvent](res)
	agenttest.Equal(t, stop.OutputMessages[0].Content(), "It is 4<.")
}

func TestLLMCostEvent(t *testing.T) {
	p := llmtest.New(llmtest.Reply("Hi").Model("gpt-4o-2024-08-06").Usage(1000, 500))
	l := &llm.Loop{Provider: p, Model: "gpt-4o", Prices: llm.Prices{"gpt-4o": {Input: 2.5, Output: 10}}}
	res := loopHarness(t, l).Start(userMessage("hi"))
	costs := res.Get("LLMCostEvent")
	if len(costs) != 1 {
		t.Fatalf("events %v, want one LLMCostEvent", res.Names())
	}
	c := costs[0].(*event.LLMCostEvent)
	agenttest.Equal(t, []any{c.LLMName, c.PromptTokenCount, c.CompletionTokenCount, c.PromptTokensCosts, c.CompletionTokensCosts},
		[]any{"gpt-4o-2024-08-06", int64(1000), int64(500), 0.0025, 0.005})
	stop, _ := agenttest.TerminalAs[*event.LLMStopEvent](res)
	agenttest.Equal(t, []int64{*stop.TokenCountPrompt, *stop.TokenCountCompletion, *stop.TokenCountTotal}, []int64{1000, 500, 1500})
	agenttest.Equal(t, *stop.ChatModelName, "gpt-4o-2024-08-06")
	agenttest.Equal(t, *stop.Provider, "scripted")
}

// A provider's typed error ends the run with a fitting status and a
// message for the user, not the provider's text.
func TestLLMProviderErrorStatus(t *testing.T) {
	for _, tc := range []struct {
		err    *llm.Error
		status int
		msg    string
	}{
		{&llm.Error{Kind: llm.ErrRateLimited, Provider: "scripted", RetryAfter: 30 * time.Second, Message: "org-123 over quota"}, 429, "the language model is rate limited; try again in 30s"},
		{&llm.Error{Kind: llm.ErrContextTooLong, Provider: "scripted"}, 413, "the conversation is too long for the language model"},
		{&llm.Error{Kind: llm.ErrOverloaded, Provider: "scripted"}, 503, "the language model is overloaded; try again later"},
	} {
		t.Run(string(tc.err.Kind), func(t *testing.T) {
			p := llmtest.New(llmtest.Reply("par").Fail(tc.err))
			res := loopHarness(t, &llm.Loop{Provider: p}).Start(userMessage("hi"))
			exc, ok := agenttest.TerminalAs[*event.ExceptionEvent](res)
			if !ok {
				t.Fatalf("events %v", res.Names())
			}
			agenttest.Equal(t, []any{exc.HTTPStatusCode, exc.Message}, []any{tc.status, tc.msg})
		})
	}
	t.Run("truncated", func(t *testing.T) {
		p := llmtest.New(llmtest.Reply("cut").Truncate())
		res := loopHarness(t, &llm.Loop{Provider: p}).Start(userMessage("hi"))
		exc, ok := agenttest.TerminalAs[*event.ExceptionEvent](res)
		if !ok {
			t.Fatalf("events %v", res.Names())
		}
		agenttest.Equal(t, exc.HTTPStatusCode, 503)
	})
}

// The user's images and documents reach the model as content blocks, and
// an image in the model's answer stays in the call's record and the
// run's answer.
func TestLLMLoopKeepsImagesAndDocuments(t *testing.T) {
	pdf := []byte("%PDF-1.7\n1 0 obj\n")
	photo := "https://example.com/matterhorn.jpg"
	made := llm.Block{Kind: llm.BlockImage, MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nmap")}
	p := llmtest.New(llmtest.NewTurn().Text("Here is a map:").Block(made))
	msg := &event.UserMessageEvent{User: &event.UserIdentity{}, Messages: []event.ChatMessage{{
		Role: event.RoleUser, AdditionalKwargs: map[string]json.RawMessage{},
		Blocks: []event.Block{
			&event.TextBlock{Text: "Where was this taken, and what does the report say?"},
			&event.ImageBlock{URL: event.Str(photo)},
			&event.DocumentBlock{Data: pdf, Title: event.Str("report.pdf"), DocumentMimetype: event.Str("application/pdf")},
			&event.AudioBlock{URL: event.Str("https://example.com/a.mp3")},
		},
	}}}
	res := loopHarness(t, &llm.Loop{Provider: p, Model: "m"}).Start(msg)

	reqs := p.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls, want 1", len(reqs))
	}
	agenttest.Equal(t, reqs[0].Messages[0].Content, []llm.Block{
		llm.Text("Where was this taken, and what does the report say?"),
		{Kind: llm.BlockImage, URL: photo},
		{Kind: llm.BlockDocument, Data: pdf, MediaType: "application/pdf", Title: "report.pdf"},
	})
	stop, ok := agenttest.TerminalAs[*event.LLMStopEvent](res)
	if !ok {
		t.Fatalf("terminal %v, want LLMStopEvent", res.Names())
	}
	out := stop.OutputMessages[len(stop.OutputMessages)-1]
	agenttest.Equal(t, out.Content(), "Here is a map:")
	if len(out.Contents) != 2 || out.Contents[1].Type != "image" || out.Contents[1].URL == nil ||
		!strings.HasPrefix(*out.Contents[1].URL, "data:image/png;base64,") {
		t.Errorf("answer contents = %+v, want the text and the image", out.Contents)
	}
	// The call's input record keeps the user's image too.
	in := stop.InputMessages[0]
	if len(in.Contents) != 2 || in.Contents[1].Type != "image" || *in.Contents[1].URL != photo {
		t.Errorf("input contents = %+v, want the text and the photo", in.Contents)
	}
}
