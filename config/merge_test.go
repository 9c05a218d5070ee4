package config_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/config"
	"github.com/saap-go/agent/event"
)

type llm struct {
	Model       string            `json:"model"`
	Temperature float64           `json:"temperature"`
	MaxTokens   int               `json:"max_tokens"`
	Stop        []string          `json:"stop"`
	Headers     map[string]string `json:"headers"`
}

type settings struct {
	Name    string  `json:"name"`
	APIKey  string  `json:"api_key"`
	LLM     llm     `json:"llm"`
	Enabled bool    `json:"enabled"`
	Limit   *int    `json:"limit"`
	Extra   any     `json:"extra"`
	Tags    []tag   `json:"tags"`
	Note    *string `json:"note,omitempty"`
}

type tag struct {
	Key string `json:"key"`
}

func defaults() settings {
	return settings{
		Name: "default",
		LLM: llm{
			Model: "gpt-4o", Temperature: 0.2, MaxTokens: 512,
			Stop: []string{"\n\n"}, Headers: map[string]string{"a": "1"},
		},
		Enabled: true,
	}
}

func intp(i int) *int { return &i }

func TestMerge(t *testing.T) {
	tests := []struct {
		name    string
		overlay string
		want    func(s *settings)
	}{
		{"nil overlay keeps defaults", "", func(*settings) {}},
		{"null overlay keeps defaults", "null", func(*settings) {}},
		{"empty object keeps defaults", "{}", func(*settings) {}},
		{"scalar replaces", `{"name":"wiki"}`, func(s *settings) { s.Name = "wiki" }},
		{"nested objects merge key by key", `{"llm":{"temperature":0.7}}`, func(s *settings) { s.LLM.Temperature = 0.7 }},
		{"arrays replace, not append", `{"llm":{"stop":["END"]}}`, func(s *settings) { s.LLM.Stop = []string{"END"} }},
		{"maps merge", `{"llm":{"headers":{"b":"2"}}}`, func(s *settings) { s.LLM.Headers = map[string]string{"a": "1", "b": "2"} }},
		{"null clears a nullable field", `{"llm":{"stop":null}}`, func(s *settings) { s.LLM.Stop = nil }},
		{"pointer set", `{"limit":3}`, func(s *settings) { s.Limit = intp(3) }},
		{"any takes anything", `{"extra":{"x":[1,"y"]}}`, func(s *settings) {
			s.Extra = map[string]any{"x": []any{1.0, "y"}}
		}},
		{"unknown keys are ignored", `{"unknown":{"deep":1},"llm":{"nope":true}}`, func(*settings) {}},
		{"keys match exactly", `{"NAME":"upper"}`, func(*settings) {}},
		{"list of structs", `{"tags":[{"key":"k1"},{"key":"k2"}]}`, func(s *settings) { s.Tags = []tag{{"k1"}, {"k2"}} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := defaults()
			got, err := config.Merge(d, json.RawMessage(tt.overlay))
			if err != nil {
				t.Fatalf("Merge: %v", err)
			}
			want := defaults()
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Merge (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(defaults(), d); diff != "" {
				t.Errorf("Merge modified the defaults (-before +after):\n%s", diff)
			}
		})
	}
}

func TestMergeDoesNotShareMemoryWithDefaults(t *testing.T) {
	d := defaults()
	got, err := config.Merge(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	got.LLM.Headers["a"] = "changed"
	got.LLM.Stop[0] = "changed"
	if d.LLM.Headers["a"] != "1" || d.LLM.Stop[0] != "\n\n" {
		t.Fatalf("result shares memory with the defaults: %+v", d.LLM)
	}
}

func TestMergeIntoMap(t *testing.T) {
	got, err := config.Merge(map[string]any{"a": 1, "b": map[string]any{"c": 2}}, json.RawMessage(`{"b":{"d":3}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": 1.0, "b": map[string]any{"c": 2.0, "d": 3.0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestMergeTypeMismatchesNameFieldsNotValues(t *testing.T) {
	const secret = "sk-very-secret-value"
	overlay := `{
		"name": 42,
		"api_key": {"nested": "` + secret + `"},
		"llm": {"temperature": "` + secret + `", "max_tokens": 1.5, "stop": "` + secret + `"},
		"enabled": null,
		"limit": "` + secret + `",
		"tags": [{"key": "ok"}, {"key": 7}]
	}`
	_, err := config.Merge(defaults(), json.RawMessage(overlay))
	var ve *config.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Merge: got %v, want a *ValidationError", err)
	}
	wantFields := []string{"api_key", "enabled", "limit", "llm.max_tokens", "llm.stop", "llm.temperature", "name", "tags[1].key"}
	if diff := cmp.Diff(wantFields, ve.Fields); diff != "" {
		t.Errorf("Fields (-want +got):\n%s", diff)
	}
	if len(ve.Reasons) != len(ve.Fields) {
		t.Errorf("Reasons has %d entries for %d fields", len(ve.Reasons), len(ve.Fields))
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "42") {
		t.Errorf("error message leaks a value: %q", err)
	}
	for _, f := range wantFields {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error message %q does not name %s", err, f)
		}
	}
}

func TestMergeRejectsOverlaysThatAreNotObjects(t *testing.T) {
	for _, overlay := range []string{`[1,2]`, `"text"`, `7`, `{"a":`, `{} {}`} {
		_, err := config.Merge(defaults(), json.RawMessage(overlay))
		var ve *config.ValidationError
		if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0] != "(root)" {
			t.Errorf("Merge(%s): got %v, want a *ValidationError on (root)", overlay, err)
		}
	}
}

func TestMergeRejectsDefaultsThatAreNotObjects(t *testing.T) {
	if _, err := config.Merge(42, json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "JSON object") {
		t.Fatalf("Merge(42): got %v, want an error about a JSON object", err)
	}
	if _, err := config.Merge(func() {}, nil); err == nil {
		t.Fatal("Merge(func): want an error")
	}
}

type validated struct {
	URL     string `json:"url"`
	Retries int    `json:"retries"`
	Token   string `json:"token"`
}

func (v validated) Validate() error {
	var e *config.ValidationError
	if v.URL == "" {
		e = config.Invalid("url", "is required")
	}
	if v.Retries < 0 || v.Retries > 10 {
		if e == nil {
			e = &config.ValidationError{}
		}
		e.Add("retries", "must be between 0 and 10")
	}
	if e != nil {
		return e
	}
	return nil
}

func TestMergeCallsValidate(t *testing.T) {
	_, err := config.Merge(validated{Retries: 3}, json.RawMessage(`{"retries": 99, "token": "secret-token"}`))
	var ve *config.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want *ValidationError", err)
	}
	if diff := cmp.Diff([]string{"url", "retries"}, ve.Fields); diff != "" {
		t.Errorf("Fields (-want +got):\n%s", diff)
	}
	if strings.Contains(err.Error(), "99") || strings.Contains(err.Error(), "secret-token") {
		t.Errorf("error leaks a value: %q", err)
	}

	got, err := config.Merge(validated{Retries: 3}, json.RawMessage(`{"url": "http://x"}`))
	if err != nil || got.URL != "http://x" || got.Retries != 3 {
		t.Fatalf("valid config: got %+v, %v", got, err)
	}
}

type opaque struct {
	Password string `json:"password"`
}

var errOpaque = errors.New("password hunter2 is too short")

func (o *opaque) Validate() error {
	if len(o.Password) < 8 {
		return errOpaque
	}
	return nil
}

func TestMergeHidesTextOfPlainValidateErrors(t *testing.T) {
	_, err := config.Merge(opaque{}, json.RawMessage(`{"password": "hunter2"}`))
	if !errors.Is(err, errOpaque) {
		t.Fatalf("got %v, want it to wrap the Validate error", err)
	}
	var ve *config.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %T, want *ValidationError", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error leaks the value: %q", err)
	}
}

type embedded struct {
	Base
	Own string `json:"own"`
}

// Base is exported so that its fields are promoted as encoding/json does.
type Base struct {
	Shared int `json:"shared"`
}

func TestMergeChecksPromotedFields(t *testing.T) {
	_, err := config.Merge(embedded{}, json.RawMessage(`{"shared": "x"}`))
	var ve *config.ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0] != "shared" {
		t.Fatalf("got %v, want a *ValidationError on shared", err)
	}
	got, err := config.Merge(embedded{}, json.RawMessage(`{"shared": 2, "own": "o"}`))
	if err != nil || got.Shared != 2 || got.Own != "o" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestMergeIntegerRange(t *testing.T) {
	type small struct {
		N int8   `json:"n"`
		U uint16 `json:"u"`
	}
	_, err := config.Merge(small{}, json.RawMessage(`{"n": 300, "u": -1}`))
	var ve *config.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want *ValidationError", err)
	}
	if diff := cmp.Diff([]string{"n", "u"}, ve.Fields); diff != "" {
		t.Errorf("Fields (-want +got):\n%s", diff)
	}
}

func FuzzMerge(f *testing.F) {
	f.Add([]byte(`{"llm":{"temperature":0.7}}`))
	f.Add([]byte(`{"tags":[{"key":1}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, overlay []byte) {
		got, err := config.Merge(defaults(), overlay)
		if err != nil {
			var ve *config.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("non-validation error %v", err)
			}
			return
		}
		_ = got
	})
}

func TestMergeValue(t *testing.T) {
	got, err := config.MergeValue(defaults(), json.RawMessage(`{"llm":{"temperature":0.7}}`))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := got.(settings)
	if !ok {
		t.Fatalf("MergeValue returned %T, want settings", got)
	}
	want := defaults()
	want.LLM.Temperature = 0.7
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// The type checks and Validate apply as in Merge.
	_, err = config.MergeValue(defaults(), json.RawMessage(`{"enabled": null, "llm": {"max_tokens": "many"}}`))
	var ve *config.ValidationError
	if !errors.As(err, &ve) || !cmp.Equal(ve.Fields, []string{"enabled", "llm.max_tokens"}) {
		t.Fatalf("got %v, want a *ValidationError on enabled and llm.max_tokens", err)
	}
	if _, err := config.MergeValue(validated{}, json.RawMessage(`{"retries": 11, "url": "u"}`)); !errors.As(err, &ve) || ve.Fields[0] != "retries" {
		t.Fatalf("Validate through MergeValue: got %v", err)
	}

	m, err := config.MergeValue(nil, json.RawMessage(`{"a": {"b": 1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"a": map[string]any{"b": 1.0}}, m); diff != "" {
		t.Errorf("MergeValue(nil) (-want +got):\n%s", diff)
	}
}

// A profile's texts in the four locales fill the LocaleString fields of
// the configuration, kept texts of the defaults included.
func TestMergeKeysDifferingInCase(t *testing.T) {
	type texts struct {
		Greeting event.LocaleString   `json:"greeting"`
		Notes    []event.LocaleString `json:"notes"`
	}
	got, err := config.Merge(texts{Greeting: event.L("Hallo", "Hello", "", "")},
		[]byte(`{"greeting":{"de":"Moin","en":"Hi","fr":"","it":""},"notes":[{"de":"a","en":"b","fr":"","it":""}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Greeting.De != "Moin" || got.Greeting.En != "Hi" || len(got.Notes) != 1 || got.Notes[0].En != "b" {
		t.Errorf("merged %+v", got)
	}
}
