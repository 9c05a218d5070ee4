// Package otlp exports the spans of package semantic over OTLP (HTTP or
// gRPC), configured by the standard OpenTelemetry environment variables.
// It is the only package of the SDK that links the OTLP exporters and
// gRPC: an agent that does not import it does not carry them.
//
//	exp, err := otlp.Setup(ctx) // nil, nil when the environment asks for no export
//	if exp != nil {
//		defer exp.Close() // flushes for at most FlushTimeout
//		log.Println("spans go to", exp.Where())
//	}
//
// Setup installs the provider globally, where the agent runtime finds it;
// New only builds it.
//
// The variables read here: OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER
// ("otlp" or "none"), OTEL_EXPORTER_OTLP_ENDPOINT and
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (either one turns export on),
// OTEL_EXPORTER_OTLP_PROTOCOL and OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
// ("http/protobuf", the default, or "grpc"). Without an endpoint, spans go
// to http://localhost:4318/v1/traces (HTTP) or http://localhost:4317
// (gRPC), without TLS, as the specification says. The exporters themselves read
// the headers, timeout, compression, TLS and insecure settings
// (OTEL_EXPORTER_OTLP_HEADERS and the rest), and the resource comes from
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Protocols of OTEL_EXPORTER_OTLP_PROTOCOL.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Exporter is a tracer provider exporting over OTLP.
type Exporter struct {
	tp       *sdktrace.TracerProvider
	protocol string
	where    string
}

// TracerProvider returns the provider to hand to semantic.WithTracerProvider
// or agent.WithTracerProvider.
func (e *Exporter) TracerProvider() *sdktrace.TracerProvider { return e.tp }

// Protocol is ProtocolHTTP or ProtocolGRPC.
func (e *Exporter) Protocol() string { return e.protocol }

// Where says where spans go: the URL (HTTP) or host:port (gRPC).
func (e *Exporter) Where() string { return e.where }

// Shutdown flushes the spans not yet sent and stops the exporter. It
// waits as long as ctx lets it: against an endpoint that does not answer,
// the exporter retries until ctx is done.
func (e *Exporter) Shutdown(ctx context.Context) error { return e.tp.Shutdown(ctx) }

// FlushTimeout bounds Close: how long a program's exit waits for the
// spans not yet sent.
const FlushTimeout = time.Second

// Close is Shutdown within FlushTimeout: at exit, spans that cannot reach
// the endpoint by then are dropped (the error says so) rather than holding
// the program up.
func (e *Exporter) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), FlushTimeout)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		return fmt.Errorf("otlp: spans not sent to %s within %s: %w", e.where, FlushTimeout, err)
	}
	return nil
}

// Enabled reports whether the environment asks for OTLP export of traces.
func Enabled() bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch exp := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "none":
		return false
	case "otlp":
		return true
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// New builds an OTLP exporter and its tracer provider from the environment,
// or returns nil, nil when the environment asks for none (Enabled).
// Options add to the provider (a sampler, span processors).
func New(ctx context.Context, opts ...sdktrace.TracerProviderOption) (*Exporter, error) {
	if !Enabled() {
		return nil, nil
	}
	protocol := firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	if protocol == "" {
		protocol = ProtocolHTTP
	}
	var exp *otlptrace.Exporter
	var err error
	var where string
	// Without an endpoint variable the exporters would use TLS to
	// localhost; the specification's default is plain http://localhost,
	// which is what Where says and what a local collector serves.
	noEndpoint := firstRaw("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT") == ""
	switch protocol {
	case ProtocolHTTP:
		where = httpWhere()
		var o []otlptracehttp.Option
		if noEndpoint {
			o = append(o, otlptracehttp.WithEndpointURL(where))
		}
		exp, err = otlptracehttp.New(ctx, o...)
	case ProtocolGRPC:
		where = grpcWhere()
		var o []otlptracegrpc.Option
		if noEndpoint {
			o = append(o, otlptracegrpc.WithEndpointURL(where))
		}
		exp, err = otlptracegrpc.New(ctx, o...)
	default:
		return nil, fmt.Errorf("otlp: protocol %q: only %q and %q are supported", protocol, ProtocolHTTP, ProtocolGRPC)
	}
	if err != nil {
		return nil, fmt.Errorf("otlp: %s exporter: %w", protocol, err)
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("otlp: resource: %w", err)
	}
	res, err = resource.Merge(resource.Default(), res)
	if err != nil {
		res = resource.Default() // conflicting schema URLs: keep the defaults
	}
	tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{
		sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}, opts...)...)
	return &Exporter{tp: tp, protocol: protocol, where: where}, nil
}

// Setup is New, then installs the provider and the W3C trace context and
// baggage propagators globally. It returns nil, nil when the environment
// asks for no export.
func Setup(ctx context.Context, opts ...sdktrace.TracerProviderOption) (*Exporter, error) {
	e, err := New(ctx, opts...)
	if e == nil || err != nil {
		return nil, err
	}
	otel.SetTracerProvider(e.tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return e, nil
}

func firstEnv(keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(os.Getenv(k)); v != "" {
			return strings.ToLower(v)
		}
	}
	return ""
}

// httpWhere is the URL the HTTP exporter posts to, by the rules it follows:
// a signal endpoint is used as it is, a general one gets /v1/traces.
func httpWhere() string {
	if v := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		return v
	}
	if v := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		u, err := url.Parse(v)
		if err == nil {
			u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
			return u.String()
		}
		return v
	}
	return "http://localhost:4318/v1/traces"
}

func grpcWhere() string {
	if v := firstRaw("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		return v
	}
	return "http://localhost:4317"
}

func firstRaw(keys ...string) string {
	for _, k := range keys {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return ""
}
