package conversation

import (
	"testing"
)

// decodeObject reads what a model wrote: any text must be safe.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{`{"title": "x"}`, "Sure: ```json\n{\"questions\": [\"a\"]}\n```", `{"title": 3} {"title": "y"}`, "{", "", `{"questions": null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v struct {
			Title     string   `json:"title"`
			Questions []string `json:"questions"`
		}
		decodeObject(s, &v)
	})
}
