package agenttest_test

import (
	"testing"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

var texts = &step.Catalog{Texts: map[string]map[string]string{
	"de": {"hello": "Guten Tag", "thinking": "Ich denke nach"},
	"en": {"hello": "Good day", "thinking": "Thinking"},
}}

// Salute is the answer of the localised agent.
type Salute struct {
	event.StopEvent
	Text   string `json:"text"`
	Locale string `json:"locale"`
}

func init() { event.MustRegister[Salute]() }

// greet answers in the run's locale and streams a thought whose display
// name is localised in all four locales.
func greet(ctx step.Context, m *event.UserMessageEvent) (*Salute, error) {
	th := &event.ThoughtEvent{}
	th.DisplayName = step.Text(texts, "thinking").Ptr()
	if err := ctx.Emit(th); err != nil {
		return nil, err
	}
	return &Salute{Text: ctx.Translate("hello"), Locale: ctx.Locale()}, nil
}

// A run's locale comes from its start event's locale field (through the run
// context, as the reference's LocaleHandler reads it); its texts come from
// the agent's translator in that locale, with the default locale for one
// the translator lacks or the platform does not know.
func TestRunLocale(t *testing.T) {
	w, err := step.NewWorkflow("Greeter", step.New(greet, step.DisplayName(event.L("Grüssen", "Greet", "", ""))))
	if err != nil {
		t.Fatal(err)
	}
	h := agenttest.New(t, w, agenttest.WithTranslator(texts))
	for _, c := range []struct{ locale, wantLocale, wantText string }{
		{"de", "de", "Guten Tag"},
		{"en", "en", "Good day"},
		{"fr", "fr", "Guten Tag"}, // no French texts: German, the default
		{"es", "de", "Guten Tag"}, // not a platform locale
	} {
		res := h.Start(&event.UserMessageEvent{User: &event.UserIdentity{}, Locale: c.locale})
		g, ok := agenttest.TerminalAs[*Salute](res)
		if !ok {
			t.Fatalf("locale %s: run ended with %v", c.locale, res.Names())
		}
		if g.Locale != c.wantLocale || g.Text != c.wantText {
			t.Errorf("locale %s: got %q in %q, want %q in %q", c.locale, g.Text, g.Locale, c.wantText, c.wantLocale)
		}
		th := res.Get("ThoughtEvent")
		if len(th) != 1 {
			t.Fatalf("locale %s: %d thoughts", c.locale, len(th))
		}
		if got := *th[0].(*event.ThoughtEvent).DisplayName; got != event.L("Ich denke nach", "Thinking", "Ich denke nach", "Ich denke nach") {
			t.Errorf("thought display name %+v", got)
		}
	}

	// Without a translator a key is its own text.
	h = agenttest.New(t, w)
	res := h.Start(&event.UserMessageEvent{User: &event.UserIdentity{}, Locale: "de"})
	if g, ok := agenttest.TerminalAs[*Salute](res); !ok || g.Text != "hello" {
		t.Errorf("without a translator: %+v", g)
	}
}
