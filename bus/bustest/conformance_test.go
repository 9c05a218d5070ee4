package bustest_test

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/internal/natsserver"
)

// testRetry keeps publishes to a missing stream from retrying for 10 s.
// quiet drops the buses' warnings (redeliveries, dead letters) that the
// suite causes on purpose.
var quiet = slog.New(slog.DiscardHandler)

var testRetry = natsbus.Retry{AckTimeout: 2 * time.Second, Attempts: 2, Pause: 50 * time.Millisecond}

func TestConformance(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		bustest.Run(t, bustest.Harness{
			Features: bustest.AllFeatures(),
			New: func(t *testing.T, o bustest.Options) *bustest.Target {
				clk := memory.NewManualClock(time.Unix(1_700_000_000, 0))
				b := memory.New(memory.Options{Clock: clk, DeadLetters: o.DeadLetters, Logger: quiet})
				return &bustest.Target{Bus: b, Advance: clk.Advance}
			},
		})
	})
	t.Run("nats", func(t *testing.T) {
		s, err := natsserver.Start(natsserver.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown()
		bustest.Run(t, natsHarness(t, s.URL(), "", bustest.AllFeatures()))
	})
	t.Run("nats-external", func(t *testing.T) {
		url := os.Getenv("NATS_URL")
		if url == "" {
			t.Skip("NATS_URL not set: skipping the conformance suite on an external nats-server")
		}
		cfg, err := natsbus.ConfigFromEnv()
		if err != nil {
			t.Fatal(err)
		}
		probe, err := natsbus.Connect(cfg)
		if err != nil {
			t.Fatal(err)
		}
		version := probe.ServerVersion()
		_ = probe.Close()
		t.Logf("external nats-server %s at %s", version, url)
		bustest.Run(t, natsHarness(t, url, cfg.Token, bustest.FeaturesFor(version)))
	})
}

func natsHarness(t *testing.T, url, token string, f bustest.Features) bustest.Harness {
	return bustest.Harness{
		Features: f,
		New: func(t *testing.T, o bustest.Options) *bustest.Target {
			b, err := natsbus.Connect(natsbus.Config{URL: url, Token: token, Name: t.Name(),
				Retry: testRetry, DeadLetters: o.DeadLetters, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			return &bustest.Target{Bus: b}
		},
	}
}
