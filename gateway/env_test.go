package gateway_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
)

var (
	alice = event.UserIdentity{ID: "alice", Name: "Alice", Email: "alice@example.com", Roles: []string{"user"}}
	bob   = event.UserIdentity{ID: "bob", Name: "Bob", Email: "bob@example.com", Roles: []string{"user"}}
)

// newBusFunc returns a fresh bus that lives until t ends.
type newBusFunc func(t *testing.T) bus.Bus

// buses are the transports every gateway test runs on: the in-memory bus,
// an embedded nats-server, and the server of NATS_URL when it is set.
var buses = []struct {
	name string
	new  newBusFunc
}{
	{"memory", func(t *testing.T) bus.Bus { return bustest.NewMemory(t) }},
	{"nats", func(t *testing.T) bus.Bus { return bustest.NewNATS(t) }},
	{"nats-external", func(t *testing.T) bus.Bus { return bustest.NewExternalNATS(t) }},
}

// TestGateway runs every gateway test on every bus:
// TestGateway/<bus>/<test>.
func TestGateway(t *testing.T) {
	tests := []struct {
		name string
		fn   func(*testing.T, newBusFunc)
	}{
		{"StreamSSE", testStreamSSE},
		{"BlockingReturnsStop", testBlockingReturnsStop},
		{"StartEventAsTheReferenceBuildsIt", testStartEventAsTheReferenceBuildsIt},
		{"BadRequests", testBadRequests},
		{"Unauthenticated", testUnauthenticated},
		{"ExceptionBecomesHTTPStatus", testExceptionBecomesHTTPStatus},
		{"TimeoutAndKeepAlive", testTimeoutAndKeepAlive},
		{"ThreadScoping", testThreadScoping},
		{"HITLRoundTrip", testHITLRoundTrip},
		{"DiscoveryCycle", testDiscoveryCycle},
		{"RunDiscoversUntilCancelled", testRunDiscoversUntilCancelled},
		{"OpenAIStreaming", testOpenAIStreaming},
		{"OpenAIStreamEndsWithDone", testOpenAIStreamEndsWithDone},
		{"OpenAINonStreaming", testOpenAINonStreaming},
		{"OpenAIHITLChatFlow", testOpenAIHITLChatFlow},
		{"OpenAIErrors", testOpenAIErrors},
		{"HITLHijack", testHITLHijack},
		{"HITLClosedQuestions", testHITLClosedQuestions},
		{"RateLimit", testRateLimit},
		{"RunsPerUser", testRunsPerUser},
		{"CORS", testCORS},
		{"HITLUnfollowedQuestion", testHITLUnfollowedQuestion},
		{"ClientIdentityHeaders", testClientIdentityHeaders},
		{"OpenAIModelAndUsage", testOpenAIModelAndUsage},
		{"OpenAIModels", testOpenAIModels},
		{"OpenAIListedModelAndLLMUsage", testOpenAIListedModelAndLLMUsage},
		{"OpenAIUnsupportedParameters", testOpenAIUnsupportedParameters},
		{"OpenAIErrorShape", testOpenAIErrorShape},
		{"AnnouncedClassIsServedAtOnce", testAnnouncedClassIsServedAtOnce},
		{"StepErrorsDoNotLeak", testStepErrorsDoNotLeak},
		{"HITLTimeoutAndEndWatched", testHITLTimeoutAndEndWatched},
		{"ChatFlowAgentEndpoint", testChatFlowAgentEndpoint},
		{"AuthFailureLimit", testAuthFailureLimit},
		{"CallerTraceContinues", testCallerTraceContinues},
	}
	for _, b := range buses {
		t.Run(b.name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, b.new) })
			}
		})
	}
}

// env is a gateway in front of a responder agent on one bus.
type env struct {
	bus   bus.Bus
	gw    *gateway.Gateway
	srv   *httptest.Server
	agent *responder
}

type envOption func(*gateway.Config)

// newEnv starts a responder for class "EchoAgent", a gateway that has
// discovered it, and an HTTP test server.
func newEnv(t *testing.T, nb newBusFunc, opts ...envOption) *env {
	t.Helper()
	b := nb(t)
	r := startResponder(t, b, "EchoAgent")
	cfg := gateway.Config{
		Bus:             b,
		Auth:            gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice, tokenBob: bob}),
		DiscoveryWindow: 10 * time.Second,
		// The functional tests send bursts; the limits have tests of their own.
		RateLimit:       -1,
		AuthFailureRate: -1,
	}
	for _, o := range opts {
		o(&cfg)
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gw.Discover(ctxTimeout(t), "EchoAgent"); err != nil {
		t.Fatalf("discover: %v", err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return &env{bus: b, gw: gw, srv: srv, agent: r}
}

// deleteStream removes a stream the test created (on a shared server).
func deleteStream(b bus.Bus, name string) {
	if d, ok := b.(interface {
		DeleteStream(ctx context.Context, name string) error
	}); ok {
		_ = d.DeleteStream(context.Background(), name)
	}
}
