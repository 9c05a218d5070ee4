package process_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// wireRules are the reference platform's field rules of what a process
// publishes beyond events of the library, written from its models: "name:
// type" per member, separated by ";". A type is str, bool, int, dict,
// list, locale (an object with the four locales, each a string or null),
// list[T] (every item of T), or a rule name (an object under that rule);
// a trailing ? allows null. Members a rule does not name are not checked:
// the platform's decoder ignores them.
var wireRules = map[string]string{
	"ProcessClassDiscoveryResponseEvent": `process_class: str; name: locale; description: locale; icon: str;
		form: list[FormKitElement]; process_config_specs: ConfigSpecs; human_inputs: list[HumanInSpecs];
		program_inputs: list[ProgramInSpecs]; agent_inputs: list[AgentInSpecs]; templates: list`,
	"HumanInSpecs": `name: locale; description: locale; route: str; method: str; is_process_start: bool;
		event_specs: EventSpecs; form: list[FormKitElement]`,
	"ProgramInSpecs": "route: str; method: str; is_process_start: bool; event_specs: EventSpecs",
	"AgentInSpecs":   "agent_class: str; agent_id: str; is_process_start: bool; event_specs: EventSpecs",
	"EventSpecs":     "event_name: str; event_schema: dict; event_parents: list[str]",
	"ConfigSpecs":    "config_class: str; config_schema: dict",
	// A FormKit element as the reference's form models dump it.
	"FormKitElement": "is_formkit_element: bool; formkit: str; name: str",
	"WorkRequestEvent": `event_id: str; created_at: int; process_id: str?; display_name: locale?;
		display_description: locale?`,
	"HumanWorkRequestEvent": `WorkRequestEvent; endpoint: str?; method: str?; user_ids: list[str]; user_emails: list[str];
		user_roles: list[str]; notify: bool; forms: list[HumanWorkForm]`,
	// A form of a work request: a HumanWorkEvent whose own fields hold
	// FormKit elements (the reference's validator refuses data values).
	"HumanWorkForm":           "_event_name: str; submitted_by: dict?; in_response_to: str?",
	"ProgramWorkRequestEvent": "WorkRequestEvent; endpoint: str?; method: str?",
	// The test process's request and form.
	"ApproveRequest": "HumanWorkRequestEvent; endpoint: str; method: str; forms: list[ApprovalForm]",
	"ApprovalForm":   "HumanWorkForm; approved: FormKitElement",
}

// checkRules reports every member of v that breaks rule (a wireRules
// name), naming its path.
func checkRules(t *testing.T, rule string, data []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", rule, err)
	}
	for _, p := range ruleProblems(rule, v, rule) {
		t.Error(p)
	}
}

func ruleProblems(rule string, v any, path string) []string {
	text, ok := wireRules[rule]
	if !ok {
		return []string{fmt.Sprintf("%s: no rule %s", path, rule)}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: %T, want an object", path, v)}
	}
	var out []string
	for _, part := range strings.Split(text, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, typ, found := strings.Cut(part, ":")
		if !found { // another rule's members
			out = append(out, ruleProblems(name, v, path)...)
			continue
		}
		name, typ = strings.TrimSpace(name), strings.TrimSpace(typ)
		val, present := obj[name]
		if !present {
			out = append(out, fmt.Sprintf("%s.%s: missing", path, name))
			continue
		}
		out = append(out, typeProblems(typ, val, path+"."+name)...)
	}
	return out
}

func typeProblems(typ string, v any, path string) []string {
	if strings.HasSuffix(typ, "?") {
		if v == nil {
			return nil
		}
		typ = strings.TrimSuffix(typ, "?")
	}
	bad := func() []string { return []string{fmt.Sprintf("%s: %s, want %s", path, show(v), typ)} }
	switch {
	case typ == "str":
		if _, ok := v.(string); !ok {
			return bad()
		}
	case typ == "bool":
		if _, ok := v.(bool); !ok {
			return bad()
		}
	case typ == "int":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			return bad()
		}
	case typ == "dict":
		if _, ok := v.(map[string]any); !ok {
			return bad()
		}
	case typ == "list":
		if _, ok := v.([]any); !ok {
			return bad()
		}
	case typ == "locale":
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		for _, l := range []string{"de", "en", "fr", "it"} {
			if x, ok := m[l]; !ok || x != nil && fmt.Sprintf("%T", x) != "string" {
				return bad()
			}
		}
	case strings.HasPrefix(typ, "list[") && strings.HasSuffix(typ, "]"):
		items, ok := v.([]any)
		if !ok {
			return bad()
		}
		var out []string
		for i, item := range items {
			out = append(out, typeProblems(typ[5:len(typ)-1], item, fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	default:
		return ruleProblems(typ, v, path)
	}
	return nil
}

func show(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		b = append(b[:77], "..."...)
	}
	return string(b)
}

// TestRulesCatchWhatThePlatformRefuses: the checker refuses the shapes the
// platform refused before (plain event specs as human inputs).
func TestRulesCatchWhatThePlatformRefuses(t *testing.T) {
	plain := `{"process_class": "P", "name": {"de": "P", "en": "P", "fr": "P", "it": "P"},
		"description": {"de": "P", "en": "P", "fr": "P", "it": "P"}, "icon": "mage:broadcast", "form": [],
		"process_config_specs": {"config_class": "P", "config_schema": {}},
		"human_inputs": [{"event_name": "A", "event_schema": {}, "event_parents": []}],
		"program_inputs": [], "agent_inputs": [], "templates": []}`
	var v any
	_ = json.Unmarshal([]byte(plain), &v)
	got := ruleProblems("ProcessClassDiscoveryResponseEvent", v, "answer")
	if len(got) != 7 || !strings.Contains(strings.Join(got, "\n"), "answer.human_inputs[0].event_specs: missing") {
		t.Fatalf("problems of plain event specs as human inputs: %q", got)
	}
}
