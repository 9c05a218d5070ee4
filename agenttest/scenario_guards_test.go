package agenttest_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/guard"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
	"github.com/saap-go/agent/step"
)

// Guards on the tool loop and as an agent's own step, run by the real
// engine on the scripted model. The model that answers and the model that
// judges are separate scripts, so a test can tell that a rejected input
// never reached the answering model.

// judge is a scripted judge answering the verdicts in order.
func judge(verdicts ...string) (*llmtest.Provider, guard.Judge) {
	turns := make([]*llmtest.Turn, len(verdicts))
	for i, v := range verdicts {
		turns[i] = llmtest.Reply(v)
	}
	p := llmtest.New(turns...)
	return p, &guard.ModelJudge{Provider: p, Model: "judge"}
}

const (
	yes = `{"success": true, "reasoning": "fine"}`
	no  = `{"success": false, "reasoning": "not for this agent"}`
)

func guardedLoop(p llm.Provider, set *guard.Set) *llm.Loop {
	return &llm.Loop{Provider: p, Model: "m", System: "You answer questions on Swiss taxes.", Guards: set}
}

// guardRefused checks that res ended with a RefusalStopEvent for reason, whose
// answer was also streamed, and returns it.
func guardRefused(t *testing.T, res *agenttest.Result, reason string) *event.RefusalStopEvent {
	t.Helper()
	stop, ok := agenttest.TerminalAs[*event.RefusalStopEvent](res)
	if !ok {
		t.Fatalf("terminal %v, want RefusalStopEvent", res.Names())
	}
	agenttest.Equal(t, stop.Reason, reason)
	answer := stop.OutputMessages[len(stop.OutputMessages)-1].Content()
	if answer == "" {
		t.Errorf("the refusal has no answer")
	}
	if chunks := chunkText(res); chunks != answer {
		t.Errorf("streamed %q, want the refusal %q", chunks, answer)
	}
	// As an LLMStopEvent it records the turn's input and the agent's model.
	if stop.ChatModelName == nil || *stop.ChatModelName != "m" || len(stop.InputMessages) == 0 ||
		stop.InputMessages[len(stop.InputMessages)-1].Role != event.RoleUser {
		t.Errorf("refusal model %v, input %+v", stop.ChatModelName, stop.InputMessages)
	}
	return stop
}

func chunkText(res *agenttest.Result) string {
	var b strings.Builder
	for _, e := range res.Display() {
		if c, ok := e.(*event.ChunkEvent); ok {
			b.WriteString(c.Content)
		}
	}
	return b.String()
}

// answered checks that res ended with the model's answer want.
func answered(t *testing.T, res *agenttest.Result, want string) *event.LLMStopEvent {
	t.Helper()
	stop, ok := agenttest.TerminalAs[*event.LLMStopEvent](res)
	if !ok {
		t.Fatalf("terminal %v, want LLMStopEvent", res.Names())
	}
	agenttest.Equal(t, stop.OutputMessages[len(stop.OutputMessages)-1].Content(), want)
	return stop
}

func TestGuardInputSize(t *testing.T) {
	t.Run("accepts", func(t *testing.T) {
		p := llmtest.New(llmtest.Reply("VAT is 8.1%."))
		res := loopHarness(t, guardedLoop(p, &guard.Set{Input: []guard.Guard{&guard.InputSize{Budget: 1000}}})).Start(userMessage("What is the VAT rate?"))
		answered(t, res, "VAT is 8.1%.")
		agenttest.Equal(t, res.Count("GuardAcceptEvent"), 1)
		agenttest.Equal(t, len(p.Requests()), 1)
	})
	t.Run("rejects", func(t *testing.T) {
		p := llmtest.New(llmtest.Reply("never"))
		res := loopHarness(t, guardedLoop(p, &guard.Set{Input: []guard.Guard{&guard.InputSize{Budget: 50}}})).
			Start(userMessage(strings.Repeat("a long document ", 100)))
		guardRefused(t, res, event.RefusalInputTooLarge)
		rej := res.Get("GuardRejectionEvent")
		if len(rej) != 1 || !strings.Contains(rej[0].(*event.GuardRejectionEvent).Reason, "budget of 50") {
			t.Errorf("rejections %v", rej)
		}
		agenttest.Equal(t, len(p.Requests()), 0)
	})
}

func TestGuardSensitiveInfo(t *testing.T) {
	sensitive := []guard.Guard{&guard.SensitiveInfo{}}
	t.Run("input accepted", func(t *testing.T) {
		p := llmtest.New(llmtest.Reply("Yes."))
		res := loopHarness(t, guardedLoop(p, &guard.Set{Input: sensitive})).Start(userMessage("Is a gift taxed?"))
		answered(t, res, "Yes.")
		agenttest.Equal(t, res.Count("SensitiveInfoAcceptEvent"), 1)
	})
	t.Run("input rejected", func(t *testing.T) {
		p := llmtest.New(llmtest.Reply("never"))
		res := loopHarness(t, guardedLoop(p, &guard.Set{Input: sensitive})).Start(userMessage("My IBAN is CH93 0076 2011 6238 5295 7, check it."))
		guardRefused(t, res, event.RefusalOutOfScope)
		agenttest.Equal(t, res.Count("SensitiveInfoRejectEvent"), 1)
		agenttest.Equal(t, len(p.Requests()), 0)
	})
	t.Run("answer accepted", func(t *testing.T) {
		p := llmtest.New(llmtest.Reply("No ", "card needed."))
		res := loopHarness(t, guardedLoop(p, &guard.Set{Output: sensitive})).Start(userMessage("Do I pay by card?"))
		answered(t, res, "No card needed.")
		agenttest.Equal(t, res.Count("SensitiveInfoAcceptEvent"), 1)
		agenttest.Equal(t, chunkText(res), "No card needed.")
	})
	t.Run("answer cleaned", func(t *testing.T) {
		p := llmtest.New(llmtest.Reply("Pay with 4111 1111 ", "1111 1111 or mail anna@example.ch."))
		res := loopHarness(t, guardedLoop(p, &guard.Set{Output: sensitive})).Start(userMessage("How do I pay?"))
		const cleaned = "Pay with [card number] or mail [e-mail address]."
		answered(t, res, cleaned)
		rej := res.Get("SensitiveInfoRejectEvent")
		if len(rej) != 1 || rej[0].(*event.SensitiveInfoRejectEvent).CleanedAnswer != cleaned {
			t.Fatalf("rejections %v", rej)
		}
		// The user never saw the first form of the answer.
		agenttest.Equal(t, chunkText(res), cleaned)
	})
	t.Run("tool call refused", func(t *testing.T) {
		var runs atomic.Int32
		p := llmtest.New(
			llmtest.NewTurn().Tool("c1", "add", `{"a":1,"b":2,"note":"from anna@example.ch"}`),
			llmtest.Reply("I could not use the tool."),
		)
		l := guardedLoop(p, &guard.Set{ToolCall: sensitive})
		l.Tools = []llm.Callable{addTool(&runs)}
		res := loopHarness(t, l).Start(userMessage("add"))
		answered(t, res, "I could not use the tool.")
		agenttest.Equal(t, runs.Load(), int32(0))
		agenttest.Equal(t, res.Count("ToolEvent"), 0)
		agenttest.Equal(t, res.Count("SensitiveInfoRejectEvent"), 1)
		got := toolResults(p.Requests()[1])
		if len(got) != 1 || !got[0].IsError || !strings.Contains(got[0].Text, "a guard refused this call: sensitive information found: e-mail address") {
			t.Errorf("tool results %+v", got)
		}
	})
	t.Run("tool call accepted", func(t *testing.T) {
		var runs atomic.Int32
		p := llmtest.New(llmtest.NewTurn().Tool("c1", "add", `{"a":1,"b":2}`), llmtest.Reply("3"))
		l := guardedLoop(p, &guard.Set{ToolCall: sensitive})
		l.Tools = []llm.Callable{addTool(&runs)}
		res := loopHarness(t, l).Start(userMessage("add"))
		answered(t, res, "3")
		agenttest.Equal(t, runs.Load(), int32(1))
		agenttest.Equal(t, res.Names()[1:3], []string{"LLMEvent", "SensitiveInfoAcceptEvent"})
	})
}

func TestGuardAgentSuitability(t *testing.T) {
	t.Run("accepts", func(t *testing.T) {
		jp, j := judge(yes)
		p := llmtest.New(llmtest.Reply("Deductions are ..."))
		g := &guard.AgentSuitability{Description: "Answers questions on Swiss taxes.", Judge: j}
		res := loopHarness(t, guardedLoop(p, &guard.Set{Input: []guard.Guard{g}})).Start(userMessage("What can I deduct?"))
		answered(t, res, "Deductions are ...")
		agenttest.Equal(t, res.Count("AgentSuitabilityAcceptEvent"), 1)
		agenttest.Equal(t, len(jp.Requests()), 1)
		agenttest.Equal(t, len(p.Requests()), 1)
	})
	t.Run("rejects", func(t *testing.T) {
		jp, j := judge(no)
		p := llmtest.New(llmtest.Reply("never"))
		g := &guard.AgentSuitability{Description: "Answers questions on Swiss taxes.", Judge: j}
		res := loopHarness(t, guardedLoop(p, &guard.Set{Input: []guard.Guard{g}})).Start(userMessage("Write me a poem."))
		stop := guardRefused(t, res, event.RefusalOutOfScope)
		if !strings.Contains(stop.OutputMessages[0].Content(), "not for this agent") {
			t.Errorf("refusal %q does not give the reason", stop.OutputMessages[0].Content())
		}
		agenttest.Equal(t, res.Count("AgentSuitabilityRejectEvent"), 1)
		if !strings.Contains(jp.Requests()[0].Messages[0].Text(), "Write me a poem.") {
			t.Errorf("the judge was not asked about the request: %+v", jp.Requests()[0])
		}
		agenttest.Equal(t, len(p.Requests()), 0)
	})
}

func TestGuardContextSufficiency(t *testing.T) {
	t.Run("accepts", func(t *testing.T) {
		_, j := judge(yes)
		p := llmtest.New(llmtest.Reply("8.1%"))
		res := loopHarness(t, guardedLoop(p, &guard.Set{Input: []guard.Guard{&guard.ContextSufficiency{Judge: j}}})).Start(userMessage("VAT?"))
		answered(t, res, "8.1%")
		agenttest.Equal(t, res.Count("ContextSufficientAcceptEvent"), 1)
	})
	t.Run("rejects", func(t *testing.T) {
		_, j := judge(no)
		p := llmtest.New(llmtest.Reply("never"))
		res := loopHarness(t, guardedLoop(p, &guard.Set{Input: []guard.Guard{&guard.ContextSufficiency{Judge: j}}})).Start(userMessage("VAT?"))
		guardRefused(t, res, event.RefusalOutOfScope)
		agenttest.Equal(t, res.Count("ContextInsufficientRejectEvent"), 1)
		agenttest.Equal(t, len(p.Requests()), 0)
	})
	t.Run("rejects and answers with the instruction", func(t *testing.T) {
		_, j := judge(no)
		p := llmtest.New(llmtest.Reply("I found nothing on that."))
		g := &guard.ContextSufficiency{Judge: j, OnReject: "Say that the documents do not cover the question."}
		res := loopHarness(t, guardedLoop(p, &guard.Set{Input: []guard.Guard{g}})).Start(userMessage("VAT?"))
		answered(t, res, "I found nothing on that.")
		agenttest.Equal(t, res.Count("ContextInsufficientRejectEvent"), 1)
		if sys := p.Requests()[0].System; !strings.Contains(sys, "Say that the documents do not cover the question.\n\nReason: not for this agent") {
			t.Errorf("system %q lacks the instruction", sys)
		}
	})
}

func TestGuardFewShot(t *testing.T) {
	examples := []guard.Example{{User: "What is VAT?", Success: true, Reason: "a tax question"}, {User: "Tell a joke", Reason: "not about tax"}}
	t.Run("accepts", func(t *testing.T) {
		_, j := judge(yes)
		p := llmtest.New(llmtest.Reply("It is a tax."))
		res := loopHarness(t, guardedLoop(p, &guard.Set{Input: []guard.Guard{&guard.FewShot{Examples: examples, Judge: j}}})).Start(userMessage("What is stamp duty?"))
		answered(t, res, "It is a tax.")
		agenttest.Equal(t, res.Count("FewShotAcceptEvent"), 1)
	})
	t.Run("rejects", func(t *testing.T) {
		jp, j := judge(no)
		p := llmtest.New(llmtest.Reply("never"))
		res := loopHarness(t, guardedLoop(p, &guard.Set{Input: []guard.Guard{&guard.FewShot{Examples: examples, Judge: j}}})).Start(userMessage("Sing"))
		guardRefused(t, res, event.RefusalOutOfScope)
		agenttest.Equal(t, res.Count("FewShotRejectEvent"), 1)
		if !strings.Contains(jp.Requests()[0].Messages[0].Text(), "User: Tell a joke\nSuccess: false") {
			t.Errorf("the judge did not see the examples: %q", jp.Requests()[0].Messages[0].Text())
		}
		agenttest.Equal(t, len(p.Requests()), 0)
	})
}

// All guards of a stage publish their decisions; one rejection is enough to
// refuse.
func TestGuardSeveralInputGuards(t *testing.T) {
	_, j := judge(yes)
	p := llmtest.New(llmtest.Reply("never"))
	set := &guard.Set{Input: []guard.Guard{&guard.InputSize{Budget: 1000}, &guard.AgentSuitability{Description: "taxes", Judge: j}, &guard.SensitiveInfo{}}}
	res := loopHarness(t, guardedLoop(p, set)).Start(userMessage("Card 4111 1111 1111 1111: is it taxed?"))
	guardRefused(t, res, event.RefusalOutOfScope)
	agenttest.Equal(t, res.Names(), []string{"UserMessageEvent", "GuardAcceptEvent", "AgentSuitabilityAcceptEvent", "SensitiveInfoRejectEvent", "RefusalStopEvent"})
	agenttest.Equal(t, len(p.Requests()), 0)
}

// An agent declares its guards as a step of its own workflow: the answer
// step waits for the acceptance.
func TestGuardStepInAWorkflow(t *testing.T) {
	build := func(t *testing.T, verdict string) (*agenttest.Harness, *llmtest.Provider, *atomic.Int32) {
		_, j := judge(verdict)
		p := llmtest.New(llmtest.Reply("Deductions are ..."))
		var answers atomic.Int32
		set := &guard.Set{Input: []guard.Guard{&guard.AgentSuitability{Description: "Answers questions on Swiss taxes.", Judge: j}, &guard.SensitiveInfo{}},
			Model: "m"}
		answer := step.New(func(ctx step.Context, msg *event.UserMessageEvent, _ *event.AgentSuitabilityAcceptEvent, _ *event.SensitiveInfoAcceptEvent) (*event.LLMStopEvent, error) {
			answers.Add(1)
			call, err := llm.StreamTo(ctx, p, &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText(msg.Messages[len(msg.Messages)-1].Content())}})
			if err != nil {
				return nil, err
			}
			return call.StopEvent(), nil
		}, step.Name("answer"))
		return agenttest.New(t, mustWorkflow(t, "GuardedAgent", set.Step("guard"), answer), agenttest.FailOnStall()), p, &answers
	}
	t.Run("accepts", func(t *testing.T) {
		h, p, answers := build(t, yes)
		res := h.Start(userMessage("What can I deduct?"))
		answered(t, res, "Deductions are ...")
		agenttest.Equal(t, res.Names(), []string{"UserMessageEvent", "AgentSuitabilityAcceptEvent", "SensitiveInfoAcceptEvent", "LLMStopEvent"})
		agenttest.Equal(t, answers.Load(), int32(1))
		agenttest.Equal(t, len(p.Requests()), 1)
	})
	t.Run("rejects", func(t *testing.T) {
		h, p, answers := build(t, no)
		res := h.Start(userMessage("Write me a poem."))
		guardRefused(t, res, event.RefusalOutOfScope)
		// The acceptance of the other guard is not published: no later step may start.
		agenttest.Equal(t, res.Names(), []string{"UserMessageEvent", "AgentSuitabilityRejectEvent", "RefusalStopEvent"})
		agenttest.Equal(t, answers.Load(), int32(0))
		agenttest.Equal(t, len(p.Requests()), 0)
	})
}

// A guard's own function can be any check.
func TestGuardFunc(t *testing.T) {
	p := llmtest.New(llmtest.Reply("never"))
	noShouting := guard.Func("no_shouting", func(_ context.Context, c *guard.Check) (guard.Verdict, error) {
		if q := c.Query(); q == strings.ToUpper(q) {
			return guard.Reject("please do not shout"), nil
		}
		return guard.Accept("calm"), nil
	})
	res := loopHarness(t, guardedLoop(p, &guard.Set{Input: []guard.Guard{noShouting}})).Start(userMessage("HELLO"))
	stop := guardRefused(t, res, event.RefusalOutOfScope)
	agenttest.Equal(t, stop.OutputMessages[0].Content(), "I can't help with this request. please do not shout")
	agenttest.Equal(t, res.Count("GuardRejectionEvent"), 1)
	agenttest.Equal(t, len(p.Requests()), 0)
}

// A judge that fails fails the guarded step: the run ends with an
// ExceptionEvent and the answering model is not called.
func TestGuardFailingJudge(t *testing.T) {
	jp := llmtest.New(llmtest.NewTurn().FailToOpen(&llm.Error{Kind: llm.ErrUnavailable, Provider: "judge", Message: "down"}))
	p := llmtest.New(llmtest.Reply("never"))
	g := &guard.AgentSuitability{Description: "taxes", Judge: &guard.ModelJudge{Provider: jp}}
	res := loopHarness(t, guardedLoop(p, &guard.Set{Input: []guard.Guard{g}})).Start(userMessage("VAT?"))
	if _, ok := agenttest.TerminalAs[*event.ExceptionEvent](res); !ok {
		t.Fatalf("terminal %v, want ExceptionEvent", res.Names())
	}
	agenttest.Equal(t, res.Count("AgentSuitabilityAcceptEvent")+res.Count("AgentSuitabilityRejectEvent"), 0)
	agenttest.Equal(t, len(p.Requests()), 0)
}
