package memory_test

import (
	"context"
	"fmt"

	"github.com/saap-go/agent/llm/llmtest"
	"github.com/saap-go/agent/memory"
	"github.com/saap-go/agent/vector"
)

// A user's memories are recalled for that user only.
func ExampleService_Recall() {
	ctx := context.Background()
	ix := vector.NewMemory() // vector.Open(dir) to keep them
	defer ix.Close()
	svc, _ := memory.New(ix, llmtest.HashEmbedder{}, memory.WithThreshold(0.2))

	ada := memory.Principal{UserID: "ada"}
	_, _ = svc.StoreUser(ctx, ada, []string{"Ada prefers answers in German"}, memory.Origin{})

	got, _ := svc.Recall(ctx, ada, memory.Query{Text: "in which language does Ada prefer answers"})
	fmt.Println(len(got.User), got.User[0].Text)
	other, _ := svc.Recall(ctx, memory.Principal{UserID: "bob"}, memory.Query{Text: "in which language does Ada prefer answers"})
	fmt.Println(len(other.User))
	// Output:
	// 1 Ada prefers answers in German
	// 0
}
