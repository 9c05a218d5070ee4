package semantic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"

	"github.com/saap-go/agent/event"
)

// OpenInference span kinds of the semantic events.
const (
	KindLLM       = "LLM"
	KindRetriever = "RETRIEVER"
	KindReranker  = "RERANKER"
	KindEmbedding = "EMBEDDING"
	KindTool      = "TOOL"
	KindChain     = "CHAIN"
	KindAgent     = "AGENT"
	KindGuardrail = "GUARDRAIL"
)

// SpanKindKey is the OpenInference attribute naming a span's kind.
const SpanKindKey = "openinference.span.kind"

// ErrNoConvention is returned for an event without OpenInference
// attributes: one that is not a semantic event, or the bare SemanticEvent.
var ErrNoConvention = errors.New("semantic: the event has no OpenInference attributes")

// attr is one attribute with a JSON-typed value: string, int64, float64,
// bool or []float64.
type attr struct {
	key string
	val any
}

// Convention returns the OpenInference attributes of a semantic event,
// keyed by attribute name. Values are strings (JSON-encoded ones
// included, as the spec types objects), int64, float64 and []float64. An
// event that is not semantic returns ErrNoConvention.
func Convention(ev event.Event) (map[string]any, error) {
	as, err := convention(ev)
	if err != nil {
		return nil, err
	}
	m := make(map[string]any, len(as))
	for _, a := range as {
		m[a.key] = a.val
	}
	return m, nil
}

// Attributes returns the OpenInference attributes of a semantic event as
// span attributes, in the reference's order. An event that is not
// semantic returns ErrNoConvention.
func Attributes(ev event.Event) ([]attribute.KeyValue, error) {
	as, err := convention(ev)
	if err != nil {
		return nil, err
	}
	kvs := make([]attribute.KeyValue, len(as))
	for i, a := range as {
		kvs[i] = attribute.KeyValue{Key: attribute.Key(a.key), Value: otelValue(a.val)}
	}
	return kvs, nil
}

func otelValue(v any) attribute.Value {
	switch v := v.(type) {
	case string:
		return attribute.StringValue(v)
	case int64:
		return attribute.Int64Value(v)
	case float64:
		return attribute.Float64Value(v)
	case bool:
		return attribute.BoolValue(v)
	case []float64:
		return attribute.Float64SliceValue(v)
	}
	return attribute.Value{} // JSON null
}

// convention dispatches on the most specific semantic base ev embeds, so
// an application's own subclass maps like its base.
func convention(ev event.Event) ([]attr, error) {
	if ev == nil {
		return nil, fmt.Errorf("%w: nil event", ErrNoConvention)
	}
	var c conv
	switch {
	case find[event.ExceptionEvent](ev) != nil:
		e := find[event.ExceptionEvent](ev)
		// No filter of unset values.
		return []attr{{SpanKindKey, KindChain}, {"exception.type", exceptionType(ev)}, {"exception.message", e.Message},
			{"http.response.status_code", statusCode(e)}}, nil
	case find[event.LLMEvent](ev) != nil:
		c.llm(find[event.LLMEvent](ev))
	case find[event.RetrieverEvent](ev) != nil:
		c.kind(KindRetriever)
		c.documents("retrieval.documents", find[event.RetrieverEvent](ev).Nodes)
	case find[event.RerankerEvent](ev) != nil:
		e := find[event.RerankerEvent](ev)
		c.kind(KindReranker)
		c.str("reranker.query", e.Query)
		c.str("reranker.model_name", e.RerankModelName)
		c.int("reranker.top_k", e.TopN)
		c.documents("reranker.input_documents", e.InputNodes)
		c.documents("reranker.output_documents", e.OutputNodes)
	case find[event.EmbeddingEvent](ev) != nil:
		e := find[event.EmbeddingEvent](ev)
		c.kind(KindEmbedding)
		c.str("embedding.model_name", e.EmbeddingModelName)
		for i, em := range e.Embeddings {
			p := "embedding.embeddings." + strconv.Itoa(i) + ".embedding."
			c.str(p+"text", em.Text)
			if em.Vector != nil {
				c.add(p+"vector", em.Vector)
			}
		}
	case find[event.ToolEvent](ev) != nil:
		e := find[event.ToolEvent](ev)
		c.kind(KindTool)
		c.str("tool.name", e.Name)
		c.str("tool.description", e.Description)
		c.str("tool.id", e.ToolCallID)
		// tool.parameters is the definition of the parameters: the schema.
		// Unset, neither is written ("null" would read as a schema).
		if e.JSONSchema != nil {
			c.dumps("tool.json_schema", e.JSONSchema)
			c.dumps("tool.parameters", e.JSONSchema)
		}
		// The call's arguments are its input.
		if e.Parameters != nil {
			c.dumps("input.value", e.Parameters)
			c.add("input.mime_type", "application/json")
		}
		c.toolOutput(ev)
	case find[event.ChainEvent](ev) != nil:
		c.kind(KindChain)
		if md := find[event.ChainEvent](ev).Metadata; md != nil {
			c.dumps("metadata", md)
		}
	case find[event.AgentEvent](ev) != nil:
		c.kind(KindAgent)
	case find[event.GuardEvent](ev) != nil:
		c.kind(KindGuardrail)
	default:
		return nil, fmt.Errorf("%w: %s", ErrNoConvention, event.Name(ev))
	}
	if c.err != nil {
		return nil, fmt.Errorf("semantic: %s: %w", event.Name(ev), c.err)
	}
	return c.as, nil
}

// conv collects attributes, dropping unset values as the reference does.
type conv struct {
	as  []attr
	err error
}

func (c *conv) add(k string, v any) { c.as = append(c.as, attr{k, v}) }

func (c *conv) kind(k string) { c.add(SpanKindKey, k) }

func (c *conv) str(k string, v *string) {
	if v != nil {
		c.add(k, *v)
	}
}

func (c *conv) int(k string, v *int64) {
	if v != nil {
		c.add(k, *v)
	}
}

// dumps adds the JSON string of v ("null" for nil: callers leave unset
// values out).
func (c *conv) dumps(k string, v any) {
	s, err := pyDumps(v)
	if err != nil {
		c.err = errors.Join(c.err, fmt.Errorf("%s: %w", k, err))
		return
	}
	c.add(k, s)
}

func (c *conv) llm(e *event.LLMEvent) {
	c.kind(KindLLM)
	if len(e.InvocationParameters) > 0 {
		c.dumps("llm.invocation_parameters", e.InvocationParameters)
	}
	c.str("llm.model_name", e.ChatModelName)
	c.str("llm.provider", e.Provider)
	if s := llmSystem(e); s != "" {
		c.add("llm.system", s)
	}
	c.str("llm.prompt_template.template", e.PromptTemplate)
	// The spec types the variables as a JSON string, like other objects.
	if e.PromptTemplateVariables != nil {
		c.dumps("llm.prompt_template.variables", e.PromptTemplateVariables)
	}
	c.str("llm.prompt_template.version", e.PromptTemplateVersion)
	c.int("llm.token_count.prompt", e.TokenCountPrompt)
	c.int("llm.token_count.completion", e.TokenCountCompletion)
	c.int("llm.token_count.total", e.TokenCountTotal)
	// OpenInference flattens the tool list: one JSON string per tool.
	for i, t := range e.Tools {
		c.dumps("llm.tools."+strconv.Itoa(i)+".tool.json_schema", t)
	}
	c.messages("llm.input_messages", e.InputMessages)
	c.messages("llm.output_messages", e.OutputMessages)
}

func (c *conv) messages(prefix string, ms []event.Message) {
	for i := range ms {
		m := &ms[i]
		p := prefix + "." + strconv.Itoa(i) + ".message."
		c.add(p+"role", m.Role)
		// One text is message.content, several parts or another kind
		// message.contents, never both.
		parts := len(m.Contents) > 1 || len(m.Contents) == 1 && m.Contents[0].Type != "text"
		if !parts {
			c.add(p+"content", m.Content()) // "" for a message without contents
		}
		c.str(p+"name", m.Name)
		for j, tc := range m.ToolCalls {
			c.toolCall(p+"tool_calls."+strconv.Itoa(j)+".tool_call.", tc)
		}
		c.str(p+"function_call_name", m.FunctionCallName)
		if m.FunctionCallArgumentsJSON != nil {
			c.dumps(p+"function_call_arguments_json", m.FunctionCallArgumentsJSON)
		}
		c.str(p+"tool_call_id", m.ToolCallID)
		for j, b := range m.Contents {
			if !parts {
				break
			}
			q := p + "contents." + strconv.Itoa(j) + "."
			c.add(q+"message_content.type", b.Type)
			switch b.Type {
			case "text":
				c.add(q+"message_content.text", b.Text)
			case "image":
				c.str(q+"message_content.image.image.url", b.URL)
			case "audio":
				// The reference's audio keys have no message_content segment.
				c.str(q+"audio.url", b.URL)
				c.str(q+"audio.mime_type", b.MimeType)
			}
		}
	}
}

// toolCall flattens one tool call, in the OpenAI shape (id, function
// with name and arguments) or flat (id, name, arguments).
func (c *conv) toolCall(p string, tc map[string]json.RawMessage) {
	fields := tc
	if raw, ok := tc["function"]; ok {
		var fn map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fn); err == nil && fn != nil {
			fields = fn
		}
	}
	var id, name string
	if json.Unmarshal(tc["id"], &id) == nil && id != "" {
		c.add(p+"id", id)
	}
	if json.Unmarshal(fields["name"], &name) == nil && name != "" {
		c.add(p+"function.name", name)
	}
	args, ok := fields["arguments"]
	if !ok || isNull(args) {
		return
	}
	// OpenAI sends the arguments as a JSON string already.
	var s string
	if json.Unmarshal(args, &s) == nil {
		c.add(p+"function.arguments", s)
		return
	}
	c.dumps(p+"function.arguments", args)
}

// toolOutput adds the tool's result, the member "result" (or "output")
// its producer attached: a string as it is, other JSON as JSON.
func (c *conv) toolOutput(ev event.Event) {
	for _, key := range []string{"result", "output"} {
		raw, ok := event.Extra(ev, key)
		if !ok || isNull(raw) {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			c.add("output.value", s)
			return
		}
		c.dumps("output.value", json.RawMessage(raw))
		c.add("output.mime_type", "application/json")
		return
	}
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func (c *conv) documents(prefix string, nodes []event.IngestedNode) {
	for i := range nodes {
		n := &nodes[i]
		p := prefix + "." + strconv.Itoa(i) + ".document."
		c.add(p+"id", n.ID)
		if n.Score != nil {
			c.add(p+"score", *n.Score)
		}
		c.add(p+"content", n.Content)
		c.dumps(p+"metadata", []pyField{
			{"document_id", n.DocumentID},
			{"source", n.Source},
			{"source_origin", n.SourceOrigin},
			{"namespace", n.Namespace},
			{"number_of_pages", n.NumberOfPages},
			{"document_title", n.DocumentTitle},
			{"language", n.Language},
			{"version", n.Version},
			{"created_at", n.CreatedAt},
			{"updated_at", n.UpdatedAt},
			{"inserted_at", n.InsertedAt},
		})
	}
}

// find returns the T that ev is or embeds (at any depth), or nil. The way
// to T is found once per event type: find is on every traced event's path.
func find[T any](ev event.Event) *T {
	if t, ok := any(ev).(*T); ok {
		return t
	}
	v := reflect.ValueOf(ev)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	path := embedPath(v.Elem().Type(), reflect.TypeFor[T]())
	if path == nil {
		return nil
	}
	return v.Elem().FieldByIndex(path).Addr().Interface().(*T)
}

// embedPaths caches, per wanted type, per event type, the field indexes
// that lead to the embedded wanted type; an empty path means none.
var embedPaths sync.Map // reflect.Type -> *sync.Map of reflect.Type -> []int

func embedPath(in, want reflect.Type) []int {
	m, ok := embedPaths.Load(want)
	if !ok {
		m, _ = embedPaths.LoadOrStore(want, new(sync.Map))
	}
	paths := m.(*sync.Map)
	if p, ok := paths.Load(in); ok {
		return p.([]int)
	}
	p := searchEmbedded(in, func(f reflect.StructField) bool { return f.Anonymous && f.Type == want })
	paths.Store(in, p)
	return p
}

// searchEmbedded walks the struct in and its embedded structs breadth
// first, as Go's field promotion does, and returns the index path of the
// first field match accepts, or nil.
func searchEmbedded(in reflect.Type, match func(reflect.StructField) bool) []int {
	level := [][]int{nil}
	for len(level) > 0 {
		var next [][]int
		for _, at := range level {
			s := in
			if at != nil {
				s = in.FieldByIndex(at).Type
			}
			for i := range s.NumField() {
				f := s.Field(i)
				here := append(append([]int(nil), at...), i)
				if match(f) {
					return here
				}
				if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.Anonymous && f.Type.Kind() == reflect.Struct && name == "" {
					next = append(next, here)
				}
			}
		}
		level = next
	}
	return nil
}

// contentPaths caches, per event type, the index path of its string
// member "content"; an empty path means it has none.
var contentPaths sync.Map // reflect.Type -> []int

// contentOf is the event's member "content" if it is a string, as its JSON
// would carry it, without encoding the event.
func contentOf(ev event.Event) (string, bool) {
	v := reflect.ValueOf(ev)
	if v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct {
		in := v.Elem().Type()
		p, ok := contentPaths.Load(in)
		if !ok {
			p = searchEmbedded(in, func(f reflect.StructField) bool {
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				return name == "content" && f.Type.Kind() == reflect.String
			})
			contentPaths.Store(in, p)
		}
		if path := p.([]int); path != nil {
			return v.Elem().FieldByIndex(path).String(), true
		}
	}
	if raw, ok := event.Extra(ev, "content"); ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, true
		}
	}
	return "", false
}

// exceptionType names the type of the exception ev reports: the
// error_type it carries (a Python producer's exception class), else its
// event class.
func exceptionType(ev event.Event) string {
	if raw, ok := event.Extra(ev, "error_type"); ok {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return event.Name(ev)
}

// statusCode is the http_status_code as written on the wire: the zero
// value is written as the default, 500.
func statusCode(e *event.ExceptionEvent) int64 {
	if e.HTTPStatusCode == 0 {
		return 500
	}
	return int64(e.HTTPStatusCode)
}
