package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/saap-go/agent/event"
)

// Input types of the form tag (input=...), and the FormKit element each
// becomes.
var formInputs = map[string]string{
	"text":     "primeInputText",
	"textarea": "primeTextarea",
	"number":   "primeInputNumber",
	"slider":   "primeSlider",
	"select":   "primeSelect",
	"toggle":   "primeToggleSwitch",
	"password": "primePassword",
	"locale":   "localeInput",
	"icon":     "iconSelector",
}

// formTagKeys are the keys of the form tag.
var formTagKeys = []string{"label", "help", "input", "options", "placeholder", "min", "max", "step", "rows", "models", "add"}

// modelModes are the kinds of model a model select offers (models=...):
// the platform's UI fills the select with the models of that kind.
var modelModes = []string{"chat", "embedding", "rerank", "image_generation", "audio_transcription", "audio_speech"}

// formTag is a parsed form struct tag.
type formTag struct {
	skip                            bool
	label, help, input, placeholder string
	options                         []string
	models, add                     string
	min, max, step                  *float64
	rows                            *int
}

// parseFormTag reads `form:"label=...,help=...,input=...,options=a|b"`. A
// comma separates two settings only when a known key and "=" follow it, so
// labels and help texts may contain commas. "-" leaves the field out of
// the form and the schema.
func parseFormTag(tag string) (formTag, error) {
	var ft formTag
	tag = strings.TrimSpace(tag)
	if tag == "" {
		return ft, nil
	}
	if tag == "-" {
		ft.skip = true
		return ft, nil
	}
	var parts []string
	for p := range strings.SplitSeq(tag, ",") {
		key, _, hasEq := strings.Cut(p, "=")
		if len(parts) > 0 && (!hasEq || !slices.Contains(formTagKeys, strings.TrimSpace(key))) {
			parts[len(parts)-1] += "," + p
			continue
		}
		parts = append(parts, p)
	}
	num := func(key, v string) (*float64, error) {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, fmt.Errorf("%s=%q is not a number", key, v)
		}
		return &f, nil
	}
	for _, p := range parts {
		key, v, ok := strings.Cut(p, "=")
		key = strings.TrimSpace(key)
		if !ok {
			return ft, fmt.Errorf("%q is not key=value (keys: %s)", p, strings.Join(formTagKeys, ", "))
		}
		var err error
		switch key {
		case "label":
			ft.label = v
		case "help":
			ft.help = v
		case "placeholder":
			ft.placeholder = v
		case "input":
			ft.input = strings.TrimSpace(v)
			if _, known := formInputs[ft.input]; !known {
				return ft, fmt.Errorf("input=%q is not one of %s", ft.input, strings.Join(sortedKeys(formInputs), ", "))
			}
		case "options":
			for o := range strings.SplitSeq(v, "|") {
				if o = strings.TrimSpace(o); o != "" {
					ft.options = append(ft.options, o)
				}
			}
		case "min":
			ft.min, err = num(key, v)
		case "max":
			ft.max, err = num(key, v)
		case "step":
			ft.step, err = num(key, v)
		case "models":
			ft.models = strings.TrimSpace(v)
			if !slices.Contains(modelModes, ft.models) {
				return ft, fmt.Errorf("models=%q is not one of %s", ft.models, strings.Join(modelModes, ", "))
			}
		case "add":
			ft.add = v
		case "rows":
			n, cerr := strconv.Atoi(strings.TrimSpace(v))
			if cerr != nil || n <= 0 {
				return ft, fmt.Errorf("rows=%q is not a positive integer", v)
			}
			ft.rows = &n
		default:
			return ft, fmt.Errorf("unknown key %q (keys: %s)", key, strings.Join(formTagKeys, ", "))
		}
		if err != nil {
			return ft, err
		}
	}
	return ft, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// object is a JSON object that keeps its key order, as the reference's
// element models dump their fields in declaration order.
type object []member

type member struct {
	key string
	val any
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.val)
		if err != nil {
			return nil, fmt.Errorf("form element field %s: %w", m.key, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (o *object) set(key string, val any) { *o = append(*o, member{key, val}) }

// element starts a PrimeVue element as the reference dumps it: the FormKit
// element fields, then the PrimeVue ones. The caller appends the fields of
// the concrete element and then "validation" (a computed field, dumped
// last).
func element(formkit, ref, name string, label, help, value any, required bool) object {
	return object{
		{"is_formkit_element", true},
		{"condition_if", nil},
		{"ref", ref},
		{"formkit", formkit},
		{"name", name},
		{"label", label},
		{"help", help},
		{"value", value},
		{"required", required},
		{"additional_validation_rules", nil},
	}
}

// validation is the PrimeVue element's validation rule string.
func validation(required bool, rules ...string) string {
	var out []string
	if required {
		out = append(out, "required")
	}
	return strings.Join(append(out, rules...), "|")
}

// pyFloat writes a float as Python's str() does for the slider's bounds.
func pyFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// boundString writes an InputNumber bound as the reference does: integers
// without a fraction, never in exponent form.
func boundString(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// textOrNil returns s, or nil for an empty s.
func textOrNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// formField builds the element of one configuration field. value is the
// field's default (nil for none); required says whether the UI asks for a
// value.
func formField(f fieldInfo, ft formTag, prefix string, value any) (object, error) {
	input := ft.input
	t := f.typ
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if input == "" {
		switch {
		case t == typeLocale:
			input = "locale"
		case len(ft.options) > 0 || ft.models != "":
			input = "select"
		case t.Kind() == reflect.Bool:
			input = "toggle"
		case t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
			input = "number"
		case t.Kind() == reflect.String && isSecret(f):
			input = "password"
		case t.Kind() == reflect.String:
			input = "text"
		default:
			return nil, nil // no natural input (a list, a map): left out, it keeps its default
		}
	}
	if input == "select" && len(ft.options) == 0 && ft.models == "" {
		return nil, errors.New("input=select needs options, e.g. options=a|b, or models=chat for a model select")
	}
	label := any(ft.label)
	if ft.label == "" {
		label = pyTitle(f.name)
	}
	help := textOrNil(ft.help)
	if help == nil && f.desc != "" {
		help = f.desc
	}
	nullable := f.typ.Kind() == reflect.Pointer || f.typ.Kind() == reflect.Interface
	blank := false
	if s, ok := value.(string); ok && s == "" {
		blank = true
	}
	required := !nullable && !blank && input != "toggle"
	if isSecret(f) {
		value = nil // a secret's default never leaves the runner
	}
	ref := prefix + f.name
	placeholder := textOrNil(ft.placeholder)
	e := element(formInputs[input], ref, f.name, label, help, value, required)
	switch input {
	case "text":
		e = append(e, object{{"disabled", false}, {"readonly", false}, {"placeholder", placeholder},
			{"prefix", nil}, {"suffix", nil}, {"icon_prefix", nil}, {"icon_suffix", nil}}...)
		e.set("validation", validation(required))
	case "textarea":
		var rows any
		if ft.rows != nil {
			rows = *ft.rows
		}
		e = append(e, object{{"disabled", false}, {"readonly", false}, {"placeholder", placeholder},
			{"rows", rows}, {"auto_resize", false}}...)
		e.set("validation", validation(required))
	case "number":
		var rules []string
		rules = append(rules, "number")
		if ft.min != nil {
			rules = append(rules, "min:"+boundString(*ft.min))
		}
		if ft.max != nil {
			rules = append(rules, "max:"+boundString(*ft.max))
		}
		e = append(e, object{{"disabled", false}, {"readonly", false}, {"placeholder", placeholder},
			{"min", ft.min}, {"max", ft.max}, {"step", ft.step}, {"use_grouping", true},
			{"min_fraction_digits", nil}, {"max_fraction_digits", nil}, {"locale", nil}, {"mode", nil},
			{"currency", nil}, {"prefix", nil}, {"suffix", nil}, {"show_buttons", false}, {"button_layout", nil}}...)
		e.set("validation", validation(required, rules...))
	case "slider":
		rules := []string{"number"}
		if ft.min != nil {
			rules = append(rules, "min:"+pyFloat(*ft.min))
		}
		if ft.max != nil {
			rules = append(rules, "max:"+pyFloat(*ft.max))
		}
		e = append(e, object{{"disabled", false}, {"readonly", false}, {"min", ft.min}, {"max", ft.max},
			{"step", ft.step}, {"range", false}, {"orientation", nil}}...)
		e.set("validation", validation(required, rules...))
	case "select":
		var options any = ft.options
		var mode any
		if ft.models != "" {
			// The platform's UI fetches the models of the mode.
			options, mode = []string{}, ft.models
		}
		e = append(e, object{{"options", options}, {"options_api_mode", mode}, {"option_label", nil},
			{"option_value", nil}, {"disabled", false}, {"readonly", false}, {"placeholder", placeholder},
			{"show_clear", false}, {"filter", false}}...)
		e.set("validation", validation(required))
	case "toggle":
		e = append(e, object{{"disabled", false}, {"readonly", false}, {"true_value", nil},
			{"false_value", nil}, {"prefix", nil}, {"suffix", nil}}...)
		e.set("validation", validation(required))
	case "password":
		e = append(e, object{{"disabled", false}, {"readonly", false}, {"placeholder", placeholder},
			{"feedback", false}, {"toggle_mask", true}, {"medium_regex", nil}, {"strong_regex", nil},
			{"prompt_label", nil}, {"weak_label", nil}, {"medium_label", nil}, {"strong_label", nil}}...)
		e.set("validation", validation(required, "length:8,"))
	case "locale":
		localeInput(&e, "text", placeholder, required)
	case "icon":
		e = append(e, object{{"options", defaultIcons}, {"placeholder", placeholder}}...)
		e.set("validation", validation(required))
	}
	return e, nil
}

// localeInput appends the fields of a LocaleInput, whose required rule is
// localeRequired: its value is always an object of the four locales.
func localeInput(e *object, inputType string, placeholder any, required bool) {
	*e = append(*e, object{{"input_type", inputType}, {"rows", 3}, {"placeholder", placeholder}}...)
	var rules []string
	if required {
		rules = append(rules, "localeRequired")
	}
	e.set("validation", strings.Join(rules, "|"))
}

// group is a FormKit group holding the elements of a nested struct.
func group(name, ref string, label any, children []any) object {
	return object{
		{"is_formkit_element", true},
		{"condition_if", nil},
		{"ref", ref},
		{"formkit", "group"},
		{"name", name},
		{"label", label},
		{"children", children},
	}
}

// configForm returns the form elements of the configuration fields of t,
// whose default values are defaults (a JSON object, or nil).
func configForm(dv reflect.Value, t reflect.Type, defaults map[string]json.RawMessage, prefix string, skip map[string]bool) ([]any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for dv.IsValid() && dv.Kind() == reflect.Pointer {
		if dv.IsNil() {
			dv = reflect.Value{}
			break
		}
		dv = dv.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("a form needs a struct configuration, not %v", t)
	}
	var out []any
	for _, f := range structFields(t) {
		if skip[f.name] {
			continue
		}
		sf := t.FieldByIndex(f.index)
		ft, err := parseFormTag(sf.Tag.Get("form"))
		if err != nil {
			return nil, fmt.Errorf("field %s: form tag: %w", prefix+f.name, err)
		}
		if ft.skip {
			continue
		}
		ftyp := f.typ
		for ftyp.Kind() == reflect.Pointer {
			ftyp = ftyp.Elem()
		}
		if ftyp.Kind() == reflect.Struct && ftyp != typeLocale && ftyp != typeTime && ft.input == "" {
			var sub map[string]json.RawMessage
			_ = json.Unmarshal(defaults[f.name], &sub)
			var sv reflect.Value
			if dv.IsValid() {
				sv, _ = dv.FieldByIndexErr(f.index)
			}
			children, err := configForm(sv, ftyp, sub, prefix+f.name+".", nil)
			if err != nil {
				return nil, err
			}
			label := any(ft.label)
			if ft.label == "" {
				label = pyTitle(f.name)
			}
			out = append(out, group(f.name, prefix+f.name, label, children))
			continue
		}
		if ft.input == "" && repeatable(ftyp) {
			e, err := repeaterField(f, ft, ftyp, prefix, defaults[f.name])
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", prefix+f.name, err)
			}
			out = append(out, e)
			continue
		}
		var value any
		if raw, ok := defaults[f.name]; ok && !bytes.Equal(raw, []byte("null")) {
			value = raw
		}
		if s, ok := stringValue(defaults[f.name]); ok {
			value = s
		}
		if f.typ == typeLocale && dv.IsValid() {
			if fv, err := dv.FieldByIndexErr(f.index); err == nil {
				value = localeFormValue(fv.Interface().(event.LocaleString))
			}
		}
		e, err := formField(f, ft, prefix, value)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", prefix+f.name, err)
		}
		if e != nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// itemType returns t without pointers and whether a repeater item can
// hold it: a scalar, a LocaleString or a struct.
func itemType(t reflect.Type) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == typeLocale:
		return t, true
	case t == typeTime || t == typeRaw || t == typeBytes:
		return t, false
	case t.Kind() == reflect.Struct, t.Kind() == reflect.String, t.Kind() == reflect.Bool,
		t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
		return t, true
	}
	return t, false
}

// repeatable reports whether a field of type t becomes a FormKit
// repeater: a list, or a map with string keys, of items a form can edit.
func repeatable(t reflect.Type) bool {
	if t == typeRaw || t == typeBytes {
		return false
	}
	switch t.Kind() {
	case reflect.Slice:
		_, ok := itemType(t.Elem())
		return ok
	case reflect.Map:
		_, ok := itemType(t.Elem())
		return ok && t.Key().Kind() == reflect.String
	}
	return false
}

// Texts of the repeater elements.
var (
	textAdd   = ls("Hinzufügen", "Add", "Ajouter", "Aggiungi")
	textKey   = ls("Schlüssel", "Key", "Clé", "Chiave")
	textValue = ls("Wert", "Value", "Valeur", "Valore")
)

// repeaterField builds the FormKit repeater of a list or map field, as the
// reference forms a list of forms: the children are the elements of one
// item. A list of structs has the struct's fields as items; a list of
// scalars items of one element named "value"; a map items of a "key" text
// input and the value (an element, or a group of a struct's fields, named
// "value"). The profile store turns the submitted items back into the
// list or map.
func repeaterField(f fieldInfo, ft formTag, t reflect.Type, prefix string, def json.RawMessage) (object, error) {
	ref := prefix + f.name
	elem, _ := itemType(t.Elem())
	var children []any
	if t.Kind() == reflect.Map {
		key, err := formField(fieldInfo{name: "key", typ: reflect.TypeFor[string]()}, formTag{label: "-"}, ref+".", nil)
		if err != nil {
			return nil, err
		}
		setLabel(key, textKey)
		children = append(children, key)
	}
	switch {
	case elem.Kind() == reflect.Struct && elem != typeLocale:
		inner := ref + "."
		if t.Kind() == reflect.Map {
			inner += "value."
		}
		own, err := configForm(reflect.Value{}, elem, nil, inner, nil)
		if err != nil {
			return nil, err
		}
		if t.Kind() == reflect.Map {
			children = append(children, group("value", ref+".value", textValue, own))
		} else {
			children = append(children, own...)
		}
	default:
		v, err := formField(fieldInfo{name: "value", typ: elem}, formTag{label: "-"}, ref+".", nil)
		if err != nil {
			return nil, err
		}
		setLabel(v, textValue)
		children = append(children, v)
	}
	label := any(ft.label)
	if ft.label == "" {
		label = pyTitle(f.name)
	}
	add := any(textAdd)
	if ft.add != "" {
		add = ft.add
	}
	count := func(p *float64) any {
		if p == nil {
			return nil
		}
		return int(*p)
	}
	e := object{
		{"is_formkit_element", true},
		{"condition_if", nil},
		{"ref", ref},
		{"formkit", "repeater"},
		{"name", f.name},
		{"label", label},
		{"add_label", add},
		{"remove_label", nil},
		{"up_control", nil},
		{"down_control", nil},
		{"insert_control", nil},
		{"min", count(ft.min)},
		{"max", count(ft.max)},
		{"children", children},
	}
	if v := repeaterValue(t, elem, def); v != nil {
		e.set("value", v)
	}
	return e, nil
}

// setLabel replaces the label of element e.
func setLabel(e object, label any) {
	for i := range e {
		if e[i].key == "label" {
			e[i].val = label
		}
	}
}

// repeaterValue is a list or map default as the repeater's items, or nil
// when there is none.
func repeaterValue(t, elem reflect.Type, def json.RawMessage) any {
	scalarItems := elem.Kind() != reflect.Struct || elem == typeLocale
	if t.Kind() == reflect.Slice {
		var items []json.RawMessage
		if json.Unmarshal(def, &items) != nil || len(items) == 0 {
			return nil
		}
		if !scalarItems {
			return items
		}
		out := make([]object, len(items))
		for i, it := range items {
			out[i] = object{{"value", it}}
		}
		return out
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(def, &m) != nil || len(m) == 0 {
		return nil
	}
	keys := sortedKeys(m)
	out := make([]object, len(keys))
	for i, k := range keys {
		out[i] = object{{"key", k}, {"value", m[k]}}
	}
	return out
}

// localeFormValue is a LocaleString as a LocaleInput's value: the
// reference's element value holds strings only, so an empty locale is "".
func localeFormValue(l event.LocaleString) object {
	return object{{"de", l.De}, {"en", l.En}, {"fr", l.Fr}, {"it", l.It}}
}

// stringValue decodes raw when it is a JSON string.
func stringValue(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// defaultIcons are the reference's preset icons of the icon selector.
var defaultIcons = []string{
	"mage:robot-fill", "mage:email-fill", "mage:message-fill", "mage:calculator-fill", "mage:chart-fill",
	"mage:chart-up-fill", "mage:calendar-fill", "mage:clipboard-fill", "mage:checklist-note-fill",
	"mage:search-fill", "mage:book-fill", "mage:globe-fill", "mage:earth-fill", "mage:pen-fill",
	"mage:edit-fill", "mage:file-fill", "mage:folder-fill", "mage:briefcase-fill", "mage:users-fill",
	"mage:user-fill", "mage:dollar-fill", "mage:credit-card-fill", "mage:megaphone-a-fill",
	"mage:shopping-cart-fill", "mage:phone-fill", "mage:clock-fill", "mage:database-fill",
	"mage:server-fill", "mage:settings-fill", "mage:security-shield-fill", "mage:bolt-fill",
	"mage:zap-fill", "mage:light-bulb-fill", "mage:star-fill", "mage:bookmark-fill", "mage:inbox-fill",
	"mage:archive-fill", "mage:share-fill", "mage:printer-fill", "mage:image-fill", "mage:video-fill",
	"mage:microphone-fill", "mage:location-fill", "mage:home-fill", "mage:building-a-fill",
	"mage:id-card-fill", "mage:key-fill", "mage:compass-fill", "mage:rocket-fill", "mage:goals-fill",
}

// ls is a LocaleString as an element's text: the four locales in order.
func ls(de, en, fr, it string) object {
	return object{{"de", de}, {"en", en}, {"fr", fr}, {"it", it}}
}

// Texts of the base fields' elements.
var (
	textAgentIDLabel         = ls("Agenten-ID", "Agent ID", "ID de l'agent", "ID dell'agente")
	textAgentIDHelp          = ls("Eindeutige Kennung dieses Profils: Kleinbuchstaben, Ziffern, - und _.", "Unique identifier of this profile: lowercase letters, digits, - and _.", "Identifiant unique de ce profil : lettres minuscules, chiffres, - et _.", "Identificatore univoco di questo profilo: lettere minuscole, cifre, - e _.")
	textAgentIDPlaceholder   = ls("mein-agent", "my-agent", "mon-agent", "mio-agente")
	textProcessIDLabel       = ls("Prozess-ID", "Process ID", "ID du processus", "ID del processo")
	textProcessIDHelp        = ls("Eindeutige Kennung dieser Prozessinstanz: Kleinbuchstaben, Ziffern, - und _.", "Unique identifier of this process instance: lowercase letters, digits, - and _.", "Identifiant unique de cette instance de processus : lettres minuscules, chiffres, - et _.", "Identificatore univoco di questa istanza di processo: lettere minuscole, cifre, - e _.")
	textProcessIDPlaceholder = ls("mein-prozess", "my-process", "mon-processus", "mio-processo")
	textNameLabel            = ls("Name", "Name", "Nom", "Nome")
	textNamePlaceholder      = ls("Name des Profils", "Name of the profile", "Nom du profil", "Nome del profilo")
	textDescLabel            = ls("Beschreibung", "Description", "Description", "Descrizione")
	textDescPlaceholder      = ls("Was dieses Profil tut", "What this profile does", "Ce que fait ce profil", "Cosa fa questo profilo")
	textIconLabel            = ls("Symbol", "Icon", "Icône", "Icona")
	textIconHelp             = ls("Ein Iconify-Name, z. B. mage:robot.", "An Iconify name, e.g. mage:robot.", "Un nom Iconify, p. ex. mage:robot.", "Un nome Iconify, ad es. mage:robot.")
	textIconPlaceholder      = ls("Symbol wählen", "Choose an icon", "Choisir une icône", "Scegli un'icona")
	textCronLabel            = ls("Zeitplan", "Schedule", "Planification", "Pianificazione")
	textCronHelp             = ls("Wann dieses Profil automatisch läuft.", "When this profile runs automatically.", "Quand ce profil s'exécute automatiquement.", "Quando questo profilo viene eseguito automaticamente.")
	textCronTimezone         = ls("Zeitzone", "Timezone", "Fuseau horaire", "Fuso orario")
)

// baseForm returns the elements of the base configuration fields every
// profile has, in the reference's order; the schedule goes last, after the
// agent's own settings, so it is returned apart.
func (p profile) baseForm(schedulable bool) (head []any, cron object) {
	agentID := element("primeInputText", p.id, p.id, p.idLabel, p.idHelp, nil, true)
	agentID = append(agentID, object{{"disabled", false}, {"readonly", false}, {"placeholder", p.idPlaceholder},
		{"prefix", nil}, {"suffix", nil}, {"icon_prefix", nil}, {"icon_suffix", nil}}...)
	agentID.set("validation", "required")

	name := element("localeInput", "name", "name", textNameLabel, nil, nil, true)
	localeInput(&name, "text", textNamePlaceholder, true)
	desc := element("localeInput", "description", "description", textDescLabel, nil, nil, true)
	localeInput(&desc, "textarea", textDescPlaceholder, true)

	icon := element("iconSelector", "icon", "icon", textIconLabel, textIconHelp, p.icon, true)
	icon = append(icon, object{{"options", defaultIcons}, {"placeholder", textIconPlaceholder}}...)
	icon.set("validation", "required")

	head = []any{agentID, name, desc, icon}
	if schedulable {
		cron = element("cronInput", "cron", "cron", textCronLabel, textCronHelp, nil, false)
		cron = append(cron, object{{"timezone_placeholder", textCronTimezone}, {"filter", true}}...)
		cron.set("validation", "")
	}
	return head, cron
}

// Form returns the FormKit form of a configuration: the base fields every
// profile has (agent_id, name, description, icon), the fields of config (a
// value of the configuration type holding its defaults, or nil) and, for a
// schedulable class, the schedule (cron), as the reference generates it for
// the platform's admin UI. See the package documentation for the form tag.
func Form(config any, schedulable bool) ([]json.RawMessage, error) {
	return agentProfile.form(config, schedulable)
}

// ProcessForm returns the FormKit form of a process configuration: the base
// fields every process profile has (process_id, name, description, icon)
// and the fields of config (a value of the configuration type holding its
// defaults, or nil), as the reference generates it for the admin UI.
func ProcessForm(config any) ([]json.RawMessage, error) {
	return processProfile.form(config, false)
}

func (p profile) form(config any, schedulable bool) ([]json.RawMessage, error) {
	head, cron := p.baseForm(schedulable)
	elems := head
	if config != nil {
		v := reflect.ValueOf(config)
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return nil, fmt.Errorf("discovery: config defaults are a nil %v", v.Type())
			}
			v = v.Elem()
		}
		var defaults map[string]json.RawMessage
		if data, err := json.Marshal(v.Interface()); err == nil {
			_ = json.Unmarshal(data, &defaults)
		}
		own, err := configForm(v, v.Type(), defaults, "", p.fieldNames())
		if err != nil {
			return nil, fmt.Errorf("discovery: form of %v: %w", v.Type(), err)
		}
		elems = append(elems, own...)
	}
	if cron != nil {
		elems = append(elems, cron)
	}
	out := make([]json.RawMessage, len(elems))
	for i, e := range elems {
		data, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("discovery: form: %w", err)
		}
		out[i] = data
	}
	return out, nil
}

// FormElements returns the FormKit elements of the own fields of form (a
// HumanWorkEvent subclass value), by JSON member name, each holding the
// field's current value as its default. A work request carries its forms
// so: the reference's forms hold elements where the Go fields hold data.
func FormElements(form event.Event) (map[string]json.RawMessage, error) {
	v := reflect.ValueOf(form)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, fmt.Errorf("discovery: form elements of %T: not a non-nil pointer", form)
	}
	v = v.Elem()
	skip := map[string]bool{}
	for _, f := range structFields(reflect.TypeFor[event.HumanWorkEvent]()) {
		skip[f.name] = true
	}
	var defaults map[string]json.RawMessage
	if data, err := json.Marshal(v.Interface()); err == nil {
		_ = json.Unmarshal(data, &defaults)
	}
	elems, err := configForm(v, v.Type(), defaults, "", skip)
	if err != nil {
		return nil, fmt.Errorf("discovery: form %v: %w", v.Type(), err)
	}
	out := make(map[string]json.RawMessage, len(elems))
	for _, e := range elems {
		data, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("discovery: form %v: %w", v.Type(), err)
		}
		var named struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(data, &named); err != nil || named.Name == "" {
			return nil, fmt.Errorf("discovery: form %v: an element without a name", v.Type())
		}
		out[named.Name] = data
	}
	return out, nil
}
