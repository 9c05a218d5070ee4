package agent

import (
	"errors"
	"os"
	"reflect"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/saap-go/agent/semantic"
)

// WithMeterProvider sets where the runner's metrics go: runs started,
// completed and crashed, step executions, re-runs and durations, dead
// letters and waits, by agent class (default the global provider, if one
// was installed before Run).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) error {
		if mp == nil {
			return errors.New("agent: WithMeterProvider: nil provider")
		}
		o.meterProvider = mp
		return nil
	}
}

// EnvLangfuse, set to true, has the runner add the langfuse.* span
// attributes, as WithLangfuse does.
const EnvLangfuse = "SAAP_TRACE_LANGFUSE"

// WithLangfuse adds the langfuse.* span attributes Langfuse reads (trace
// name, session, user, observation types, model and usage).
func WithLangfuse() Option {
	return func(o *options) error {
		o.langfuse = true
		return nil
	}
}

// tracing returns the runner's OpenInference tracing, or nil when it is
// off: no provider given and none installed globally before Run. Off, the
// engine runs without tracing hooks.
func (r *Runner) tracing() *semantic.Tracing {
	tp, mp := r.o.tracerProvider, r.o.meterProvider
	if tp == nil && installed(otel.GetTracerProvider()) {
		tp = otel.GetTracerProvider()
	}
	if mp == nil && installed(otel.GetMeterProvider()) {
		mp = otel.GetMeterProvider()
	}
	if tp == nil && mp == nil {
		return nil
	}
	opts := []semantic.Option{semantic.WithTracerProvider(tp), semantic.WithMeterProvider(mp)}
	if r.o.langfuse || envTrue(os.Getenv(EnvLangfuse)) {
		opts = append(opts, semantic.WithLangfuse())
	}
	return semantic.New(opts...)
}

// installed reports whether p was installed by the program, rather than
// being OTel's global placeholder that does nothing until one is.
func installed(p any) bool {
	if p == nil {
		return false
	}
	t := reflect.TypeOf(p)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() != "go.opentelemetry.io/otel/internal/global"
}
