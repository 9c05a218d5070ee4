package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/internal/natsserver"
)

// healthOf returns the health endpoint's status and JetStream reason.
func healthOf(t *testing.T, srv *httptest.Server) (int, string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + "/api/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body["jetstream"]
}

// fill publishes to a new file stream until JetStream refuses a write.
func fill(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	ctx := ctxTimeout(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FILL", Subjects: []string{"fill.>"}}); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 64<<10)
	for range 128 {
		if _, err := js.Publish(ctx, "fill.x", data); err != nil {
			return
		}
	}
	t.Fatal("8 MiB stored; the store was to be full by then")
}

// TestHealthReportsJetStreamStorage: the health endpoint answers 503,
// naming storage, when JetStream can no longer store.
func TestHealthReportsJetStreamStorage(t *testing.T) {
	start := func(t *testing.T, o natsserver.Options, kv bool) (*natsserver.Server, *natsbus.Bus, *httptest.Server) {
		s, err := natsserver.Start(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Shutdown)
		b, err := natsbus.Connect(natsbus.Config{URL: s.URL(), Name: t.Name()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		cfg := gateway.Config{Bus: b, RateLimit: -1, DiscoveryPeriod: time.Hour,
			Auth: gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice})}
		if kv {
			if cfg.Threads, err = gateway.NewKVStore(ctxTimeout(t), b.JetStream(), gateway.KVConfig{}); err != nil {
				t.Fatal(err)
			}
		}
		gw, err := gateway.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		gw.NoHealthCache()
		srv := httptest.NewServer(gw)
		t.Cleanup(srv.Close)
		if code, why := healthOf(t, srv); code != http.StatusOK {
			t.Fatalf("health before: %d %q", code, why)
		}
		return s, b, srv
	}
	t.Run("server storage limit", func(t *testing.T) {
		// No client API reports the server's limit; the KV store's probe
		// write finds it.
		_, b, srv := start(t, natsserver.Options{MaxStore: 1 << 20}, true)
		fill(t, b.JetStream())
		if code, why := healthOf(t, srv); code != http.StatusServiceUnavailable || !strings.Contains(why, "storage full") {
			t.Errorf("health with the server's store full: %d %q, want 503 naming storage", code, why)
		}
		// Space freed: healthy again.
		if err := b.JetStream().DeleteStream(ctxTimeout(t), "FILL"); err != nil {
			t.Fatal(err)
		}
		if code, why := healthOf(t, srv); code != http.StatusOK {
			t.Errorf("health after freeing the store: %d %q, want 200", code, why)
		}
	})
	t.Run("account storage limit", func(t *testing.T) {
		// Without a KV store, so without the probe: the account's
		// figures tell. Full: less than a message of the bus's largest
		// size (1 MiB) is left.
		s, b, srv := start(t, natsserver.Options{}, false)
		if err := s.Server().GlobalAccount().UpdateJetStreamLimits(map[string]server.JetStreamAccountLimits{
			"": {MaxMemory: -1, MaxStore: 4 << 20, MaxStreams: -1, MaxConsumers: -1, MaxAckPending: -1},
		}); err != nil {
			t.Fatal(err)
		}
		fill(t, b.JetStream())
		if code, why := healthOf(t, srv); code != http.StatusServiceUnavailable || !strings.Contains(why, "storage full") {
			t.Errorf("health with the account's store full: %d %q, want 503 naming storage", code, why)
		}
	})
	t.Run("jetstream disabled", func(t *testing.T) {
		// What a server does when its disk fills up.
		s, _, srv := start(t, natsserver.Options{}, true)
		if err := s.Server().DisableJetStream(); err != nil {
			t.Fatal(err)
		}
		if code, why := healthOf(t, srv); code != http.StatusServiceUnavailable || !strings.Contains(why, "jetstream unavailable") {
			t.Errorf("health without JetStream: %d %q, want 503", code, why)
		}
	})
}
