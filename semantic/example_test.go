package semantic_test

import (
	"fmt"
	"sort"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/semantic"
)

// The OpenInference attributes of an LLMEvent, as Phoenix or Langfuse read
// them from its span.
func ExampleConvention() {
	model, total := "gpt-4o", int64(12)
	ev := &event.LLMEvent{ChatModelName: &model, TokenCountTotal: &total,
		InputMessages: []event.Message{event.MessageFromString("user", "Hi")}}
	attrs, err := semantic.Convention(ev)
	if err != nil {
		panic(err)
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("%s = %#v\n", k, attrs[k])
	}
	// Output:
	// llm.input_messages.0.message.content = "Hi"
	// llm.input_messages.0.message.role = "user"
	// llm.model_name = "gpt-4o"
	// llm.system = "openai"
	// llm.token_count.total = 12
	// openinference.span.kind = "LLM"
}
