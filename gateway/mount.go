package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/saap-go/agent/event"
)

// Authenticated wraps h so that it only sees requests the gateway's
// Authenticator accepts: others get 401 (or 500 when the authenticator
// fails) in the gateway's error shape. h finds the user with UserFrom. A
// request h sends to the gateway itself (ServeHTTP) with a context derived
// from the request's acts for the same user, under the gateway's limits
// and membership checks, without authenticating again. The response may
// take as long as a run may: the write deadline is extended to
// Config.Timeout plus a minute. The body is read before h runs, within
// MaxBody (else 413) and MaxInFlightBody (else 503), as on Guard's routes.
func (g *Gateway) Authenticated(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := g.authenticate(w, r)
		if !ok {
			return
		}
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(g.cfg.Timeout + time.Minute))
		g.limitBody(h, g.fail).ServeHTTP(w, r.WithContext(WithUser(r.Context(), user)))
	})
}

// WithUser returns ctx acting for user: requests to the gateway's
// ServeHTTP with this context skip authentication and act for user. Only
// code of the gateway's process can make such requests; use it for
// requests an adapter derives from one it has authenticated.
func WithUser(ctx context.Context, user *event.UserIdentity) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}
