package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/saap-go/agent/event"
)

// ErrUnauthenticated is returned by an Authenticator when a request carries
// no credentials or credentials it does not accept. The gateway answers 401.
var ErrUnauthenticated = errors.New("gateway: unauthenticated")

// An Authenticator turns a request's credentials into the user the gateway
// acts for. The identity goes into start events (`user`) and decides thread
// membership. An error wrapping ErrUnauthenticated yields 401; any other
// error 500.
type Authenticator interface {
	Authenticate(r *http.Request) (*event.UserIdentity, error)
}

// AuthenticatorFunc adapts a function to the Authenticator interface.
type AuthenticatorFunc func(r *http.Request) (*event.UserIdentity, error)

// Authenticate calls f(r).
func (f AuthenticatorFunc) Authenticate(r *http.Request) (*event.UserIdentity, error) { return f(r) }

// BearerToken extracts the token of an `Authorization: Bearer <token>`
// header, or "" when there is none.
func BearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return ""
	}
	return strings.TrimSpace(h[7:])
}

// TokenFunc authenticates bearer tokens with lookup, which returns the
// token's user or an error (wrap ErrUnauthenticated for unknown tokens). Use
// it to plug in a real verifier, such as an OIDC token introspection.
func TokenFunc(lookup func(ctx context.Context, token string) (*event.UserIdentity, error)) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*event.UserIdentity, error) {
		tok := BearerToken(r)
		if tok == "" {
			return nil, fmt.Errorf("%w: missing bearer token", ErrUnauthenticated)
		}
		return lookup(r.Context(), tok)
	})
}

// StaticTokens authenticates a fixed set of bearer tokens, each mapped to
// its user. It suits tests, demos and service-to-service setups; tokens are
// compared in constant time.
func StaticTokens(users map[string]event.UserIdentity) Authenticator {
	type entry struct {
		tok  []byte
		user event.UserIdentity
	}
	list := make([]entry, 0, len(users))
	for tok, u := range users {
		list = append(list, entry{[]byte(tok), u})
	}
	return TokenFunc(func(_ context.Context, token string) (*event.UserIdentity, error) {
		b := []byte(token)
		for _, e := range list {
			if subtle.ConstantTimeCompare(b, e.tok) == 1 {
				u := e.user
				return &u, nil
			}
		}
		return nil, fmt.Errorf("%w: unknown bearer token", ErrUnauthenticated)
	})
}

// Anonymous accepts every request as user, with or without credentials. It
// is meant for local development and the bundled examples; never expose a
// gateway configured with it. ListenAndServe refuses to serve it on an
// address other machines can reach unless Config.AllowAnonymousRemote is
// set.
func Anonymous(user event.UserIdentity) Authenticator { return anonymous{user} }

type anonymous struct{ user event.UserIdentity }

func (a anonymous) Authenticate(*http.Request) (*event.UserIdentity, error) {
	u := a.user
	return &u, nil
}
