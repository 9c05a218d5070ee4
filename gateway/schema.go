package gateway

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// schemaNode is the part of a pydantic JSON Schema the gateway checks: the
// top-level required keys and the JSON types of the top-level properties.
// Deeper validation is the agent's job (its codec names the field too).
type schemaNode struct {
	Type       json.RawMessage        `json:"type"`
	AnyOf      []schemaNode           `json:"anyOf"`
	OneOf      []schemaNode           `json:"oneOf"`
	Ref        string                 `json:"$ref"`
	Required   []string               `json:"required"`
	Properties map[string]*schemaNode `json:"properties"`
}

// checkSchema checks body against the event schema from discovery. A
// schema the gateway cannot read is not enforced.
func checkSchema(schema map[string]json.RawMessage, body map[string]json.RawMessage) error {
	var s schemaNode
	if raw, ok := schema["required"]; ok && json.Unmarshal(raw, &s.Required) != nil {
		return nil
	}
	if raw, ok := schema["properties"]; ok && json.Unmarshal(raw, &s.Properties) != nil {
		return nil
	}
	for _, name := range s.Required {
		if slices.Contains(frameworkFields, name) {
			continue
		}
		if _, ok := body[name]; !ok {
			return badRequest(name, "body: %s: required field missing", name)
		}
	}
	names := make([]string, 0, len(body))
	for k := range body {
		names = append(names, k)
	}
	slices.Sort(names)
	// Unknown keys are ignored, as the reference does, except in a body
	// without the messages the event takes: {"msgs": [...]} is a typo, not
	// an empty conversation.
	if _, takes := s.Properties["messages"]; takes {
		if _, has := body["messages"]; !has {
			for _, name := range names {
				if _, known := s.Properties[name]; !known && !slices.Contains(frameworkFields, name) {
					return badRequest(name, "body: %s: unknown field, and no messages (did you mean messages?)", name)
				}
			}
		}
	}
	for _, name := range names {
		p, ok := s.Properties[name]
		if !ok || p == nil {
			continue
		}
		if kind := jsonKind(body[name]); !p.accepts(kind) {
			return badRequest(name, "body: %s: expected %s, got %s", name, p.describe(), kind)
		}
	}
	return nil
}

// jsonKind names the JSON type of a value as JSON Schema does.
func jsonKind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "null"
	}
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	if bytes.ContainsAny(v, ".eE") {
		return "number"
	}
	return "integer"
}

// types lists the node's declared types; nil means unconstrained.
func (n *schemaNode) types() []string {
	if len(n.Type) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(n.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(n.Type, &many)
	return many
}

func (n *schemaNode) accepts(kind string) bool {
	alts := append(slices.Clone(n.AnyOf), n.OneOf...)
	if len(alts) > 0 {
		for i := range alts {
			if alts[i].accepts(kind) {
				return true
			}
		}
		return false
	}
	ts := n.types()
	if ts == nil {
		return true // $ref or no type: not checked here
	}
	for _, t := range ts {
		if t == kind || (t == "number" && kind == "integer") {
			return true
		}
	}
	return false
}

func (n *schemaNode) describe() string {
	var out []string
	for _, a := range append(slices.Clone(n.AnyOf), n.OneOf...) {
		out = append(out, a.describe())
	}
	out = append(out, n.types()...)
	if n.Ref != "" {
		out = append(out, "object")
	}
	if len(out) == 0 {
		return "any"
	}
	return strings.Join(out, " or ")
}
