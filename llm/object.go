package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// ResponseSchema asks a model to answer with one JSON value valid against
// Schema. Each provider sends it in its own field for it: OpenAI (and
// OpenAI-compatible servers) as response_format of type json_schema,
// Anthropic as output_config.format, Gemini as responseJsonSchema with
// responseMimeType application/json.
type ResponseSchema struct {
	// Name names the schema where the provider wants a name (OpenAI):
	// letters, digits, '_' and '-', at most 64; "response" when empty.
	Name string
	// Description tells the model what the answer is for, where the
	// provider takes one (OpenAI).
	Description string
	// Schema is the JSON Schema of the answer. Providers want an object
	// at the root, so a struct is the usual Go type behind it.
	Schema json.RawMessage
	// Strict asks for the provider's strict adherence (OpenAI's strict),
	// which takes only a subset of JSON Schema: every object lists all its
	// properties as required and sets additionalProperties to false.
	// ResponseSchemaOf sets it when the generated schema qualifies.
	Strict bool
}

// ErrInvalidObject is matched (errors.Is) by every *ObjectError.
var ErrInvalidObject = errors.New("llm: the model's answer is not a valid object of the schema")

// ObjectError reports an answer that GenerateObject or ParseObject could
// not turn into the asked value: not JSON, not valid against the schema,
// not decodable into the Go type, cut short, refused or calling tools.
// It matches ErrInvalidObject, and errors.As reaches the cause in Err
// (a *json.SyntaxError, the schema's validation error).
type ObjectError struct {
	// Raw is the text of the model's answer as it came.
	Raw string
	// Err says what is wrong with it.
	Err error
	// Response is the whole answer (the last one, after a repair).
	Response *Response
}

func (e *ObjectError) Error() string {
	raw := e.Raw
	if len(raw) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(raw[cut]) {
			cut--
		}
		raw = raw[:cut] + "…"
	}
	return fmt.Sprintf("%v: %v (answer: %q)", ErrInvalidObject, e.Err, raw)
}

// Unwrap returns ErrInvalidObject and the cause.
func (e *ObjectError) Unwrap() []error { return []error{ErrInvalidObject, e.Err} }

// ObjectOption changes how GenerateObject asks.
type ObjectOption func(*objectConfig)

type objectConfig struct {
	repair bool
}

// WithRepair lets GenerateObject ask once more when the answer is not
// valid: the invalid answer and what is wrong with it go back to the
// model, which answers again. Off by default: it doubles the cost of a
// failing call, and strict providers rarely need it.
func WithRepair() ObjectOption { return func(c *objectConfig) { c.repair = true } }

// GenerateObject asks the model for a value of type T and returns it
// decoded. Unless req sets a ResponseSchema of its own, the schema is
// generated from T as Func does for tool arguments (json tags name the
// properties, jsonschema tags describe them; see ResponseSchemaOf). The
// answer is checked against the schema before it is decoded; one that
// does not parse or validate is an *ObjectError holding the raw answer
// and the failure. A provider's failure is returned as it came (an
// *Error). req is not changed.
//
// Cancelling ctx cancels the call.
func GenerateObject[T any](ctx context.Context, p Provider, req *Request, opts ...ObjectOption) (T, error) {
	var zero T
	if p == nil || req == nil {
		return zero, errors.New("llm: GenerateObject needs a provider and a request")
	}
	var cfg objectConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	sch, err := objectSchemaFor[T](req.ResponseSchema)
	if err != nil {
		return zero, err
	}
	r := *req
	r.ResponseSchema = sch.rs
	resp, err := Generate(ctx, p, &r)
	if err != nil {
		return zero, err
	}
	v, err := parseObject[T](resp, sch)
	var oe *ObjectError
	if err == nil || !cfg.repair || !errors.As(err, &oe) || resp.StopReason == StopRefusal {
		return v, err
	}
	r.Messages = append(append(make([]Message, 0, len(req.Messages)+2), req.Messages...),
		AssistantText(oe.Raw),
		UserText("That answer is not valid: "+oe.Err.Error()+". Answer again with only the JSON value, valid against the schema."))
	resp, err = Generate(ctx, p, &r)
	if err != nil {
		return zero, err
	}
	return parseObject[T](resp, sch)
}

// ParseObject decodes the answer of a call made with rs (StreamTo's
// Call.Response, Generate's Response) into a T, checking it against the
// schema first; a nil rs checks it against the schema generated from T.
// It fails as GenerateObject does, with an *ObjectError.
func ParseObject[T any](resp *Response, rs *ResponseSchema) (T, error) {
	var zero T
	if resp == nil {
		return zero, errors.New("llm: ParseObject of no response")
	}
	sch, err := objectSchemaFor[T](rs)
	if err != nil {
		return zero, err
	}
	return parseObject[T](resp, sch)
}

// ResponseSchemaOf returns the ResponseSchema of T: the schema SchemaOf
// generates, named after T, strict when it qualifies (every property
// required, which fields without omitempty are, and no additional
// properties, which the generator sets). The result is cached per type
// and shared: do not change it.
func ResponseSchemaOf[T any]() (*ResponseSchema, error) {
	sch, err := typeSchema[T]()
	if err != nil {
		return nil, err
	}
	return sch.rs, nil
}

// objectSchema is a ResponseSchema with its validator.
type objectSchema struct {
	rs       *ResponseSchema
	resolved *jsonschema.Resolved
}

var typeSchemas sync.Map // reflect.Type → *objectSchema

func typeSchema[T any]() (*objectSchema, error) {
	t := reflect.TypeFor[T]()
	if s, ok := typeSchemas.Load(t); ok {
		return s.(*objectSchema), nil
	}
	raw, err := SchemaOf[T]()
	if err != nil {
		return nil, fmt.Errorf("llm: response schema: %w", err)
	}
	rs := &ResponseSchema{Name: schemaName(t), Schema: raw}
	var m any
	if json.Unmarshal(raw, &m) == nil {
		rs.Strict = strictable(m)
	}
	sch, err := compileSchema(rs)
	if err != nil {
		return nil, err
	}
	s, _ := typeSchemas.LoadOrStore(t, sch)
	return s.(*objectSchema), nil
}

func objectSchemaFor[T any](rs *ResponseSchema) (*objectSchema, error) {
	if rs == nil {
		return typeSchema[T]()
	}
	return compileSchema(rs)
}

func compileSchema(rs *ResponseSchema) (*objectSchema, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(rs.Schema, &s); err != nil {
		return nil, fmt.Errorf("llm: response schema %q is not a JSON Schema: %w", rs.Name, err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("llm: response schema %q: %w", rs.Name, err)
	}
	return &objectSchema{rs: rs, resolved: resolved}, nil
}

func parseObject[T any](resp *Response, sch *objectSchema) (T, error) {
	var v T
	raw := resp.Message.Text()
	fail := func(err error) (T, error) {
		var zero T
		return zero, &ObjectError{Raw: raw, Err: err, Response: resp}
	}
	switch {
	case resp.StopReason == StopRefusal:
		return fail(errors.New("the model refused to answer"))
	case len(resp.Message.ToolUses()) > 0:
		return fail(errors.New("the model called tools instead of answering"))
	}
	body := unfence(raw)
	var inst any
	if err := json.Unmarshal(body, &inst); err != nil {
		if resp.StopReason == StopMaxTokens {
			return fail(fmt.Errorf("the answer was cut at the token limit: %w", err))
		}
		return fail(fmt.Errorf("the answer is not JSON: %w", err))
	}
	if err := sch.resolved.Validate(inst); err != nil {
		return fail(fmt.Errorf("the answer does not match the schema: %w", err))
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return fail(fmt.Errorf("the answer does not decode into %T: %w", v, err))
	}
	return v, nil
}

// unfence returns the JSON of an answer, without the Markdown code fence
// some models put around it despite the schema.
func unfence(s string) []byte {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "```"); ok {
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:]
			if body, ok := strings.CutSuffix(strings.TrimSpace(rest), "```"); ok {
				s = strings.TrimSpace(body)
			}
		}
	}
	return []byte(s)
}

// schemaName is t's name in the characters OpenAI allows, "response"
// when it has none.
func schemaName(t reflect.Type) string {
	var b bytes.Buffer
	for _, r := range t.Name() {
		if b.Len() >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == '[' || r == ',' || r == '.':
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "response"
	}
	return b.String()
}

// strictable reports whether schema s is in the subset strict mode takes:
// an object at the root, and every object closed with all its properties
// required.
func strictable(s any) bool {
	m, ok := s.(map[string]any)
	if !ok || m["type"] != "object" {
		return false
	}
	return closed(m)
}

func closed(s any) bool {
	switch m := s.(type) {
	case []any:
		for _, x := range m {
			if !closed(x) {
				return false
			}
		}
		return true
	case map[string]any:
		if props, ok := m["properties"].(map[string]any); ok || m["type"] == "object" {
			if m["additionalProperties"] != false {
				return false
			}
			req := map[string]bool{}
			list, _ := m["required"].([]any)
			for _, r := range list {
				if name, ok := r.(string); ok {
					req[name] = true
				}
			}
			for name, p := range props {
				if !req[name] || !closed(p) {
					return false
				}
			}
		}
		for _, k := range [...]string{"items", "anyOf", "oneOf", "allOf"} {
			if x, ok := m[k]; ok && !closed(x) {
				return false
			}
		}
		for _, k := range [...]string{"$defs", "definitions"} {
			defs, _ := m[k].(map[string]any)
			for _, d := range defs {
				if !closed(d) {
					return false
				}
			}
		}
		return true
	}
	return true
}
