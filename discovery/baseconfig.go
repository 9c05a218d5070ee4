package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
)

// AgentIDPattern is the pattern of an agent instance id (agent_id) in the
// reference's base configuration.
const AgentIDPattern = `^[a-z0-9_-]+$`

// cronScheduleDef is the reference's CronSchedule model: the five cron
// positions and a timezone.
const cronScheduleDef = `{"properties": {` +
	`"minute": {"description": "Cron minute position (0-59).", "title": "Minute", "type": "string"}, ` +
	`"hour": {"description": "Cron hour position (0-23).", "title": "Hour", "type": "string"}, ` +
	`"day_of_month": {"description": "Cron day-of-month position (1-31).", "title": "Day Of Month", "type": "string"}, ` +
	`"month": {"description": "Cron month position (1-12).", "title": "Month", "type": "string"}, ` +
	`"day_of_week": {"description": "Cron day-of-week position (0-6, Sunday is 0).", "title": "Day Of Week", "type": "string"}, ` +
	`"timezone": {"default": "UTC", "description": "IANA timezone the cron positions are interpreted in, e.g. 'Europe/Zurich'.", "title": "Timezone", "type": "string"}}, ` +
	`"required": ["minute", "hour", "day_of_month", "month", "day_of_week"], "title": "CronSchedule", "type": "object"}`

// profile is what sets the base configuration fields of an agent profile
// apart from those of a process profile: the id field, its texts and the
// default icon.
type profile struct {
	id, idTitle, idDesc string
	icon, of            string // default icon; "agent" or "process" in the texts
	idLabel, idHelp     object
	idPlaceholder       object
}

var (
	agentProfile = profile{id: "agent_id", idTitle: "Agent Id", idDesc: "Uniquely identifies the agent instance.",
		icon: DefaultIcon, of: "process or agent", idLabel: textAgentIDLabel, idHelp: textAgentIDHelp, idPlaceholder: textAgentIDPlaceholder}
	processProfile = profile{id: "process_id", idTitle: "Process Id", idDesc: "Used to uniquely identify this process instance.",
		icon: DefaultProcessIcon, of: "process", idLabel: textProcessIDLabel, idHelp: textProcessIDHelp, idPlaceholder: textProcessIDPlaceholder}
)

// fieldNames are the JSON names of the profile's base fields.
func (p profile) fieldNames() map[string]bool {
	return map[string]bool{p.id: true, "name": true, "description": true, "icon": true, "cron": true}
}

// baseProperties are the schemas of the base configuration fields, in the
// reference's order.
func (p profile) baseProperties(schedulable bool) []member {
	props := []member{
		{p.id, json.RawMessage(`{"description": ` + quote(p.idDesc) + `, "pattern": ` + quote(AgentIDPattern) + `, "title": ` + quote(p.idTitle) + `, "type": "string"}`)},
		{"name", json.RawMessage(`{"$ref": "#/$defs/LocaleString", "description": "The name of the ` + p.of + `."}`)},
		{"description", json.RawMessage(`{"$ref": "#/$defs/LocaleString", "description": "The description of the ` + p.of + `."}`)},
		{"icon", json.RawMessage(`{"default": ` + quote(p.icon) + `, "description": "The icon representing the ` + p.of + `.", "title": "Icon", "type": "string"}`)},
	}
	if schedulable {
		props = append(props, member{"cron", json.RawMessage(`{"anyOf": [{"$ref": "#/$defs/CronSchedule"}, {"type": "null"}], "default": null, "description": "Cron schedule controlling when this profile runs automatically."}`)})
	}
	return props
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// configurableSchema returns the JSON Schema the platform validates a
// profile of the class with: the base fields every profile has (agent_id
// with its pattern, name, description, icon, and cron for a schedulable
// class) followed by the fields of the configuration type (config may be
// nil), without the fields tagged form:"-", which only the runner sets.
func (p profile) configurableSchema(config any, title string, schedulable bool) (map[string]json.RawMessage, error) {
	own := map[string]json.RawMessage{}
	skip := map[string]bool{}
	if config != nil {
		var err error
		if own, err = ConfigSchema(config); err != nil {
			return nil, err
		}
		t := reflect.TypeOf(config)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Struct {
			if err := p.checkBaseClash(t); err != nil {
				return nil, err
			}
			for _, f := range structFields(t) {
				if ft, err := parseFormTag(t.FieldByIndex(f.index).Tag.Get("form")); err == nil && ft.skip {
					skip[f.name] = true
				}
			}
		}
	}
	props := object{}
	for _, m := range p.baseProperties(schedulable) {
		props = append(props, m)
	}
	ownProps, err := orderedMembers(own["properties"])
	if err != nil {
		return nil, fmt.Errorf("discovery: config schema properties: %w", err)
	}
	required := []string{p.id, "name", "description"}
	base := p.fieldNames()
	var ownRequired []string
	if raw, ok := own["required"]; ok {
		if err := json.Unmarshal(raw, &ownRequired); err != nil {
			return nil, fmt.Errorf("discovery: config schema required: %w", err)
		}
	}
	for _, m := range ownProps {
		if base[m.key] || skip[m.key] {
			continue // the base field wins; a runner-only field is not configurable
		}
		props = append(props, m)
		if slices.Contains(ownRequired, m.key) {
			required = append(required, m.key)
		}
	}

	defs := map[string]json.RawMessage{}
	if raw, ok := own["$defs"]; ok {
		if err := json.Unmarshal(raw, &defs); err != nil {
			return nil, fmt.Errorf("discovery: config schema $defs: %w", err)
		}
	}
	if _, ok := defs["LocaleString"]; !ok {
		g := newGenerator()
		g.mapper(typeLocale)
		ls, err := json.Marshal(g.custom["LocaleString"])
		if err != nil {
			return nil, fmt.Errorf("discovery: LocaleString schema: %w", err)
		}
		defs["LocaleString"] = ls
	}
	if schedulable {
		defs["CronSchedule"] = json.RawMessage(cronScheduleDef)
	}

	out := map[string]json.RawMessage{}
	for k, v := range own {
		out[k] = v
	}
	var err2 error
	if out["properties"], err2 = json.Marshal(props); err2 != nil {
		return nil, fmt.Errorf("discovery: config schema: %w", err2)
	}
	out["required"], _ = json.Marshal(required)
	out["$defs"], _ = json.Marshal(defs)
	out["type"] = json.RawMessage(`"object"`)
	if _, ok := out["title"]; !ok {
		out["title"], _ = json.Marshal(title)
	}
	return out, nil
}

// orderedMembers returns the members of a JSON object in their order.
func orderedMembers(raw json.RawMessage) ([]member, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{key, v})
	}
	return out, nil
}

// checkBaseClash refuses a configuration type with a field of a base
// field's name whose type cannot hold what the platform stores there: the
// profile's value would fail the runner's merge on every run.
func (p profile) checkBaseClash(t reflect.Type) error {
	base := p.fieldNames()
	for _, f := range structFields(t) {
		if !base[f.name] {
			continue
		}
		ft := f.typ
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		ok := true
		switch f.name {
		case p.id, "icon":
			ok = ft.Kind() == reflect.String
		case "name", "description":
			ok = ft == typeLocale || ft.Kind() == reflect.Interface
		case "cron":
			ok = ft.Kind() == reflect.Struct || ft.Kind() == reflect.Map || ft.Kind() == reflect.Interface
		}
		if !ok {
			return fmt.Errorf("discovery: field %s of %v: every profile has a base field %q the platform fills (%v cannot hold it); give the field another JSON name",
				f.name, t, f.name, f.typ)
		}
	}
	return nil
}
