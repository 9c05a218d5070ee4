// Package demotrace is the examples' -trace flag: OTLP export of the
// runners' spans. It is a package of its own so that an example without
// the flag does not link the OTLP exporters (and their gRPC stack).
package demotrace

import (
	"context"
	"fmt"
	"io"
	"os"

	"go.opentelemetry.io/otel/trace"

	"github.com/saap-go/agent/semantic/otlp"
)

// Start sets up OTLP export when on (a -trace flag) or the environment
// asks for it, and prints to out where the spans go. It returns nil when
// there is nothing to export; Close the exporter after the runners have
// stopped.
func Start(ctx context.Context, on bool, out io.Writer) (*otlp.Exporter, error) {
	if !on && !otlp.Enabled() {
		return nil, nil
	}
	if !otlp.Enabled() {
		// -trace without an endpoint: the exporter's default one.
		if err := os.Setenv("OTEL_TRACES_EXPORTER", "otlp"); err != nil {
			return nil, err
		}
	}
	exp, err := otlp.Setup(ctx)
	if err != nil || exp == nil {
		return nil, err
	}
	fmt.Fprintf(out, "tracing: spans go to %s (OTLP %s)\n", exp.Where(), exp.Protocol())
	return exp, nil
}

// Tracing is Start in the form demo.Options.Tracing and
// demo.Command.Tracing take.
func Tracing(ctx context.Context, on bool, out io.Writer) (trace.TracerProvider, func() error, error) {
	exp, err := Start(ctx, on, out)
	if err != nil || exp == nil {
		return nil, nil, err
	}
	return exp.TracerProvider(), exp.Close, nil
}
