package llm_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/llmtest"
)

// A call without streaming: Generate returns the whole answer. The
// scripted provider of llmtest stands in for a real one (llm.Open or
// llm.FromEnv).
func ExampleGenerate() {
	p := llmtest.New(llmtest.Reply("Bern ", "is the capital.").Usage(12, 4))
	resp, err := llm.Generate(context.Background(), p, &llm.Request{
		System:   "Answer in one sentence.",
		Messages: []llm.Message{llm.UserText("What is the capital of Switzerland?")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Message.Text(), resp.Usage.Total())
	// Output: Bern is the capital. 16
}

// A stream yields events of one type whatever the provider; Collect (or an
// Accumulator, event by event) folds them into the Response.
func ExampleCollect() {
	p := llmtest.New(llmtest.NewTurn().Text("Let me ", "look.").Tool("call_1", "weather", `{"city":"Bern"}`, `{"city":`, `"Bern"}`))
	s, err := p.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserText("Weather in Bern?")}})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := llm.Collect(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range resp.Message.ToolUses() {
		fmt.Println(resp.Message.Text(), b.ToolName, string(b.Input))
	}
	// Output: Let me look. weather {"city":"Bern"}
}

type cityArgs struct {
	City string `json:"city" jsonschema:"the city's name"`
}

// A tool is a Go function with typed arguments; its JSON Schema is
// generated from the type. The loop calls it with the model's arguments.
func ExampleFunc() {
	tool := llm.Func("weather", "The weather in a city.", func(_ context.Context, a cityArgs) (string, error) {
		return "sunny in " + a.City, nil
	})
	def := tool.Definition()
	out, err := tool.Call(context.Background(), []byte(`{"city":"Bern"}`))
	fmt.Println(def.Name, "-", def.Description)
	fmt.Println(out, err)
	// Output:
	// weather - The weather in a city.
	// sunny in Bern <nil>
}

// A Loop adds the tool loop to an agent: its steps answer the user's
// message, take up an approval's answer and its timeout.
func ExampleLoop() {
	l := &llm.Loop{
		Provider: llmtest.New(llmtest.Reply("Hello!")),
		System:   "You are a helpful agent.",
		Tools: []llm.Callable{llm.RequireApproval(llm.Func("send_mail", "Sends a mail.",
			func(_ context.Context, to struct{ To string }) (string, error) { return "sent", nil }))},
	}
	for _, s := range l.Steps() {
		fmt.Println(s.Name())
	}
	// Output:
	// llm_answer
	// llm_approval
	// llm_approval_timeout
}

// Open picks a provider by "provider:model"; a provider registers itself
// when its package is imported (llm/openai, llm/anthropic, …).
func ExampleOpen() {
	_, _, err := llm.Open("nosuch:model-1")
	fmt.Println(err != nil)
	// Output: true
}

// GenerateObject asks for a value of a Go type: the JSON Schema generated
// from it goes to the provider's structured-output field, and the answer
// is checked against it and decoded.
func ExampleGenerateObject() {
	type Verdict struct {
		Suitable bool   `json:"suitable" jsonschema:"description=whether this agent can answer the question"`
		Reason   string `json:"reason"`
	}
	p := llmtest.New(llmtest.Reply(`{"suitable": false, "reason": "it is about cooking"}`))
	v, err := llm.GenerateObject[Verdict](context.Background(), p, &llm.Request{
		System:   "You decide whether a question is about Swiss taxes.",
		Messages: []llm.Message{llm.UserText("How long do I boil an egg?")},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.Suitable, v.Reason)
	// Output: false it is about cooking
}

// An answer that does not match the schema is an *ObjectError holding the
// raw answer and what is wrong with it.
func ExampleObjectError() {
	type Verdict struct {
		Suitable bool `json:"suitable"`
	}
	p := llmtest.New(llmtest.Reply(`{"suitable": "maybe"}`))
	_, err := llm.GenerateObject[Verdict](context.Background(), p, &llm.Request{Messages: []llm.Message{llm.UserText("?")}})
	var bad *llm.ObjectError
	if errors.As(err, &bad) {
		fmt.Println(bad.Raw)
	}
	// Output: {"suitable": "maybe"}
}
