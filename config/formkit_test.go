package config_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/config"
)

type example struct {
	Input string `json:"input"`
	Valid bool   `json:"valid"`
}

type fewShot struct {
	Examples []example        `json:"examples"`
	Nested   nested           `json:"nested"`
	Labels   map[string]int   `json:"labels"`
	Codes    map[string]label `json:"codes"`
}

type nested struct {
	Groups []group `json:"groups"`
}

type group struct {
	Name    string    `json:"name"`
	Members []example `json:"members"`
}

type label struct {
	Text string `json:"text"`
}

// A FormKit repeater is submitted as {"0": {...}, "1": {...}}; the platform
// stores it so, and the reference turns it back into a list before
// validating. Objects that only look similar stay objects.
func TestMergeFormKitArrays(t *testing.T) {
	defaults := fewShot{Examples: []example{{Input: "default"}}, Labels: map[string]int{"x": 9}}
	overlay := `{
		"examples": {"1": {"input": "b", "valid": true}, "0": {"input": "a"}},
		"nested": {"groups": {"0": {"name": "g", "members": {"0": {"input": "m"}}}}},
		"labels": {"0": 1, "1": 2},
		"codes": {"0": {"text": "zero"}, "2": {"text": "two"}}
	}`
	got, err := config.Merge(defaults, []byte(overlay))
	if err != nil {
		t.Fatal(err)
	}
	want := fewShot{
		Examples: []example{{Input: "a"}, {Input: "b", Valid: true}},
		Nested:   nested{Groups: []group{{Name: "g", Members: []example{{Input: "m"}}}}},
		// scalar values: not a FormKit array, merged as a map
		Labels: map[string]int{"x": 9, "0": 1, "1": 2},
		// keys not 0..n-1: not a FormKit array
		Codes: map[string]label{"0": {Text: "zero"}, "2": {Text: "two"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Merge (-want +got):\n%s", diff)
	}
}

func TestMergeFormKitArrayEdgeCases(t *testing.T) {
	type cfg struct {
		Items []map[string]any `json:"items"`
		M     map[string]any   `json:"m"`
	}
	for _, tc := range []struct {
		name, overlay string
		want          cfg
	}{
		{"leading zero is not an index", `{"m": {"00": {"a": 1}}}`, cfg{M: map[string]any{"00": map[string]any{"a": 1.0}}}},
		{"negative is not an index", `{"m": {"-1": {"a": 1}}}`, cfg{M: map[string]any{"-1": map[string]any{"a": 1.0}}}},
		{"empty object stays an object", `{"m": {}}`, cfg{M: map[string]any{}}},
		{"inside a list", `{"items": [{"x": {"0": {"y": 1}}}]}`, cfg{Items: []map[string]any{{"x": []any{map[string]any{"y": 1.0}}}}}},
		{"mixed value kinds", `{"m": {"0": {"a": 1}, "1": 2}}`, cfg{M: map[string]any{"0": map[string]any{"a": 1.0}, "1": 2.0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := config.Merge(cfg{}, []byte(tc.overlay))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// The root is the configuration itself, never turned into a list.
	got, err := config.MergeValue(nil, []byte(`{"0": {"a": 1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"0": map[string]any{"a": 1.0}}, got); diff != "" {
		t.Errorf("root (-want +got):\n%s", diff)
	}
}

func TestFormKitArraysExported(t *testing.T) {
	got, err := config.FormKitArrays([]byte(`{"0":{"a":1},"list":{"0":{"x":1},"1":{"x":2}},"m":{"0":"s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"0":{"a":1},"list":[{"x":1},{"x":2}],"m":{"0":"s"}}` {
		t.Errorf("got %s", got)
	}
	if _, err := config.FormKitArrays([]byte(`[1]`)); err == nil {
		t.Error("a list was taken for a configuration")
	}
}

// The repeater items of a generated form reach the list and map fields of
// the configuration, however the platform stored the submission.
func TestMergeRepeaterItems(t *testing.T) {
	type item struct {
		Input string `json:"input"`
	}
	type cfg struct {
		Tags   []string             `json:"tags"`
		Limits map[string]int       `json:"limits"`
		Teams  map[string]item      `json:"teams"`
		Items  []item               `json:"items"`
		Nested struct{ Tags []int } `json:"nested"`
	}
	got, err := config.Merge(cfg{}, []byte(`{
		"tags": {"0": {"value": "a"}, "1": {"value": "b"}},
		"limits": [{"key": "x", "value": 1}, {"key": "y", "value": 2}],
		"teams": {"0": {"key": "ops", "value": {"input": "i"}}},
		"items": [{"input": "kept"}],
		"nested": {"Tags": [{"value": 3}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Tags) != "[a b]" || got.Limits["y"] != 2 || got.Teams["ops"].Input != "i" || got.Items[0].Input != "kept" ||
		fmt.Sprint(got.Nested.Tags) != "[3]" {
		t.Errorf("merged %+v", got)
	}
	var ve *config.ValidationError
	if _, err := config.Merge(cfg{}, []byte(`{"limits": [{"key": "x", "value": 1}, {"key": "x", "value": 2}]}`)); !errors.As(err, &ve) {
		t.Errorf("a map with a key twice: %v", err)
	}
}
