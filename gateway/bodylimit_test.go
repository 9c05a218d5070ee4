package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/gateway/a2a"
	"github.com/saap-go/agent/gateway/agui"
	"github.com/saap-go/agent/gateway/mcp"
)

// heldBody is a request body whose first Read reports on reading and then
// waits for release: the gateway has reserved its bytes by then.
type heldBody struct {
	reading chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *heldBody) Read([]byte) (int, error) {
	b.once.Do(func() { close(b.reading) })
	<-b.release
	return 0, io.EOF
}

// TestBodyLimitsOnEveryRoute: on every route that takes a body, the
// gateway's own and the adapters' alike, a body over MaxBody gets 413, and
// a body while others hold the in-flight budget gets 503 with Retry-After.
func TestBodyLimitsOnEveryRoute(t *testing.T) {
	const maxBody, inFlight = 64, 100
	e := newEnv(t, func(t *testing.T) bus.Bus { return bustest.NewNATS(t) }, func(c *gateway.Config) {
		c.MaxBody, c.MaxInFlightBody = maxBody, inFlight
		c.BotSecret = []byte("bot secret")
	})
	mcp.Mount(e.gw, mcp.Options{})
	agui.Mount(e.gw)
	a2a.Mount(e.gw, a2a.Config{})
	for _, path := range []string{
		"/api/v1/bitl/answers",
		"/mcp", "/mcp/dev_agent", "/api/v1/acme/mcp", "/api/v1/acme/mcp/dev_agent",
		"/agui/EchoAgent/dev_agent", "/api/v1/acme/agui/EchoAgent/dev_agent",
		"/a2a/EchoAgent/dev_agent",
		blockPath,
	} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			if resp := post(t, e.srv, tokenAlice, path, strings.Repeat("x", maxBody+1)); resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("body of %d bytes: %d, want 413", maxBody+1, resp.StatusCode)
			}

			held := &heldBody{reading: make(chan struct{}), release: make(chan struct{})}
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, path, held)
			req.ContentLength = maxBody
			req.Header.Set("Authorization", "Bearer "+tokenAlice)
			done := make(chan struct{})
			go func() {
				defer close(done)
				e.gw.ServeHTTP(httptest.NewRecorder(), req)
			}()
			select {
			case <-held.reading:
			case <-done:
				t.Fatal("the route answered without reading the body")
			}
			resp := post(t, e.srv, tokenAlice, path, strings.Repeat("x", inFlight-maxBody+1))
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
				t.Errorf("body over the in-flight budget: %d Retry-After %q, want 503 with Retry-After",
					resp.StatusCode, resp.Header.Get("Retry-After"))
			}
			close(held.release)
			<-done
		})
	}
}
