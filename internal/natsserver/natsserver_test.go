package natsserver_test

import (
	"os"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/saap-go/agent/internal/natsserver"
)

func TestStartServesJetStreamOnLoopback(t *testing.T) {
	defer goleak.VerifyNone(t)
	s, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.Dir()
	if !strings.HasPrefix(s.URL(), "nats://127.0.0.1:") {
		t.Fatalf("URL %q is not loopback", s.URL())
	}
	nc, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	ctx := t.Context()
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatalf("JetStream not enabled: %v", err)
	}
	nc.Close()
	s.Shutdown()
	s.Shutdown() // idempotent
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temporary store dir %q not removed: %v", dir, err)
	}
}

func TestGivenDirSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := natsserver.Start(natsserver.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "keep", Subjects: []string{"keep.>"}}); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	s.Shutdown()

	s, err = natsserver.Start(natsserver.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	nc, err = nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ = jetstream.New(nc)
	if _, err := js.Stream(t.Context(), "keep"); err != nil {
		t.Fatalf("stream lost across restart: %v", err)
	}
}

func TestTokenRequired(t *testing.T) {
	s, err := natsserver.Start(natsserver.Options{Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if nc, err := nats.Connect(s.URL()); err == nil {
		nc.Close()
		t.Fatal("connected without the token")
	}
	nc, err := nats.Connect(s.URL(), nats.Token("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
}
