package step

import (
	"strings"

	"github.com/saap-go/agent/event"
)

// DefaultLocale is the platform's default locale: the locale of a run whose
// start event names none, or one the platform does not know.
const DefaultLocale = "de"

// Locales are the platform's locales, in the order of a LocaleString.
var Locales = [...]string{"de", "en", "fr", "it"}

// NormalizeLocale returns locale lowercased if it is one of Locales, and
// DefaultLocale otherwise, as the reference's LocaleHandler reads a run's
// locale.
func NormalizeLocale(locale string) string {
	l := strings.ToLower(strings.TrimSpace(locale))
	for _, k := range Locales {
		if l == k {
			return k
		}
	}
	return DefaultLocale
}

// A Translator gives the text of a key in a locale. Steps use it through
// Context.Translate, which passes the run's locale; an agent supplies one
// (see Catalog for a map-based one). Translate must be safe for concurrent
// use and return something for every key: the key itself when it knows no
// text.
type Translator interface {
	Translate(locale, key string) string
}

// Catalog is a Translator over texts held in memory: Texts maps a locale to
// its keys and their texts. A key missing in the asked locale falls back to
// the Default locale (DefaultLocale when empty), then to the key itself, as
// a missing translation of the reference shows its key. A Catalog is
// read-only once in use.
type Catalog struct {
	Default string
	Texts   map[string]map[string]string
}

// Translate returns the text of key in locale, with the fallbacks described
// on Catalog.
func (c *Catalog) Translate(locale, key string) string {
	if c == nil {
		return key
	}
	if s, ok := c.Texts[strings.ToLower(locale)][key]; ok && s != "" {
		return s
	}
	def := c.Default
	if def == "" {
		def = DefaultLocale
	}
	if s, ok := c.Texts[def][key]; ok && s != "" {
		return s
	}
	return key
}

// Text returns key in the four locales, each looked up in t with its
// fallbacks, the way the reference builds a LocaleString from a translation
// path: for step names and descriptions, and for the display texts of the
// events a step emits. A nil t gives the key in every locale.
func Text(t Translator, key string) event.LocaleString {
	if t == nil {
		return event.L(key, key, key, key)
	}
	return event.L(t.Translate("de", key), t.Translate("en", key), t.Translate("fr", key), t.Translate("it", key))
}

// DisplayName sets the step's localised name, which discovery shows for the
// step in the graph (as the reference does, in German, else the first
// locale that has a text). The step's identity stays its Name.
func DisplayName(l event.LocaleString) Option { return func(o *options) { o.displayName = l } }

// DisplayDescription sets the step's localised description, shown in the
// discovery graph like DisplayName; it takes precedence over Description.
func DisplayDescription(l event.LocaleString) Option {
	return func(o *options) { o.displayDesc = l }
}

// DisplayName returns the name set with the DisplayName option (empty if
// none).
func (s *Step) DisplayName() event.LocaleString { return s.displayName }

// DisplayDescription returns the description set with DisplayDescription,
// or else Description's text in every locale.
func (s *Step) DisplayDescription() event.LocaleString {
	if !s.displayDesc.Empty() || s.description == "" {
		return s.displayDesc
	}
	d := s.description
	return event.L(d, d, d, d)
}

// graphLabel is the graph's label of the step: its localised name as the
// reference's visualizer reads it (in the default locale, with the
// LocaleString's fallbacks), else its name.
func (s *Step) graphLabel() string {
	if l := s.displayName.Get(DefaultLocale); l != "" {
		return l
	}
	return s.name
}

// graphDescription is the graph's description of the step ("" for none).
func (s *Step) graphDescription() string {
	if l := s.displayDesc.Get(DefaultLocale); l != "" {
		return l
	}
	return s.description
}
