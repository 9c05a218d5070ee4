package discovery_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
)

type formSettings struct {
	Model       string             `json:"model" form:"label=Model,help=Which LLM answers, and how fast,input=select,options=gpt-4o|gpt-4o-mini"`
	Temperature float64            `json:"temperature" form:"label=Temperature,input=slider,min=0,max=2,step=0.1"`
	MaxTokens   int                `json:"max_tokens" form:"min=1,max=100000"`
	Prompt      string             `json:"prompt" form:"input=textarea,rows=6,placeholder=You are..."`
	APIKey      string             `json:"api_key"`
	Stream      bool               `json:"stream"`
	Greeting    event.LocaleString `json:"greeting"`
	Endpoint    *string            `json:"endpoint" description:"Optional endpoint."`
	Internal    string             `json:"internal" form:"-"`
	Tools       []string           `json:"tools"`
	LLM         formLLM            `json:"llm" form:"label=Language model"`
}

type formLLM struct {
	BaseURL string `json:"base_url"`
}

var formDefaults = formSettings{Model: "gpt-4o", Temperature: 0.2, MaxTokens: 512, APIKey: "sk-secret", LLM: formLLM{BaseURL: "http://llm"}}

// jsonEqual compares two JSON texts by value and by key order.
func jsonEqual(t *testing.T, what string, want string, got []byte) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want: %v", what, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got: %v", what, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
	if wk, gk := keyOrder(t, []byte(want)), keyOrder(t, got); !slices.Equal(wk, gk) {
		t.Errorf("%s: key order %v, want %v (the reference's field order)", what, gk, wk)
	}
}

func keyOrder(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		tok, _ := dec.Token()
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		_ = dec.Decode(&skip)
	}
	return keys
}

func elementNames(t *testing.T, form []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, e := range form {
		var el struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(e, &el); err != nil {
			t.Fatal(err)
		}
		out = append(out, el.Name)
	}
	return out
}

func elementNamed(t *testing.T, form []json.RawMessage, name string) []byte {
	t.Helper()
	for _, e := range form {
		var el struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(e, &el)
		if el.Name == name {
			return e
		}
	}
	t.Fatalf("no form element %q in %v", name, elementNames(t, form))
	return nil
}

// The form is what the reference's AgentRunner publishes: the base fields'
// elements, the blueprint's own settings, and for a schedulable class the
// cron element last. Each element is the element model as the reference
// dumps it (field names, declaration order, the computed validation last).
func TestGeneratedForm(t *testing.T) {
	r, err := discovery.Build(cronWorkflow(t), discovery.Class{Config: formDefaults})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"agent_id", "name", "description", "icon", "model", "temperature", "max_tokens", "prompt",
		"api_key", "stream", "greeting", "endpoint", "tools", "llm", "cron"}
	if diff := cmp.Diff(want, elementNames(t, r.Form)); diff != "" {
		t.Errorf("form elements (-want +got):\n%s", diff)
	}

	for _, tc := range []struct{ name, want string }{
		{"agent_id", `{"is_formkit_element": true, "condition_if": null, "ref": "agent_id", "formkit": "primeInputText",
			"name": "agent_id", "label": {"de": "Agenten-ID", "en": "Agent ID", "fr": "ID de l'agent", "it": "ID dell'agente"},
			"help": {"de": "Eindeutige Kennung dieses Profils: Kleinbuchstaben, Ziffern, - und _.", "en": "Unique identifier of this profile: lowercase letters, digits, - and _.", "fr": "Identifiant unique de ce profil : lettres minuscules, chiffres, - et _.", "it": "Identificatore univoco di questo profilo: lettere minuscole, cifre, - e _."},
			"value": null, "required": true, "additional_validation_rules": null, "disabled": false, "readonly": false,
			"placeholder": {"de": "mein-agent", "en": "my-agent", "fr": "mon-agent", "it": "mio-agente"},
			"prefix": null, "suffix": null, "icon_prefix": null, "icon_suffix": null, "validation": "required"}`},
		{"temperature", `{"is_formkit_element": true, "condition_if": null, "ref": "temperature", "formkit": "primeSlider",
			"name": "temperature", "label": "Temperature", "help": null, "value": 0.2, "required": true,
			"additional_validation_rules": null, "disabled": false, "readonly": false, "min": 0.0, "max": 2.0, "step": 0.1,
			"range": false, "orientation": null, "validation": "required|number|min:0.0|max:2.0"}`},
		{"model", `{"is_formkit_element": true, "condition_if": null, "ref": "model", "formkit": "primeSelect",
			"name": "model", "label": "Model", "help": "Which LLM answers, and how fast", "value": "gpt-4o", "required": true,
			"additional_validation_rules": null, "options": ["gpt-4o", "gpt-4o-mini"], "options_api_mode": null,
			"option_label": null, "option_value": null, "disabled": false, "readonly": false, "placeholder": null,
			"show_clear": false, "filter": false, "validation": "required"}`},
		{"stream", `{"is_formkit_element": true, "condition_if": null, "ref": "stream", "formkit": "primeToggleSwitch",
			"name": "stream", "label": "Stream", "help": null, "value": false, "required": false,
			"additional_validation_rules": null, "disabled": false, "readonly": false, "true_value": null,
			"false_value": null, "prefix": null, "suffix": null, "validation": ""}`},
		{"cron", `{"is_formkit_element": true, "condition_if": null, "ref": "cron", "formkit": "cronInput", "name": "cron",
			"label": {"de": "Zeitplan", "en": "Schedule", "fr": "Planification", "it": "Pianificazione"},
			"help": {"de": "Wann dieses Profil automatisch läuft.", "en": "When this profile runs automatically.", "fr": "Quand ce profil s'exécute automatiquement.", "it": "Quando questo profilo viene eseguito automaticamente."},
			"value": null, "required": false, "additional_validation_rules": null,
			"timezone_placeholder": {"de": "Zeitzone", "en": "Timezone", "fr": "Fuseau horaire", "it": "Fuso orario"},
			"filter": true, "validation": ""}`},
		{"llm", `{"is_formkit_element": true, "condition_if": null, "ref": "llm", "formkit": "group", "name": "llm",
			"label": "Language model", "children": [{"is_formkit_element": true, "condition_if": null, "ref": "llm.base_url",
			"formkit": "primeInputText", "name": "base_url", "label": "Base Url", "help": null, "value": "http://llm",
			"required": true, "additional_validation_rules": null, "disabled": false, "readonly": false, "placeholder": null,
			"prefix": null, "suffix": null, "icon_prefix": null, "icon_suffix": null, "validation": "required"}]}`},
	} {
		jsonEqual(t, tc.name, tc.want, elementNamed(t, r.Form, tc.name))
	}

	check := func(name, key, want string) {
		t.Helper()
		var el map[string]json.RawMessage
		_ = json.Unmarshal(elementNamed(t, r.Form, name), &el)
		if got := string(el[key]); got != want {
			t.Errorf("%s.%s = %s, want %s", name, key, got, want)
		}
	}
	check("max_tokens", "formkit", `"primeInputNumber"`)
	check("max_tokens", "value", `512`) // a count, not a token
	// The reference's LocaleInput value holds strings only: a locale the
	// default leaves empty is "", never null.
	check("greeting", "value", `{"de":"","en":"","fr":"","it":""}`)
	check("max_tokens", "validation", `"required|number|min:1|max:100000"`)
	check("prompt", "formkit", `"primeTextarea"`)
	check("prompt", "rows", `6`)
	check("prompt", "required", `false`) // blank default: not given is allowed
	check("api_key", "formkit", `"primePassword"`)
	check("api_key", "value", `null`) // a secret's default never leaves the runner
	check("greeting", "formkit", `"localeInput"`)
	check("endpoint", "required", `false`)
	check("endpoint", "help", `"Optional endpoint."`)
	check("icon", "value", `"mage:robot"`)
	check("name", "validation", `"localeRequired"`)
	check("description", "input_type", `"textarea"`)
	if all, _ := json.Marshal(r.Form); strings.Contains(string(all), "sk-secret") {
		t.Error("the form carries the API key's default")
	}

	// Not schedulable: no schedule offered, in the form or the schema.
	r, err = discovery.Build(chatWorkflow(t), discovery.Class{Config: formDefaults})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(elementNames(t, r.Form), "cron") {
		t.Error("a class that is not schedulable offers a schedule")
	}
	if _, ok := props(t, r)["cron"]; ok {
		t.Error("the schema of a class that is not schedulable has cron")
	}
}

func props(t *testing.T, r *event.AgentClassDiscoveryResponseEvent) map[string]json.RawMessage {
	t.Helper()
	var p map[string]json.RawMessage
	if err := json.Unmarshal(r.AgentConfigSpecs.ConfigSchema["properties"], &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// The schema has the reference's base fields first, as pydantic writes
// them for AgentConfig, then the configuration type's fields.
func TestBaseConfigSchema(t *testing.T) {
	r, err := discovery.Build(cronWorkflow(t), discovery.Class{Config: formDefaults})
	if err != nil {
		t.Fatal(err)
	}
	s := r.AgentConfigSpecs.ConfigSchema
	got := keyOrder(t, s["properties"])
	want := []string{"agent_id", "name", "description", "icon", "cron", "model", "temperature", "max_tokens", "prompt",
		"api_key", "stream", "greeting", "endpoint", "tools", "llm"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("properties (-want +got):\n%s", diff)
	}
	p := props(t, r)
	for k, w := range map[string]string{
		"agent_id":    `{"description": "Uniquely identifies the agent instance.", "pattern": "^[a-z0-9_-]+$", "title": "Agent Id", "type": "string"}`,
		"name":        `{"$ref": "#/$defs/LocaleString", "description": "The name of the process or agent."}`,
		"description": `{"$ref": "#/$defs/LocaleString", "description": "The description of the process or agent."}`,
		"icon":        `{"default": "mage:robot", "description": "The icon representing the process or agent.", "title": "Icon", "type": "string"}`,
		"cron":        `{"anyOf": [{"$ref": "#/$defs/CronSchedule"}, {"type": "null"}], "default": null, "description": "Cron schedule controlling when this profile runs automatically."}`,
	} {
		jsonEqual(t, "property "+k, w, p[k])
	}
	jsonEqual(t, "required", `["agent_id", "name", "description"]`, s["required"])
	var defs map[string]json.RawMessage
	if err := json.Unmarshal(s["$defs"], &defs); err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "CronSchedule", `{"properties": {
		"minute": {"description": "Cron minute position (0-59).", "title": "Minute", "type": "string"},
		"hour": {"description": "Cron hour position (0-23).", "title": "Hour", "type": "string"},
		"day_of_month": {"description": "Cron day-of-month position (1-31).", "title": "Day Of Month", "type": "string"},
		"month": {"description": "Cron month position (1-12).", "title": "Month", "type": "string"},
		"day_of_week": {"description": "Cron day-of-week position (0-6, Sunday is 0).", "title": "Day Of Week", "type": "string"},
		"timezone": {"default": "UTC", "description": "IANA timezone the cron positions are interpreted in, e.g. 'Europe/Zurich'.", "title": "Timezone", "type": "string"}},
		"required": ["minute", "hour", "day_of_month", "month", "day_of_week"], "title": "CronSchedule", "type": "object"}`, defs["CronSchedule"])
	if _, ok := defs["LocaleString"]; !ok {
		t.Error("no LocaleString definition for name and description")
	}
	jsonEqual(t, "greeting default", `{"de": null, "en": null, "fr": null, "it": null}`, []byte(defaultOf(t, p["greeting"])))
	if d := defaultOf(t, p["max_tokens"]); d != "512" {
		t.Errorf("max_tokens default %s, want 512 (a count is no secret)", d)
	}
	if _, ok := p["internal"]; ok {
		t.Error(`a field tagged form:"-" is in the schema`)
	}
	if strings.Contains(string(s["properties"]), "sk-secret") {
		t.Error("the schema carries the API key's default")
	}
}

func TestFormTagErrors(t *testing.T) {
	type (
		unknownKey struct {
			A string `json:"a" form:"lable=A"`
		}
		badInput struct {
			A string `json:"a" form:"input=dropdown"`
		}
		noOptions struct {
			A string `json:"a" form:"input=select"`
		}
		badMin struct {
			A int `json:"a" form:"min=low"`
		}
		badRows struct {
			A string `json:"a" form:"input=textarea,rows=0"`
		}
	)
	for _, tc := range []struct {
		cfg  any
		want string
	}{
		{unknownKey{}, `unknown key "lable"`},
		{badInput{}, `input="dropdown"`},
		{noOptions{}, "needs options"},
		{badMin{}, `min="low"`},
		{badRows{}, `rows="0"`},
	} {
		_, err := discovery.Build(cronWorkflow(t), discovery.Class{Config: tc.cfg})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "field a") {
			t.Errorf("%T: Build error %v, want one naming field a and %q", tc.cfg, err, tc.want)
		}
	}
}

// A hand-written form is published as given.
func TestHandWrittenForm(t *testing.T) {
	own := []json.RawMessage{json.RawMessage(`{"formkit": "primeInputText", "name": "x"}`)}
	r, err := discovery.Build(cronWorkflow(t), discovery.Class{Config: formDefaults, Form: own})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Form) != 1 || string(r.Form[0]) != string(own[0]) {
		t.Errorf("form = %s, want the hand-written one", r.Form)
	}
}

func defaultOf(t *testing.T, prop json.RawMessage) string {
	t.Helper()
	var p map[string]json.RawMessage
	if err := json.Unmarshal(prop, &p); err != nil {
		t.Fatal(err)
	}
	return string(p["default"])
}

// A configuration field named like a base field must be able to hold what
// the platform stores there.
func TestBaseFieldClash(t *testing.T) {
	type clash struct {
		Name string `json:"name"`
	}
	if _, err := discovery.Build(cronWorkflow(t), discovery.Class{Config: clash{}}); err == nil || !strings.Contains(err.Error(), "field name") {
		t.Errorf("Build with a string name field: %v, want an error naming the field", err)
	}
	type fine struct {
		AgentID string             `json:"agent_id"`
		Name    event.LocaleString `json:"name"`
		Icon    string             `json:"icon"`
	}
	if _, err := discovery.Build(cronWorkflow(t), discovery.Class{Config: fine{}}); err != nil {
		t.Errorf("Build with compatible base-named fields: %v", err)
	}
}

func TestSecretNames(t *testing.T) {
	type names struct {
		AuthToken    string `json:"auth_token"`
		AccessToken  string `json:"accesstoken"`
		DBPassword   string `json:"db_password"`
		ClientSecret string `json:"clientSecret"`
		OpenAIAPIKey string `json:"openai_api_key"`
		MaxTokens    int    `json:"max_tokens"`
		Tokenizer    string `json:"tokenizer"`
		SecretsPath  string `json:"secrets_path"`
	}
	raw, err := discovery.ConfigSchema(names{AuthToken: "x", AccessToken: "x", DBPassword: "x", ClientSecret: "x",
		OpenAIAPIKey: "x", MaxTokens: 5, Tokenizer: "cl100k", SecretsPath: "/run"})
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]map[string]any
	if err := json.Unmarshal(raw["properties"], &p); err != nil {
		t.Fatal(err)
	}
	for name, secret := range map[string]bool{"auth_token": true, "accesstoken": true, "db_password": true,
		"clientSecret": true, "openai_api_key": true, "max_tokens": false, "tokenizer": false, "secrets_path": false} {
		if got := p[name]["writeOnly"] == true; got != secret {
			t.Errorf("%s: secret %v, want %v", name, got, secret)
		}
	}
}

type repeaterSettings struct {
	Tags     []string                   `json:"tags" form:"label=Tags,add=New tag,min=1,max=5"`
	Limits   map[string]int             `json:"limits"`
	Examples []repeaterExample          `json:"examples"`
	Teams    map[string]repeaterExample `json:"teams"`
	Model    string                     `json:"model" form:"models=chat"`
	Blob     json.RawMessage            `json:"blob"`
	Any      map[string]any             `json:"any"`
}

type repeaterExample struct {
	Input string `json:"input"`
	Valid bool   `json:"valid"`
}

// Lists and maps become FormKit repeaters, as the reference's forms of a
// list of forms; model selections are selects the UI fills with the
// models of a kind.
func TestRepeaterAndModelSelect(t *testing.T) {
	form, err := discovery.Form(repeaterSettings{Tags: []string{"a"}, Limits: map[string]int{"b": 2, "a": 1}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"agent_id", "name", "description", "icon", "tags", "limits", "examples", "teams", "model"}, elementNames(t, form)); diff != "" {
		t.Errorf("elements (-want +got):\n%s", diff)
	}
	text := func(ref, name string, label any) string {
		l, _ := json.Marshal(label)
		return `{"is_formkit_element": true, "condition_if": null, "ref": "` + ref + `", "formkit": "primeInputText", "name": "` + name + `",
			"label": ` + string(l) + `, "help": null, "value": null, "required": true, "additional_validation_rules": null,
			"disabled": false, "readonly": false, "placeholder": null, "prefix": null, "suffix": null, "icon_prefix": null, "icon_suffix": null,
			"validation": "required"}`
	}
	key := text("limits.key", "key", map[string]string{"de": "Schlüssel", "en": "Key", "fr": "Clé", "it": "Chiave"})
	value := map[string]string{"de": "Wert", "en": "Value", "fr": "Valeur", "it": "Valore"}
	add := `{"de": "Hinzufügen", "en": "Add", "fr": "Ajouter", "it": "Aggiungi"}`
	jsonEqual(t, "tags", `{"is_formkit_element": true, "condition_if": null, "ref": "tags", "formkit": "repeater", "name": "tags",
		"label": "Tags", "add_label": "New tag", "remove_label": null, "up_control": null, "down_control": null, "insert_control": null,
		"min": 1, "max": 5, "children": [`+text("tags.value", "value", value)+`], "value": [{"value": "a"}]}`, elementNamed(t, form, "tags"))

	var limits struct {
		Children []json.RawMessage `json:"children"`
		Value    json.RawMessage   `json:"value"`
		AddLabel json.RawMessage   `json:"add_label"`
	}
	if err := json.Unmarshal(elementNamed(t, form, "limits"), &limits); err != nil || len(limits.Children) != 2 {
		t.Fatalf("limits: %s, %v", elementNamed(t, form, "limits"), err)
	}
	jsonEqual(t, "limits key", key, limits.Children[0])
	if string(limits.Value) != `[{"key":"a","value":1},{"key":"b","value":2}]` {
		t.Errorf("limits value %s", limits.Value)
	}
	jsonEqual(t, "limits add", add, limits.AddLabel)
	if !strings.Contains(string(limits.Children[1]), `"formkit":"primeInputNumber"`) {
		t.Errorf("limits value element %s", limits.Children[1])
	}

	if names := childNames(t, elementNamed(t, form, "examples")); fmt.Sprint(names) != "[input valid]" {
		t.Errorf("examples children %v", names)
	}
	teams := elementNamed(t, form, "teams")
	if names := childNames(t, teams); fmt.Sprint(names) != "[key value]" || !strings.Contains(string(teams), `"formkit":"group","name":"value"`) ||
		!strings.Contains(string(teams), `"ref":"teams.value.input"`) {
		t.Errorf("teams %s", teams)
	}

	var model struct {
		Formkit string          `json:"formkit"`
		Options json.RawMessage `json:"options"`
		Mode    *string         `json:"options_api_mode"`
	}
	if err := json.Unmarshal(elementNamed(t, form, "model"), &model); err != nil || model.Formkit != "primeSelect" ||
		string(model.Options) != "[]" || model.Mode == nil || *model.Mode != "chat" {
		t.Errorf("model select %s, %v", elementNamed(t, form, "model"), err)
	}

	type badModel struct {
		M string `json:"m" form:"models=poetry"`
	}
	if _, err := discovery.Form(badModel{}, false); err == nil || !strings.Contains(err.Error(), "models=") {
		t.Errorf("an unknown model kind: %v", err)
	}
}

func childNames(t *testing.T, e []byte) []string {
	t.Helper()
	var el struct {
		Children []json.RawMessage `json:"children"`
	}
	if err := json.Unmarshal(e, &el); err != nil {
		t.Fatal(err)
	}
	return elementNames(t, el.Children)
}
