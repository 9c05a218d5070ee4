// Package oispec checks exported spans against the OpenInference
// specification, for the tests of the tracing and of the examples that
// trace. Receiver is an OTLP/HTTP endpoint that decodes what it gets.
package oispec

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// SpanKinds are the values of openinference.span.kind the specification
// (spec/semantic_conventions.md of Arize-ai/openinference) allows.
var SpanKinds = map[string]bool{"LLM": true, "CHAIN": true, "TOOL": true, "AGENT": true, "RETRIEVER": true,
	"EMBEDDING": true, "RERANKER": true, "GUARDRAIL": true, "EVALUATOR": true, "PROMPT": true}

// Required are the attributes each kind must have, as non-empty strings.
// The spec requires tool.id only when the call has an id; every tool call
// of the SDK's tool loop has one.
var Required = map[string][]string{
	"LLM":  {"llm.model_name", "llm.system", "llm.input_messages.0.message.role", "llm.output_messages.0.message.role"},
	"TOOL": {"tool.name", "tool.id", "input.value"},
}

var messageKey = regexp.MustCompile(`^llm\.(input|output)_messages\.\d+\.message\.[a-z_]+(\.\d+\.[a-z_]+(\.[a-z_]+)*)?$`)

// Check reports where s departs from the specification
// (spec/semantic_conventions.md and spec/llm_spans.md), in short:
//   - every span names its kind, one of SpanKinds;
//   - attributes hold primitives or lists of them: lists of objects are
//     flattened into indexed keys (llm.input_messages.N.message.*),
//     objects are JSON strings;
//   - an LLM span names its system and model and has its messages, a
//     TOOL span its tool, call id and input (Required);
//   - attributes typed as JSON strings (llm.invocation_parameters and
//     llm.prompt_template.variables, objects; *.json_schema, *.arguments,
//     tool.parameters, metadata) hold JSON, never "null" (an unset value
//     is left out), and so does a value whose mime type says
//     application/json.
//
// It also checks what Phoenix needs to show a trace well: a span with
// status Error has an exception event naming the exception's type, a
// root span (a run's) has input.value, and output.value once its run
// completed.
func Check(s *tracepb.Span) []string {
	var bad []string
	attrs := map[string]*commonpb.AnyValue{}
	for _, kv := range s.Attributes {
		if _, dup := attrs[kv.Key]; dup {
			bad = append(bad, "attribute "+kv.Key+" twice")
		}
		attrs[kv.Key] = kv.Value
		if !primitive(kv.Value) {
			bad = append(bad, fmt.Sprintf("%s is not a primitive or a list of primitives: %v", kv.Key, kv.Value))
		}
		if strings.HasPrefix(kv.Key, "llm.input_messages.") || strings.HasPrefix(kv.Key, "llm.output_messages.") {
			if !messageKey.MatchString(kv.Key) {
				bad = append(bad, kv.Key+" is not a flattened message attribute")
			}
			if kv.Value.GetArrayValue() != nil {
				bad = append(bad, kv.Key+" is a list")
			}
		}
		if jsonString(kv.Key) {
			switch s := kv.Value.GetStringValue(); {
			case !json.Valid([]byte(s)):
				bad = append(bad, fmt.Sprintf("%s is not a JSON string: %v", kv.Key, kv.Value))
			case s == "null":
				// An unset value is left out, not written as null.
				bad = append(bad, kv.Key+` is "null"`)
			}
		}
	}
	for _, io := range []string{"input", "output"} {
		if attrs[io+".mime_type"].GetStringValue() == "application/json" && !json.Valid([]byte(attrs[io+".value"].GetStringValue())) {
			bad = append(bad, io+".value is not the JSON its mime type says")
		}
	}
	for _, k := range []string{"llm.invocation_parameters", "llm.prompt_template.variables"} {
		if v, ok := attrs[k]; ok {
			var obj map[string]any
			if err := json.Unmarshal([]byte(v.GetStringValue()), &obj); err != nil || obj == nil {
				bad = append(bad, fmt.Sprintf("%s is not a JSON object: %v", k, v))
			}
		}
	}
	kind := attrs[KindKey].GetStringValue()
	if !SpanKinds[kind] {
		bad = append(bad, fmt.Sprintf("openinference.span.kind %v", attrs[KindKey]))
	}
	for _, k := range Required[kind] {
		if attrs[k].GetStringValue() == "" {
			bad = append(bad, fmt.Sprintf("%s span without %s", kind, k))
		}
	}
	if s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		found := false
		for _, e := range s.Events {
			if e.Name != "exception" {
				continue
			}
			for _, kv := range e.Attributes {
				if kv.Key == "exception.type" && kv.Value.GetStringValue() != "" {
					found = true
				}
			}
		}
		if !found {
			bad = append(bad, "status Error without an exception event naming its type")
		}
	}
	// A run's root span: Phoenix takes a session's input and output from
	// them. (A consumer span of an event published after its run's span
	// ended, at shutdown, can be a root too; it is no run's.)
	if len(s.ParentSpanId) == 0 && strings.HasPrefix(s.Name, "run ") {
		if attrs["input.value"].GetStringValue() == "" {
			bad = append(bad, "root span without input.value")
		}
		if attrs["saap.run.outcome"].GetStringValue() == "completed" && attrs["output.value"].GetStringValue() == "" {
			bad = append(bad, "completed run's root span without output.value")
		}
	}
	if s.EndTimeUnixNano < s.StartTimeUnixNano {
		bad = append(bad, "ends before it starts")
	}
	return bad
}

// jsonString says whether the spec types the attribute k as a JSON string.
func jsonString(k string) bool {
	if k == "metadata" || k == "llm.invocation_parameters" || k == "llm.prompt_template.variables" || k == "tool.parameters" {
		return true
	}
	for _, suffix := range []string{".json_schema", ".arguments", ".metadata"} {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	return false
}

func primitive(v *commonpb.AnyValue) bool {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_KvlistValue, nil:
		return false
	case *commonpb.AnyValue_ArrayValue:
		for _, e := range x.ArrayValue.GetValues() {
			switch e.GetValue().(type) {
			case *commonpb.AnyValue_KvlistValue, *commonpb.AnyValue_ArrayValue, nil:
				return false
			}
		}
	}
	return true
}

// KindKey is the attribute naming a span's kind.
const KindKey = "openinference.span.kind"

// Kind is the kind s names.
func Kind(s *tracepb.Span) string {
	for _, kv := range s.Attributes {
		if kv.Key == KindKey {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// Receiver is an OTLP/HTTP trace endpoint (path /v1/traces, protobuf):
// serve it with httptest.NewServer.
type Receiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	errs  []error
}

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var msg coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &msg)
	}
	if err == nil && (req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf") {
		err = fmt.Errorf("%s %s, want /v1/traces application/x-protobuf", req.URL.Path, req.Header.Get("Content-Type"))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.errs = append(r.errs, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, rs := range msg.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Spans returns the spans received so far, and the errors of the
// requests that could not be decoded.
func (r *Receiver) Spans() ([]*tracepb.Span, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...), append([]error(nil), r.errs...)
}
