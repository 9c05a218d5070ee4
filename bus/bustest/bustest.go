package bustest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/internal/natsserver"
)

// Target is one bus under test.
type Target struct {
	Bus bus.Bus
	// Advance moves the bus's clock by d. nil means the bus runs on real
	// time, and the suite lets time pass instead.
	Advance func(d time.Duration)
}

// Options are what the suite asks of a new bus.
type Options struct {
	// DeadLetters is where the bus must republish dead letters: unique per
	// test, so runs on a shared server do not collide.
	DeadLetters bus.DeadLetters
}

// Features is the feature matrix: what a target supports. A missing
// feature skips its subtests with Reason.
type Features struct {
	// NakDelay: Nak(d) with d > 0 defers the redelivery.
	NakDelay bool
	// ConsumerFilterUpdate: a drifted FilterSubject can be reconciled.
	ConsumerFilterUpdate bool
	// Reason explains the missing features, e.g. "nats-server 2.9.10".
	Reason string
}

// AllFeatures is what the in-memory bus and a current nats-server support.
func AllFeatures() Features {
	return Features{NakDelay: true, ConsumerFilterUpdate: true}
}

// Harness describes an implementation for Run.
type Harness struct {
	// New returns a fresh bus; the suite closes it. It is called once per
	// subtest.
	New      func(t *testing.T, o Options) *Target
	Features Features
	// RealTime is the ack wait the suite uses on buses without Advance
	// (0: 300ms). Keep it short: subtests wait for it to pass.
	RealTime time.Duration
}

// Unique returns a short random token for stream and subject names, so
// that tests on a shared server do not collide.
func Unique() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// NewMemory returns an automatic in-memory bus on the wall clock, closed
// when t ends.
func NewMemory(t testing.TB) *memory.Bus {
	t.Helper()
	b := memory.New(memory.Options{})
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// NewNATS starts an embedded nats-server with JetStream (temporary store,
// loopback, random port) and returns a bus connected to it; both end when t
// ends. It needs nothing installed.
func NewNATS(t testing.TB) *natsbus.Bus {
	t.Helper()
	s, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatalf("embedded nats-server: %v", err)
	}
	t.Cleanup(s.Shutdown)
	b, err := natsbus.Connect(natsbus.Config{URL: s.URL(), Name: t.Name()})
	if err != nil {
		t.Fatalf("connect to embedded nats-server: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// NewExternalNATS returns a bus connected to the server named by NATS_URL
// (with the other settings of natsbus.ConfigFromEnv), closed when t ends.
// Without NATS_URL it skips t. Tests on a shared server must use unique
// names (Unique) and delete what they create.
func NewExternalNATS(t testing.TB) *natsbus.Bus {
	t.Helper()
	if os.Getenv("NATS_URL") == "" {
		t.Skip("NATS_URL not set: skipping tests against an external nats-server")
	}
	cfg, err := natsbus.ConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Name = t.Name()
	b, err := natsbus.Connect(cfg)
	if err != nil {
		t.Fatalf("NATS_URL=%s: %v", cfg.URL, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// waitTimeout bounds every wait for something that must happen.
const waitTimeout = 10 * time.Second

// recv waits for a value from ch or fails t.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("timed out after %s waiting for %s", waitTimeout, what)
		var zero T
		return zero
	}
}

// none asserts that nothing arrives on ch within d.
func none[T any](t *testing.T, ch <-chan T, d time.Duration, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected %s: %v", what, v)
	case <-time.After(d):
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func isNotFound(err error) bool { return errors.Is(err, bus.ErrNotFound) }

// FeaturesFor returns the features a nats-server of the given version
// ("2.9.10") supports. Everything the suite covers works on 2.9.10 (the CI
// server), including filter updates and Nak delays; older servers are
// assumed to lack filter updates. The one 2.10+ feature the bus uses,
// a reason on Term (2.10.4), is not observable here: on older servers the
// NATS bus sends a plain Term and only logs the reason.
func FeaturesFor(version string) Features {
	f := AllFeatures()
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil || major < 2 || (major == 2 && minor < 9) {
		f.ConsumerFilterUpdate = false
		f.Reason = "nats-server " + version + " (the suite is verified on 2.9.10 and later)"
	}
	return f
}

// EachNATS runs fn as the subtest "embedded" on a fresh embedded
// nats-server (NewNATS) and as "external" on the server of NATS_URL
// (NewExternalNATS, skipped without it).
func EachNATS(t *testing.T, fn func(t *testing.T, b *natsbus.Bus)) {
	t.Helper()
	t.Run("embedded", func(t *testing.T) { fn(t, NewNATS(t)) })
	t.Run("external", func(t *testing.T) { fn(t, NewExternalNATS(t)) })
}
