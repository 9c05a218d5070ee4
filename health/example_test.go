package health_test

import (
	"context"
	"log"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/health"
	"github.com/saap-go/agent/metrics/prometheus"
)

// A runner with its probes and Prometheus metrics on port 8081.
func ExampleHandler() {
	ctx := context.Background()
	m, err := prometheus.New()
	if err != nil {
		log.Fatal(err)
	}
	defer m.Shutdown(context.Background())
	r, err := agent.New(&Pinger{}, agent.WithMeterProvider(m.MeterProvider()))
	if err != nil {
		log.Fatal(err)
	}
	mux := health.Handler(r)
	mux.Handle("GET /metrics", m.Handler())
	go func() {
		if err := health.ListenAndServe(ctx, ":8081", mux); err != nil {
			log.Print(err)
		}
	}()
	if err := r.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
