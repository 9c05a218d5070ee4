package step_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

var greetings = &step.Catalog{Texts: map[string]map[string]string{
	"de": {"greet.name": "Begrüssen", "greet.text": "Guten Tag", "only.de": "Nur Deutsch"},
	"en": {"greet.name": "Greet", "greet.text": "Good day"},
	"fr": {"greet.name": "Saluer", "greet.text": ""},
}}

func TestCatalogFallback(t *testing.T) {
	for _, c := range []struct{ locale, key, want string }{
		{"de", "greet.text", "Guten Tag"},
		{"en", "greet.text", "Good day"},
		{"EN", "greet.text", "Good day"},     // locales are case-blind
		{"fr", "greet.text", "Guten Tag"},    // an empty text counts as missing: the default locale's
		{"it", "greet.text", "Guten Tag"},    // a locale without texts: the default locale's
		{"en", "only.de", "Nur Deutsch"},     // a key only the default locale has
		{"en", "missing.key", "missing.key"}, // nowhere: the key itself
		{"xx", "greet.name", "Begrüssen"},    // an unknown locale
		{"", "greet.name", "Begrüssen"},      // no locale
		{"it", "greet.name", "Begrüssen"},    // not in Italian
		{"fr", "greet.name", "Saluer"},       // in French
		{"de", "", ""},                       // the empty key is its own text
	} {
		if got := greetings.Translate(c.locale, c.key); got != c.want {
			t.Errorf("Translate(%q, %q) = %q, want %q", c.locale, c.key, got, c.want)
		}
	}
	en := &step.Catalog{Default: "en", Texts: greetings.Texts}
	if got := en.Translate("it", "greet.text"); got != "Good day" {
		t.Errorf("with default en: %q, want the English text", got)
	}
	var none *step.Catalog
	if got := none.Translate("de", "k"); got != "k" {
		t.Errorf("nil catalog: %q, want the key", got)
	}
}

func TestNormalizeLocale(t *testing.T) {
	for in, want := range map[string]string{"de": "de", "en": "en", "FR": "fr", " it ": "it", "": "de", "es": "de", "en-US": "de"} {
		if got := step.NormalizeLocale(in); got != want {
			t.Errorf("NormalizeLocale(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLocaleStringGetFallback(t *testing.T) {
	l := event.LocaleString{En: "only English", Fr: "français"}
	for loc, want := range map[string]string{"fr": "français", "de": "only English", "it": "only English", "xx": "only English"} {
		if got := l.Get(loc); got != want {
			t.Errorf("Get(%q) = %q, want %q", loc, got, want)
		}
	}
	if got := (event.LocaleString{}).Get("de"); got != "" {
		t.Errorf("empty LocaleString: %q", got)
	}
}

// A localised text travels as the reference's LocaleString: an object with
// the four keys in the order de, en, fr, it, each a string or null.
func TestLocalisedTextWire(t *testing.T) {
	th := &event.ThoughtEvent{}
	th.DisplayName = step.Text(greetings, "greet.text").Ptr()
	th.DisplayDescription = event.LocaleString{En: "English only"}.Ptr()
	th.EventID, th.CreatedAt = "0123456789abcdef01234567", 1
	data, err := event.Marshal(th)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"display_name":        `{"de": "Guten Tag", "en": "Good day", "fr": "Guten Tag", "it": "Guten Tag"}`,
		"display_description": `{"de": null, "en": "English only", "fr": null, "it": null}`,
	}
	for k, w := range want {
		var a, b any
		if err := json.Unmarshal(got[k], &a); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		_ = json.Unmarshal([]byte(w), &b)
		if diff := cmp.Diff(b, a); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
	// The keys in the reference's order, all four always written.
	if s := string(got["display_description"]); s != `{"de": null, "en": "English only", "fr": null, "it": null}` {
		t.Errorf("display_description written as %s", s)
	}
	if txt := step.Text(nil, "k"); txt != event.L("k", "k", "k", "k") {
		t.Errorf("Text(nil) = %+v, want the key in every locale", txt)
	}
}

// Discovery's graph shows a step's localised name and description as the
// reference's visualizer does: the German text, else the first locale that
// has one, else the step's name (and no description).
func TestGraphLocalisedStepTexts(t *testing.T) {
	greet := step.New(func(ctx step.Context, s *Start) (*Done, error) { return &Done{}, nil }, step.Name("greet"),
		step.DisplayName(step.Text(greetings, "greet.name")),
		step.DisplayDescription(event.LocaleString{En: "Says hello", Fr: "Dit bonjour"}))
	w, err := step.NewWorkflow("Greeter", greet)
	if err != nil {
		t.Fatal(err)
	}
	var node step.GraphNode
	for _, n := range w.Graph().Nodes {
		if n.ID == "greet" {
			node = n
		}
	}
	data, err := json.Marshal(node)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"greet","type":"step","label":"Begrüssen","description":"Says hello","icon":null}`; string(data) != want {
		t.Errorf("graph node %s, want %s", data, want)
	}
	if got := greet.DisplayName(); got.Fr != "Saluer" {
		t.Errorf("DisplayName() = %+v", got)
	}

	plain := step.New(func(ctx step.Context, s *Start) (*Done, error) { return &Done{}, nil }, step.Name("plain"),
		step.Description("just text"))
	if got := plain.DisplayDescription(); got != event.L("just text", "just text", "just text", "just text") {
		t.Errorf("DisplayDescription of a plain description: %+v", got)
	}
	w, err = step.NewWorkflow("Plain", plain)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range w.Graph().Nodes {
		if n.ID == "plain" && (n.Label != "plain" || n.Description == nil || *n.Description != "just text") {
			t.Errorf("plain step node %+v", n)
		}
	}
}
