package guard_test

import (
	"context"
	"fmt"

	"github.com/saap-go/agent/guard"
	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
)

// A tool loop with guards on its three points: the input is checked for
// size, sensitive information and whether the agent is meant for it; the
// answer is cleaned of sensitive information; tool calls must not carry
// any.
func ExampleSet() {
	model := llmtest.New(llmtest.Reply("Ask at tax@example.ch."))
	judge := &guard.ModelJudge{Provider: llmtest.New(llmtest.Reply(`{"success": true, "reasoning": "a tax question"}`))}
	loop := &llm.Loop{
		Provider: model,
		System:   "You answer questions on Swiss taxes.",
		Guards: &guard.Set{
			Input: []guard.Guard{
				&guard.InputSize{Budget: 100_000},
				&guard.SensitiveInfo{},
				&guard.AgentSuitability{Description: "Answers questions on Swiss taxes.", Judge: judge},
			},
			Output:   []guard.Guard{&guard.SensitiveInfo{}},
			ToolCall: []guard.Guard{&guard.SensitiveInfo{Kinds: []guard.Kind{guard.IBAN, guard.Card}}},
		},
	}
	fmt.Println(len(loop.Steps()), "steps")
	// Output: 3 steps
}

// Run checks a text with guards anywhere, here an answer a step wrote.
func ExampleRun() {
	answer := llm.AssistantText("Transfer it to CH93 0076 2011 6238 5295 7.")
	out, err := guard.Run(context.Background(), &guard.Check{Stage: guard.Output, Answer: &answer}, &guard.SensitiveInfo{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range out.Decisions {
		fmt.Println(d.Guard, d.Verdict.Accepted, d.Verdict.Cleaned)
	}
	// Output: sensitive_info false Transfer it to [IBAN].
}

// Find locates sensitive information; numbers with a check digit match
// only when it is right.
func ExampleFind() {
	text := "AHV 756.9217.0769.85, card 4111 1111 1111 1112, mail anna@example.ch"
	for _, m := range guard.Find(text) {
		fmt.Println(m.Kind, text[m.Start:m.End])
	}
	// Output:
	// AHV number 756.9217.0769.85
	// e-mail address anna@example.ch
}

// A guard of your own is a function.
func ExampleFunc() {
	g := guard.Func("no_empty", func(_ context.Context, c *guard.Check) (guard.Verdict, error) {
		if c.Query() == "" {
			return guard.Reject("the message is empty"), nil
		}
		return guard.Accept("the message has text"), nil
	})
	out, _ := guard.Run(context.Background(), &guard.Check{Stage: guard.Input, Messages: []llm.Message{llm.UserText("hi")}}, g)
	fmt.Println(out.Accepted())
	// Output: true
}
