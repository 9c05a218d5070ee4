package otlp_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/semantic"
	"github.com/saap-go/agent/semantic/otlp"
	"github.com/saap-go/agent/step"
)

// receiver keeps the export requests an OTLP endpoint received.
type receiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu   sync.Mutex
	reqs []*coltracepb.ExportTraceServiceRequest
	errs []error
}

func (r *receiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// ServeHTTP decodes OTLP/HTTP protobuf, as a collector does.
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var msg coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &msg)
	}
	if err == nil && (req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf") {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		r.mu.Lock()
		r.errs = append(r.errs, err)
		r.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, _ = r.Export(req.Context(), &msg)
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// spans flattens what was received, with the resource's service.name.
func (r *receiver) spans(t *testing.T) (map[string]*tracepb.Span, string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) > 0 {
		t.Fatalf("receiver errors: %v", r.errs)
	}
	spans, service := map[string]*tracepb.Span{}, ""
	for _, req := range r.reqs {
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					service = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans[s.Name] = s
				}
			}
		}
	}
	return spans, service
}

func value(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

type Draft struct{ event.ControlEvent }

func init() { event.MustRegister[Draft]() }

func TestExportHTTP(t *testing.T) {
	rcv := &receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "traced-agent")
	exportAndCheck(t, rcv, otlp.ProtocolHTTP, srv.URL+"/v1/traces")
}

func TestExportGRPC(t *testing.T) {
	rcv := &receiver{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, rcv)
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	endpoint := "http://" + lis.Addr().String()
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
	t.Setenv("OTEL_SERVICE_NAME", "traced-agent")
	exportAndCheck(t, rcv, otlp.ProtocolGRPC, endpoint)
}

func exportAndCheck(t *testing.T, rcv *receiver, protocol, where string) {
	exp, err := otlp.New(context.Background())
	if err != nil || exp == nil {
		t.Fatalf("New: %v, %v", exp, err)
	}
	if exp.Protocol() != protocol || exp.Where() != where {
		t.Errorf("exporting %s to %s, want %s to %s", exp.Protocol(), exp.Where(), protocol, where)
	}
	tr := semantic.New(semantic.WithTracerProvider(exp.TracerProvider()))
	model, total := "gpt-4o", int64(12)
	gen := step.New(func(ctx step.Context, q *event.UserMessageEvent) ([]event.Event, error) {
		return []event.Event{&event.LLMEvent{ChatModelName: &model, TokenCountTotal: &total,
			PromptTemplateVariables: map[string]string{"city": "Bern"}}, &Draft{}}, nil
	}, step.Name("generate"), step.Emits(&event.LLMEvent{}, &Draft{}))
	finish := step.New(func(ctx step.Context, d *Draft) (*event.StopEvent, error) { return &event.StopEvent{}, nil }, step.Name("finish"))
	w, err := step.NewWorkflow("ExportedAgent", gen, finish)
	if err != nil {
		t.Fatal(err)
	}
	h := agenttest.New(t, w, agenttest.WithInterceptors(tr))
	h.Start(&event.UserMessageEvent{User: &event.UserIdentity{ID: "u1", Name: "U", Email: "u@example.org", Roles: []string{}}})
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown (flush): %v", err)
	}

	spans, service := rcv.spans(t)
	if service != "traced-agent" {
		t.Errorf("service.name %q", service)
	}
	run, st, llm := spans["run ExportedAgent"], spans["step generate"], spans["LLMEvent"]
	if run == nil || st == nil || llm == nil || spans["step finish"] == nil {
		t.Fatalf("spans received: %v", keys(spans))
	}
	if string(llm.ParentSpanId) != string(st.SpanId) || string(llm.TraceId) != string(run.TraceId) {
		t.Errorf("LLMEvent span not under its step in the run's trace")
	}
	if v := value(llm, "openinference.span.kind"); v.GetStringValue() != "LLM" {
		t.Errorf("span kind %v", v)
	}
	if v := value(llm, "llm.token_count.total"); v == nil || v.GetIntValue() != 12 {
		t.Errorf("token count %v, want the integer 12", v)
	}
	if v := value(llm, "llm.invocation_parameters"); v != nil {
		t.Errorf("invocation parameters %v, want none: the call had none", v)
	}
	if v := value(llm, "llm.prompt_template.variables"); v.GetStringValue() != `{"city": "Bern"}` {
		t.Errorf("template variables %v, want the JSON string the spec types them as", v)
	}
	if v := value(run, "user.id"); v.GetStringValue() != "u1" {
		t.Errorf("user.id %v", v)
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// Without an endpoint or exporter setting, nothing is exported.
func TestDisabled(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"},
	} {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
		t.Setenv("OTEL_SDK_DISABLED", "")
		t.Setenv("OTEL_TRACES_EXPORTER", "")
		for k, v := range env {
			t.Setenv(k, v)
		}
		if exp, err := otlp.Setup(context.Background()); exp != nil || err != nil {
			t.Errorf("env %v: exporter %v, error %v; want none", env, exp, err)
		}
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if _, err := otlp.New(context.Background()); err == nil {
		t.Error("http/json accepted")
	}
}

// clearEndpoints unsets every endpoint variable, so the default applies.
func clearEndpoints(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE", "OTEL_SDK_DISABLED"} {
		t.Setenv(k, "")
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
}

// With no endpoint set, the spans go where Where says: plain HTTP to
// localhost:4318, not https.
func TestDefaultEndpointIsPlainHTTP(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:4318")
	if err != nil {
		t.Skipf("port 4318 is taken (%v): the default endpoint cannot be checked here", err)
	}
	rcv := &receiver{}
	srv := &http.Server{Handler: rcv}
	go func() { _ = srv.Serve(lis) }()
	defer srv.Close()
	clearEndpoints(t)
	t.Setenv("OTEL_SERVICE_NAME", "traced-agent")
	exportAndCheck(t, rcv, otlp.ProtocolHTTP, "http://localhost:4318/v1/traces")
}

// Close does not hold an exit up for long when the endpoint never
// answers: a listener that accepts and says nothing.
func TestCloseIsBounded(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for _, protocol := range []string{otlp.ProtocolGRPC, otlp.ProtocolHTTP} {
		clearEndpoints(t)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+lis.Addr().String())
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
		exp, err := otlp.New(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_, span := exp.TracerProvider().Tracer("test").Start(context.Background(), "pending")
		span.End()
		start := time.Now()
		err = exp.Close()
		if took := time.Since(start); took > otlp.FlushTimeout+time.Second {
			t.Errorf("%s: Close took %s, more than FlushTimeout (%s)", protocol, took, otlp.FlushTimeout)
		}
		if err == nil {
			t.Errorf("%s: Close reported no error for spans that were not sent", protocol)
		}
	}
}
