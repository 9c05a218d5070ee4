// Package health serves a runner's liveness and readiness over HTTP, for
// Kubernetes probes and load balancers:
//
//	GET /healthz  200 while the process serves HTTP at all
//	GET /readyz   200 while the runner takes events (Runner.Health), else
//	              503 with a JSON reason naming the part at fault
//
//	r, _ := agent.New(myAgent{})
//	go health.ListenAndServe(ctx, ":8081", health.Handler(r))
//	err := r.Run(ctx)
//
// It is a package of its own so that agents that do not serve probes do
// not link an HTTP server.
package health

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"

	agent "github.com/saap-go/agent"
)

// CheckTimeout bounds one readiness check (the state store read).
const CheckTimeout = time.Second

// Response is the JSON body of /healthz and /readyz.
type Response struct {
	Status    string `json:"status"`              // "ok" or "unavailable"
	Component string `json:"component,omitempty"` // at fault: "runner", "nats", "store" or "consumer"
	Reason    string `json:"reason,omitempty"`
}

// Handler returns a mux serving GET /healthz and GET /readyz for r. Add
// other routes to it (a /metrics handler, say) to serve them on the same
// port.
func Handler(r *agent.Runner) *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		write(w, http.StatusOK, Response{Status: "ok"})
	})
	m.HandleFunc("GET /readyz", func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), CheckTimeout)
		defer cancel()
		err := r.Health(ctx)
		if err == nil {
			write(w, http.StatusOK, Response{Status: "ok"})
			return
		}
		res := Response{Status: "unavailable", Component: "runner", Reason: err.Error()}
		if he := (*agent.HealthError)(nil); errors.As(err, &he) {
			res.Component, res.Reason = he.Component, he.Reason
		}
		write(w, http.StatusServiceUnavailable, res)
	})
	return m
}

func write(w http.ResponseWriter, code int, v Response) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// ListenAndServe serves h on addr until ctx is done, then shuts the server
// down and returns nil.
func ListenAndServe(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return Serve(ctx, ln, h)
}

// Serve serves h on ln until ctx is done, then shuts the server down and
// returns nil.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-done
	return err
}
