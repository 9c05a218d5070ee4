package discovery_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
)

// obj is a decoded JSON Schema.
type obj = map[string]any

func schemaOf(t *testing.T, typ reflect.Type) obj {
	t.Helper()
	s, err := discovery.Schema(typ)
	if err != nil {
		t.Fatalf("Schema(%v): %v", typ, err)
	}
	return decode(t, s)
}

func decode(t *testing.T, s map[string]json.RawMessage) obj {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out obj
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func prop(t *testing.T, s obj, name string) obj {
	t.Helper()
	props, _ := s["properties"].(obj)
	p, ok := props[name].(obj)
	if !ok {
		t.Fatalf("schema %v has no property %q (has %v)", s["title"], name, keys(props))
	}
	return p
}

func keys(m obj) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	slices.Sort(k)
	return k
}

func def(t *testing.T, s obj, name string) obj {
	t.Helper()
	defs, ok := s["$defs"].(obj)
	if !ok {
		t.Fatalf("schema has no $defs")
	}
	d, ok := defs[name].(obj)
	if !ok {
		t.Fatalf("$defs has no %q (has %v)", name, keys(defs))
	}
	return d
}

func nullable(inner obj) obj {
	return obj{"anyOf": []any{inner, obj{"type": "null"}}, "default": nil}
}

// checkRefs fails if a $ref points to a missing definition.
func checkRefs(t *testing.T, root obj) {
	t.Helper()
	defs, _ := root["$defs"].(obj)
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case obj:
			if r, ok := x["$ref"].(string); ok {
				name, found := strings.CutPrefix(r, "#/$defs/")
				if !found || defs[name] == nil {
					t.Errorf("dangling $ref %q", r)
				}
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(root)
}

func TestSchemaUserMessageEvent(t *testing.T) {
	s := schemaOf(t, reflect.TypeFor[event.UserMessageEvent]())
	checkRefs(t, s)
	for k, want := range map[string]any{"title": "UserMessageEvent", "type": "object", "additionalProperties": true} {
		if s[k] != want {
			t.Errorf("%s = %v, want %v", k, s[k], want)
		}
	}
	for _, k := range []string{"$schema", "$id"} {
		if _, ok := s[k]; ok {
			t.Errorf("root has %s; pydantic writes none", k)
		}
	}
	if diff := cmp.Diff([]any{"user"}, s["required"]); diff != "" {
		t.Errorf("required (-want +got):\n%s", diff)
	}
	props := s["properties"].(obj)
	for _, k := range []string{"_event_name", "_parent_event_names"} {
		if _, ok := props[k]; ok {
			t.Errorf("computed key %s is in the schema", k)
		}
	}
	wantProps := []string{"created_at", "display_description", "display_name", "event_id", "files", "locale", "messages", "requested_features", "user"}
	if diff := cmp.Diff(wantProps, keys(props)); diff != "" {
		t.Errorf("properties (-want +got):\n%s", diff)
	}
	tests := []struct {
		name string
		want obj
	}{
		{"event_id", obj{"type": "string", "title": "Event Id"}},
		{"created_at", obj{"type": "integer", "title": "Created At"}},
		{"locale", obj{"type": "string", "title": "Locale", "default": "de"}},
		{"user", obj{"$ref": "#/$defs/UserIdentity"}},
		{"messages", obj{"type": "array", "title": "Messages", "default": []any{}, "items": obj{"$ref": "#/$defs/ChatMessage"}}},
		{"files", func() obj {
			o := nullable(obj{"type": "array", "items": obj{"$ref": "#/$defs/UserUploadedFile"}})
			o["title"] = "Files"
			return o
		}()},
		{"display_name", nullable(obj{"$ref": "#/$defs/LocaleString"})},
		{"requested_features", obj{"type": "array", "title": "Requested Features", "default": []any{}, "items": obj{"$ref": "#/$defs/ChatFeature"}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, prop(t, s, tt.name)); diff != "" {
			t.Errorf("property %s (-want +got):\n%s", tt.name, diff)
		}
	}

	// The nested models are definitions in pydantic's form.
	cm := def(t, s, "ChatMessage")
	if cm["title"] != "ChatMessage" || cm["type"] != "object" {
		t.Errorf("ChatMessage def = %v", cm)
	}
	if diff := cmp.Diff(obj{"type": "string", "title": "Role", "default": "user"}, prop(t, cm, "role")); diff != "" {
		t.Errorf("ChatMessage.role (-want +got):\n%s", diff)
	}
	blocks := prop(t, cm, "blocks")["items"].(obj)["anyOf"].([]any)
	if len(blocks) != 8 || blocks[0].(obj)["$ref"] != "#/$defs/TextBlock" {
		t.Errorf("ChatMessage.blocks items = %v, want the union of the 8 block types", blocks)
	}
	text := def(t, s, "TextBlock")
	if diff := cmp.Diff(obj{"type": "string", "const": "text", "default": "text", "title": "Block Type"}, prop(t, text, "block_type")); diff != "" {
		t.Errorf("TextBlock.block_type (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"text"}, text["required"]); diff != "" {
		t.Errorf("TextBlock required (-want +got):\n%s", diff)
	}

	ui := def(t, s, "UserIdentity")
	if diff := cmp.Diff([]any{"id", "name", "email", "roles"}, ui["required"]); diff != "" {
		t.Errorf("UserIdentity required (-want +got):\n%s", diff)
	}
	if _, ok := ui["additionalProperties"]; ok {
		t.Error("a value model (UserIdentity) allows additional properties; pydantic's default is to ignore them silently")
	}
	if diff := cmp.Diff(nullable(obj{"$ref": "#/$defs/TenantIdentity"}), prop(t, ui, "acting_within_tenant")); diff != "" {
		t.Errorf("UserIdentity.acting_within_tenant (-want +got):\n%s", diff)
	}
	ls := def(t, s, "LocaleString")
	for _, k := range []string{"de", "en", "fr", "it"} {
		want := nullable(obj{"type": "string"})
		want["title"] = strings.ToUpper(k[:1]) + k[1:]
		if diff := cmp.Diff(want, prop(t, ls, k)); diff != "" {
			t.Errorf("LocaleString.%s (-want +got):\n%s", k, diff)
		}
	}
	cf := def(t, s, "ChatFeature")
	if diff := cmp.Diff(obj{"type": "string", "title": "ChatFeature", "enum": []any{"web_search", "code_interpreter", "image_generation"}}, cf); diff != "" {
		t.Errorf("ChatFeature (-want +got):\n%s", diff)
	}
}

func TestSchemaOtherCoreEvents(t *testing.T) {
	ex := schemaOf(t, reflect.TypeFor[event.ExceptionEvent]())
	if diff := cmp.Diff([]any{"message"}, ex["required"]); diff != "" {
		t.Errorf("ExceptionEvent required (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(obj{"type": "integer", "title": "Http Status Code", "default": 500.0}, prop(t, ex, "http_status_code")); diff != "" {
		t.Errorf("http_status_code (-want +got):\n%s", diff)
	}

	cron := schemaOf(t, reflect.TypeFor[event.CronStartEvent]())
	if diff := cmp.Diff(obj{"type": "string", "format": "date-time", "title": "Scheduled For"}, prop(t, cron, "scheduled_for")); diff != "" {
		t.Errorf("scheduled_for (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(nullable(obj{"$ref": "#/$defs/UserIdentity"}), prop(t, cron, "user")); diff != "" {
		t.Errorf("CronStartEvent.user (-want +got):\n%s", diff)
	}

	resp := schemaOf(t, reflect.TypeFor[event.HumanInTheLoopInputResponseEvent]())
	checkRefs(t, resp)
	if diff := cmp.Diff(obj{"$ref": "#/$defs/HumanInTheLoopInputRequestEvent"}, prop(t, resp, "request_event")); diff != "" {
		t.Errorf("request_event (-want +got):\n%s", diff)
	}
	req := def(t, resp, "HumanInTheLoopInputRequestEvent")
	if req["additionalProperties"] != true {
		t.Error("a nested event definition must allow additional properties (extra=allow)")
	}
	if diff := cmp.Diff([]any{"question", "topic", "hitl_type"}, req["required"]); diff != "" {
		t.Errorf("nested request required (-want +got):\n%s", diff)
	}
	topic := def(t, resp, "Topic")
	if diff := cmp.Diff(func() obj { o := nullable(obj{"type": "string"}); o["title"] = "Agent Class"; return o }(), prop(t, topic, "agent_class")); diff != "" {
		t.Errorf("Topic.agent_class (-want +got):\n%s", diff)
	}
}

// A user-defined event, as an agent developer writes it.
type ticketEvent struct {
	event.StartEvent
	Subject  string            `json:"subject" event:"required" description:"the ticket's subject line"`
	Priority int               `json:"priority" event:"default=3"`
	Tags     []string          `json:"tags"`
	Due      *time.Time        `json:"due"`
	Extra    map[string]string `json:"extra" event:"default={}"`
	Raw      json.RawMessage   `json:"raw"`
	Nested   ticketBody        `json:"body"`
	internal int               // unexported: not part of the schema
}

var _ = ticketEvent{internal: 0}

type ticketBody struct {
	Text  string  `json:"text"`
	Score float64 `json:"score" event:"default=0.5"`
}

func init() { event.MustRegister[ticketEvent](event.WithName("TicketEvent")) }

func TestSchemaUserEvent(t *testing.T) {
	s := schemaOf(t, reflect.TypeFor[ticketEvent]())
	checkRefs(t, s)
	if s["title"] != "TicketEvent" {
		t.Errorf("title = %v, want the wire name TicketEvent", s["title"])
	}
	if diff := cmp.Diff([]any{"subject", "body"}, s["required"]); diff != "" {
		t.Errorf("required (-want +got):\n%s", diff)
	}
	tests := []struct {
		name string
		want obj
	}{
		{"subject", obj{"type": "string", "title": "Subject", "description": "the ticket's subject line"}},
		{"priority", obj{"type": "integer", "title": "Priority", "default": 3.0}},
		{"tags", func() obj {
			o := nullable(obj{"type": "array", "items": obj{"type": "string"}})
			o["title"] = "Tags"
			return o
		}()},
		{"due", func() obj { o := nullable(obj{"type": "string", "format": "date-time"}); o["title"] = "Due"; return o }()},
		{"extra", obj{"type": "object", "title": "Extra", "default": obj{}, "additionalProperties": obj{"type": "string"}}},
		{"raw", obj{"title": "Raw", "default": nil}},
		{"body", obj{"$ref": "#/$defs/ticketBody"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, prop(t, s, tt.name)); diff != "" {
			t.Errorf("property %s (-want +got):\n%s", tt.name, diff)
		}
	}
	if _, ok := s["properties"].(obj)["internal"]; ok {
		t.Error("an unexported field is in the schema")
	}
	body := def(t, s, "ticketBody")
	if diff := cmp.Diff([]any{"text"}, body["required"]); diff != "" {
		t.Errorf("body required (-want +got):\n%s", diff)
	}
}

func TestSchemaErrors(t *testing.T) {
	type withChan struct {
		C chan int `json:"c"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[int](), reflect.TypeFor[[]string](), reflect.TypeFor[withChan](), nil} {
		if _, err := discovery.Schema(typ); err == nil {
			t.Errorf("Schema(%v) succeeded, want an error", typ)
		}
	}
}

type agentSettings struct {
	Model       string         `json:"model"`
	Temperature float64        `json:"temperature"`
	Tools       []string       `json:"tools"`
	APIKey      *string        `json:"api_key"`
	Prompt      promptSettings `json:"prompt"`
}

type promptSettings struct {
	System string `json:"system"`
}

func TestConfigSchema(t *testing.T) {
	raw, err := discovery.ConfigSchema(&agentSettings{Model: "gpt-4o", Temperature: 0.2, Tools: []string{"search"}, Prompt: promptSettings{System: "Be brief."}})
	if err != nil {
		t.Fatal(err)
	}
	s := decode(t, raw)
	checkRefs(t, s)
	if _, ok := s["required"]; ok {
		t.Errorf("required = %v; every configuration field has a default", s["required"])
	}
	if s["title"] != "agentSettings" {
		t.Errorf("title = %v", s["title"])
	}
	tests := []struct {
		name string
		want obj
	}{
		{"model", obj{"type": "string", "title": "Model", "default": "gpt-4o"}},
		{"temperature", obj{"type": "number", "title": "Temperature", "default": 0.2}},
		{"tools", obj{"type": "array", "title": "Tools", "default": []any{"search"}, "items": obj{"type": "string"}}},
		{"api_key", func() obj {
			o := nullable(obj{"type": "string", "writeOnly": true})
			o["title"] = "Api Key"
			return o
		}()},
		{"prompt", obj{"$ref": "#/$defs/promptSettings", "default": obj{"system": "Be brief."}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, prop(t, s, tt.name)); diff != "" {
			t.Errorf("property %s (-want +got):\n%s", tt.name, diff)
		}
	}
	if _, ok := def(t, s, "promptSettings")["required"]; ok {
		t.Error("nested configuration fields are required; they have defaults")
	}

	if empty, err := discovery.ConfigSchema(nil); err != nil || len(empty) != 0 {
		t.Errorf("ConfigSchema(nil) = %v, %v; want {}", empty, err)
	}
	if _, err := discovery.ConfigSchema((*agentSettings)(nil)); err == nil {
		t.Error("ConfigSchema of a nil pointer succeeded")
	}
}

func TestConfigSchemaKeepsSecretsOut(t *testing.T) {
	type creds struct {
		Model      string `json:"model"`
		AuthToken  string `json:"auth_token"`
		Credential string `json:"credential" secret:"true"`
		DBPassword string `json:"db_password"`
	}
	const secret = "sk-live-very-secret"
	raw, err := discovery.ConfigSchema(creds{Model: "m", AuthToken: secret, Credential: secret, DBPassword: secret})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(raw)
	if strings.Contains(string(data), secret) {
		t.Fatalf("the schema leaks a secret default: %s", data)
	}
	s := decode(t, raw)
	for _, name := range []string{"auth_token", "credential", "db_password"} {
		p := prop(t, s, name)
		if p["writeOnly"] != true {
			t.Errorf("%s = %v, want a write-only schema", name, p)
		}
		if _, ok := p["default"]; ok {
			t.Errorf("%s has a default", name)
		}
	}
	if prop(t, s, "model")["default"] != "m" {
		t.Error("an ordinary field lost its default")
	}
}

// TestSchemaAllRegisteredEvents checks every registered event type yields a
// schema whose references resolve: discovery may describe any of them.
func TestSchemaAllRegisteredEvents(t *testing.T) {
	for _, et := range event.Types() {
		s, err := discovery.Schema(et.Go)
		if err != nil {
			t.Errorf("%s: %v", et.Name, err)
			continue
		}
		o := decode(t, s)
		checkRefs(t, o)
		if o["title"] != et.Name {
			t.Errorf("%s: title %v", et.Name, o["title"])
		}
	}
}

// TestSchemaMatchesPydantic compares the schemas of core events with what
// pydantic v2 writes for their Python twins (testdata/pydantic_models.py,
// which regenerates the golden files).
func TestSchemaMatchesPydantic(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[event.UserMessageEvent](),
		reflect.TypeFor[event.ExceptionEvent](),
		reflect.TypeFor[event.CronStartEvent](),
	} {
		t.Run(typ.Name(), func(t *testing.T) {
			golden, err := os.ReadFile(filepath.Join("testdata", "pydantic_"+typ.Name()+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var want obj
			if err := json.Unmarshal(golden, &want); err != nil {
				t.Fatal(err)
			}
			got := schemaOf(t, typ)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Schema(%s) differs from pydantic's (-pydantic +ours):\n%s", typ.Name(), diff)
			}
		})
	}
}
