// Package prometheus serves a runner's metrics to Prometheus: a
// MeterProvider for agent.WithMeterProvider, read by an http.Handler that
// answers scrapes in the Prometheus text format, through the OpenTelemetry
// Prometheus exporter.
//
//	m, err := prometheus.New()
//	if err != nil { ... }
//	defer m.Shutdown(context.Background())
//	r, _ := agent.New(myAgent{}, agent.WithMeterProvider(m.MeterProvider()))
//	mux := health.Handler(r)
//	mux.Handle("GET /metrics", m.Handler())
//	go health.ListenAndServe(ctx, ":8081", mux)
//
// The SDK's metrics (package semantic: saap.agent.runs.started and so on)
// appear with dots turned into underscores and counters suffixed _total,
// e.g. saap_agent_runs_started_total. The Go runtime and process
// collectors are served too.
//
// It is a package of its own so that agents that do not export to
// Prometheus do not link its client.
package prometheus

import (
	"context"
	"net/http"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Metrics is a MeterProvider and the handler that serves what was
// recorded through it.
type Metrics struct {
	mp      *sdkmetric.MeterProvider
	handler http.Handler
}

// New returns Metrics on a registry of their own, so that several can
// live in one process (tests, say) without clashing on the global one.
func New() (*Metrics, error) {
	reg := promclient.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, err
	}
	return &Metrics{
		mp:      sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)),
		handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
	}, nil
}

// MeterProvider is the provider to give agent.WithMeterProvider.
func (m *Metrics) MeterProvider() metric.MeterProvider { return m.mp }

// Handler serves the metrics in the Prometheus text format; mount it at
// /metrics.
func (m *Metrics) Handler() http.Handler { return m.handler }

// Shutdown stops the provider; scrapes after it serve no SDK metrics.
func (m *Metrics) Shutdown(ctx context.Context) error { return m.mp.Shutdown(ctx) }
