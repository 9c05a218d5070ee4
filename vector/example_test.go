package vector_test

import (
	"context"
	"fmt"
	"os"

	"github.com/saap-go/agent/vector"
)

// An index persisted in a directory: what Upsert returned nil for is on
// disk, and a new Open finds it.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "vectors")
	defer os.RemoveAll(dir)

	ix, err := vector.Open(dir)
	if err != nil {
		panic(err)
	}
	_ = ix.Upsert(ctx,
		vector.Record{ID: "a", Vector: []float32{1, 0}, Text: "east", Metadata: map[string]string{"user": "ada"}},
		vector.Record{ID: "b", Vector: []float32{0, 1}, Text: "north", Metadata: map[string]string{"user": "bob"}},
	)
	_ = ix.Close()

	ix, _ = vector.Open(dir)
	defer ix.Close()
	ms, _ := ix.Query(ctx, []float32{1, 1}, 5, vector.Filter{"user": "ada"})
	for _, m := range ms {
		fmt.Printf("%s %.3f\n", m.Text, m.Score)
	}
	// Output: east 0.707
}
