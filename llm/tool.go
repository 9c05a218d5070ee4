package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
)

// FuncTool is a tool made from a Go function with typed arguments: the
// schema the model sees is generated from the arguments' type (json tags
// name the properties, jsonschema tags describe them), and the model's
// JSON arguments are decoded into it before each call.
type FuncTool[In, Out any] struct {
	def Tool
	fn  func(context.Context, In) (Out, error)
}

// Func declares a tool from fn. In is usually a struct:
//
//	type AddArgs struct {
//		A float64 `json:"a" jsonschema:"description=first addend"`
//		B float64 `json:"b"`
//	}
//	add := llm.Func("add", "Adds two numbers.", func(ctx context.Context, a AddArgs) (float64, error) {
//		return a.A + a.B, nil
//	})
//
// The result goes to the model as it is when it is a string, else as its
// JSON. Func panics if In has no JSON Schema (a channel, a function): a
// programming error found at start-up.
func Func[In, Out any](name, description string, fn func(ctx context.Context, args In) (Out, error)) *FuncTool[In, Out] {
	schema, err := SchemaOf[In]()
	if err != nil {
		panic(fmt.Sprintf("llm: Func %q: %v", name, err))
	}
	return &FuncTool[In, Out]{def: Tool{Name: name, Description: description, Schema: schema}, fn: fn}
}

// SchemaOf generates the JSON Schema of T's JSON form, inlined (no $ref
// or $defs) as providers want a tool's parameters.
func SchemaOf[T any]() (json.RawMessage, error) {
	var zero T
	t := reflect.TypeOf(&zero).Elem()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Complex64, reflect.Complex128:
		return nil, fmt.Errorf("arguments of type %s have no JSON form", t)
	}
	r := jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true, AllowAdditionalProperties: false}
	s := r.ReflectFromType(t)
	s.Version = ""
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", t, err)
	}
	return raw, nil
}

// Definition implements Callable.
func (f *FuncTool[In, Out]) Definition() Tool { return f.def }

// Call implements Callable: it decodes the arguments into In, calls the
// function and encodes its result.
func (f *FuncTool[In, Out]) Call(ctx context.Context, input json.RawMessage) (string, error) {
	var args In
	if len(strings.TrimSpace(string(input))) > 0 {
		if err := json.Unmarshal(input, &args); err != nil {
			return "", fmt.Errorf("invalid arguments for %s: %w", f.def.Name, err)
		}
	}
	out, err := f.fn(ctx, args)
	if err != nil {
		return "", err
	}
	return resultText(out)
}

func resultText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case fmt.Stringer:
		return x.String(), nil
	case json.RawMessage:
		return string(x), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode the result: %w", err)
	}
	return string(raw), nil
}

// RawTool is a tool declared with a JSON Schema of its own; its function
// gets the model's arguments as they came.
type RawTool struct {
	def Tool
	fn  func(context.Context, json.RawMessage) (string, error)
}

// Raw declares a tool from a schema (a JSON object schema) and a function
// taking the raw arguments. It fails on a schema that is not a JSON
// object or a blank name.
func Raw(name, description string, schema json.RawMessage, fn func(ctx context.Context, args json.RawMessage) (string, error)) (*RawTool, error) {
	if strings.TrimSpace(name) == "" {
		return nil, errors.New("llm: Raw tool without a name")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(schema, &obj); err != nil {
		return nil, fmt.Errorf("llm: Raw tool %q: the schema is not a JSON object: %w", name, err)
	}
	if fn == nil {
		return nil, fmt.Errorf("llm: Raw tool %q without a function", name)
	}
	return &RawTool{def: Tool{Name: name, Description: description, Schema: schema}, fn: fn}, nil
}

// Definition implements Callable.
func (r *RawTool) Definition() Tool { return r.def }

// Call implements Callable.
func (r *RawTool) Call(ctx context.Context, input json.RawMessage) (string, error) {
	return r.fn(ctx, input)
}

// Approvable is a Callable that may need a person's approval before a
// call runs. The tool loop asks through a ToolApprovalRequestEvent when
// NeedsApproval says so for the call's arguments.
type Approvable interface {
	Callable
	NeedsApproval(input json.RawMessage) bool
}

// RequireApproval marks c as needing approval for every call.
func RequireApproval(c Callable) Callable { return approval{c} }

type approval struct{ Callable }

func (approval) NeedsApproval(json.RawMessage) bool { return true }

// needsApproval reports whether c must be approved for input.
func needsApproval(c Callable, input json.RawMessage) bool {
	a, ok := c.(Approvable)
	return ok && a.NeedsApproval(input)
}
