package natsbus_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/internal/natsserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.DiscardHandler)

func server(t *testing.T, o natsserver.Options) *natsserver.Server {
	t.Helper()
	s, err := natsserver.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func connect(t *testing.T, cfg natsbus.Config) *natsbus.Bus {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	b, err := natsbus.Connect(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestAgentStreamMatchesReferenceOnServer(t *testing.T) {
	ctx := t.Context()
	b := connect(t, natsbus.Config{URL: server(t, natsserver.Options{}).URL()})
	if err := b.EnsureStream(ctx, bus.AgentStream("RAGAgent")); err != nil {
		t.Fatal(err)
	}
	s, err := b.JetStream().Stream(ctx, "agent_RAGAgent_stream")
	if err != nil {
		t.Fatal(err)
	}
	c := s.CachedInfo().Config
	if len(c.Subjects) != 1 || c.Subjects[0] != "agent.RAGAgent.*.*.*.*.*.*.*" || c.Storage != jetstream.FileStorage ||
		c.Retention != jetstream.LimitsPolicy || c.MaxMsgs != 10_000_000 || c.Discard != jetstream.DiscardOld ||
		c.MaxAge != 30*24*time.Hour || c.Duplicates != time.Minute || c.Replicas != 1 || c.MaxBytes != -1 {
		t.Fatalf("stream config %+v", c)
	}
}

func TestRunnerConsumerCreatedAndReconciled(t *testing.T) {
	ctx := t.Context()
	b := connect(t, natsbus.Config{URL: server(t, natsserver.Options{}).URL()})
	if err := b.EnsureStream(ctx, bus.AgentStream("X")); err != nil {
		t.Fatal(err)
	}
	// A drifted consumer left by an older deployment.
	if _, err := b.JetStream().CreateConsumer(ctx, "agent_X_stream", jetstream.ConsumerConfig{
		Durable: "agent_runner_X", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 5 * time.Second, MaxDeliver: -1,
		FilterSubject: "agent.X.*.*.*.*.control_event.*.*",
	}); err != nil {
		t.Fatal(err)
	}
	c, err := b.Consume(ctx, bus.RunnerConsumer("X"), func(d bus.Delivery) { _ = d.Ack(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	jc, err := b.JetStream().Consumer(ctx, "agent_X_stream", "agent_runner_X")
	if err != nil {
		t.Fatal(err)
	}
	got := jc.CachedInfo().Config
	if got.AckWait != 30*time.Second || got.MaxDeliver != 5 || got.AckPolicy != jetstream.AckExplicitPolicy ||
		got.DeliverPolicy != jetstream.DeliverAllPolicy || got.FilterSubject != "agent.X.*.*.*.*.control_event.*.*" {
		t.Fatalf("consumer config after reconcile %+v", got)
	}
}

func TestNextMsgIsOneRoundTrip(t *testing.T) {
	ctx := t.Context()
	b := connect(t, natsbus.Config{URL: server(t, natsserver.Options{}).URL()})
	if err := b.EnsureStream(ctx, bus.StreamConfig{Name: "h", Subjects: []string{"h.>"}}); err != nil {
		t.Fatal(err)
	}
	for i, s := range []string{"h.r1.a", "h.r2.a", "h.r1.b"} {
		h := bus.Header{}
		h.Set("N", string(rune('0'+i)))
		if _, err := b.PublishStream(ctx, &bus.Msg{Subject: s, Header: h, Data: []byte(s)}, ""); err != nil {
			t.Fatal(err)
		}
	}
	before := b.Conn().Stats()
	m, err := b.NextMsg(ctx, "h", "h.r1.*", 2)
	if err != nil {
		t.Fatal(err)
	}
	after := b.Conn().Stats()
	if m.Seq != 3 || m.Subject != "h.r1.b" || m.Header.Get("N") != "2" || string(m.Data) != "h.r1.b" {
		t.Fatalf("NextMsg = %+v", m)
	}
	if sent, got := after.OutMsgs-before.OutMsgs, after.InMsgs-before.InMsgs; sent != 1 || got != 1 {
		t.Fatalf("NextMsg sent %d and received %d messages, want one round trip", sent, got)
	}
}

// signal is a slog handler that reports when a message is logged.
type signal struct {
	slog.Handler
	msg string
	ch  chan struct{}
}

func (s signal) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, s.msg) {
		select {
		case s.ch <- struct{}{}:
		default:
		}
	}
	return nil
}

func (s signal) Enabled(context.Context, slog.Level) bool { return true }

func TestPublishStreamRetriesUntilStreamExists(t *testing.T) {
	ctx := t.Context()
	url := server(t, natsserver.Options{}).URL()
	retrying := make(chan struct{}, 1)
	b := connect(t, natsbus.Config{URL: url, Logger: slog.New(signal{slog.DiscardHandler, "retrying", retrying}),
		Retry: natsbus.Retry{AckTimeout: time.Second, Attempts: 1000, Pause: 10 * time.Millisecond}})
	type result struct {
		ack bus.PubAck
		err error
	}
	done := make(chan result, 1)
	go func() {
		ack, err := b.PublishStream(ctx, &bus.Msg{Subject: "late.x", Data: []byte("1")}, "m1")
		done <- result{ack, err}
	}()
	select {
	case <-retrying:
	case <-time.After(10 * time.Second):
		t.Fatal("no retry logged")
	}
	if err := b.EnsureStream(ctx, bus.StreamConfig{Name: "late", Subjects: []string{"late.>"}}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.ack.Seq != 1 || r.ack.Stream != "late" {
		t.Fatalf("publish across retries: %+v", r)
	}

	// Bounded attempts: the error says what failed.
	b2 := connect(t, natsbus.Config{URL: url, Retry: natsbus.Retry{AckTimeout: time.Second, Attempts: 2, Pause: time.Millisecond}})
	_, err := b2.PublishStream(ctx, &bus.Msg{Subject: "nowhere.x"}, "")
	if !errors.Is(err, bus.ErrNoResponders) || !strings.Contains(err.Error(), "nowhere.x") {
		t.Fatalf("after 2 attempts: %v", err)
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestReconnectResumesConsumer(t *testing.T) {
	ctx := t.Context()
	dir, port := t.TempDir(), freePort(t)
	s, err := natsserver.Start(natsserver.Options{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	b := connect(t, natsbus.Config{URL: s.URL(), ReconnectWait: 50 * time.Millisecond,
		Retry: natsbus.Retry{AckTimeout: time.Second, Attempts: 200, Pause: 50 * time.Millisecond}})
	if err := b.EnsureStream(ctx, bus.StreamConfig{Name: "rc", Subjects: []string{"rc.>"}}); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	c, err := b.Consume(ctx, bus.ConsumerConfig{Stream: "rc", Durable: "d"}, func(d bus.Delivery) {
		got <- string(d.Msg().Data)
		_ = d.Ack(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if _, err := b.PublishStream(ctx, &bus.Msg{Subject: "rc.x", Data: []byte("before")}, "1"); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != "before" {
		t.Fatalf("got %q", v)
	}
	s.Shutdown()
	s, err = natsserver.Start(natsserver.Options{Dir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if _, err := b.PublishStream(ctx, &bus.Msg{Subject: "rc.x", Data: []byte("after")}, "2"); err != nil {
		t.Fatalf("publish after the restart: %v", err)
	}
	select {
	case v := <-got:
		if v != "after" {
			t.Fatalf("got %q", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("consumer did not resume after the server restart")
	}
	_ = c.Stop()
	_ = b.Close()
}

func TestConfigFromEnv(t *testing.T) {
	for _, k := range []string{natsbus.EnvURL, natsbus.EnvEndpoint, natsbus.EnvToken, natsbus.EnvCreds,
		natsbus.EnvNKeySeed, natsbus.EnvTLSCert, natsbus.EnvTLSKey, natsbus.EnvTLSCA} {
		t.Setenv(k, "")
	}
	t.Setenv(natsbus.EnvEndpoint, "nats://ref:4222")
	t.Setenv(natsbus.EnvToken, "tok")
	c, err := natsbus.ConfigFromEnv()
	if err != nil || c.URL != "nats://ref:4222" || c.Token != "tok" {
		t.Fatalf("NATS_ENDPOINT fallback: %+v %v", c, err)
	}
	t.Setenv(natsbus.EnvURL, "nats://primary:4222")
	if c, _ := natsbus.ConfigFromEnv(); c.URL != "nats://primary:4222" {
		t.Fatalf("NATS_URL must win: %q", c.URL)
	}
	cert := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(cert, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(natsbus.EnvTLSCert, cert)
	t.Setenv(natsbus.EnvCreds, "/nonexistent/user.creds")
	_, err = natsbus.ConfigFromEnv()
	if err == nil || !strings.Contains(err.Error(), natsbus.EnvCreds) || !strings.Contains(err.Error(), natsbus.EnvTLSKey) {
		t.Fatalf("bad files: %v; want errors naming %s and %s", err, natsbus.EnvCreds, natsbus.EnvTLSKey)
	}
}

func TestTokenAuth(t *testing.T) {
	s := server(t, natsserver.Options{Token: "s3cret"})
	if _, err := natsbus.Connect(natsbus.Config{URL: s.URL(), Logger: quiet}); err == nil {
		t.Fatal("connected without the token")
	}
	b := connect(t, natsbus.Config{URL: s.URL(), Token: "s3cret"})
	if b.ServerVersion() == "" {
		t.Fatal("no server version")
	}
}

func TestCloseStopsEverything(t *testing.T) {
	ctx := t.Context()
	s := server(t, natsserver.Options{})
	b, err := natsbus.Connect(natsbus.Config{URL: s.URL(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	_ = b.EnsureStream(ctx, bus.StreamConfig{Name: "c", Subjects: []string{"c.>"}})
	var mu sync.Mutex
	calls := 0
	if _, err := b.Consume(ctx, bus.ConsumerConfig{Stream: "c", Durable: "d"}, func(bus.Delivery) { mu.Lock(); calls++; mu.Unlock() }); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Subscribe(ctx, "c.>", "", func(*bus.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if b.Conn().IsConnected() {
		t.Fatal("owned connection left open")
	}
	if _, err := b.PublishStream(ctx, &bus.Msg{Subject: "c.x"}, ""); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("publish after Close: %v", err)
	}
}

func TestBadInputRefusedBeforeIO(t *testing.T) {
	ctx := t.Context()
	b := connect(t, natsbus.Config{URL: server(t, natsserver.Options{MaxPayload: 4096}).URL()})
	if b.MaxPayload() != 4096 {
		t.Fatalf("MaxPayload = %d, want the server's 4096", b.MaxPayload())
	}
	before := b.Conn().Stats()
	calls := []func() error{
		func() error { return b.Publish(ctx, &bus.Msg{Subject: "a..b"}) },
		func() error { _, err := b.PublishStream(ctx, &bus.Msg{Subject: "a b"}, "x"); return err },
		func() error { _, err := b.Request(ctx, &bus.Msg{Subject: ""}); return err },
		func() error { return b.Publish(ctx, &bus.Msg{Subject: "ok", Data: make([]byte, 4097)}) },
		func() error {
			_, err := b.PublishStream(ctx, &bus.Msg{Subject: "ok", Data: make([]byte, 5000)}, "")
			return err
		},
		func() error { _, err := b.NextMsg(ctx, "s", "a.>.b", 1); return err },
	}
	for i, call := range calls {
		err := call()
		if !errors.Is(err, bus.ErrInvalidSubject) && !errors.Is(err, bus.ErrPayloadTooLarge) {
			t.Errorf("call %d: %v, want ErrInvalidSubject or ErrPayloadTooLarge", i, err)
		}
		if errors.Is(err, bus.ErrPayloadTooLarge) && !strings.Contains(err.Error(), "4096") {
			t.Errorf("call %d: %v does not name the limit", i, err)
		}
	}
	if after := b.Conn().Stats(); after.OutMsgs != before.OutMsgs || after.OutBytes != before.OutBytes {
		t.Fatalf("bad input reached the connection: %+v → %+v", before, after)
	}
}

// streamOfN connects to a new server whose stream "s" holds n messages on
// "s.x", with data "0", "1" and so on.
func streamOfN(t *testing.T, n int) *natsbus.Bus {
	t.Helper()
	b := connect(t, natsbus.Config{URL: server(t, natsserver.Options{}).URL()})
	if err := b.EnsureStream(t.Context(), bus.StreamConfig{Name: "s", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := b.PublishStream(t.Context(), &bus.Msg{Subject: "s.x", Data: []byte{byte('0' + i)}}, ""); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// stopWhileHandling stops c while its handler waits for release, and lets
// the handler go once Stop is waiting for it.
func stopWhileHandling(c bus.Consumer, release chan struct{}) {
	stopped := make(chan struct{})
	go func() { _ = c.Stop(); close(stopped) }()
	for !natsbus.Stopping(c) {
		runtime.Gosched()
	}
	close(release)
	<-stopped
}

// Stop naks the messages the client pulled but never handed to the handler,
// so a second consumer gets them at once, not after AckWait (one minute
// here, well beyond the test's wait), and only once its subscription is
// gone, so that none comes back to it and spends a delivery.
func TestStopNaksBufferedMessages(t *testing.T) {
	ctx := t.Context()
	const n = 5
	b := streamOfN(t, n)
	cfg := bus.ConsumerConfig{Stream: "s", Durable: "d", AckWait: time.Minute}
	got, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	seen := map[string]bool{} // by both consumers
	var once sync.Once
	first, err := b.Consume(ctx, cfg, func(d bus.Delivery) {
		once.Do(func() { close(got); <-release })
		mu.Lock()
		seen[string(d.Msg().Data)] = true
		mu.Unlock()
		_ = d.Ack(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	<-got
	// Wait until the server has delivered all n to the client's buffer.
	for {
		info, err := b.JetStream().Consumer(ctx, "s", "d")
		if err != nil {
			t.Fatal(err)
		}
		if ci := info.CachedInfo(); ci.NumAckPending == n {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	stopWhileHandling(first, release)

	mu.Lock()
	handed := len(seen)
	mu.Unlock()
	if handed != 1 {
		t.Fatalf("the first consumer handled %d messages, want only the one in flight when Stop began", handed)
	}
	all := make(chan struct{})
	second, err := b.Consume(ctx, cfg, func(d bus.Delivery) {
		mu.Lock()
		defer mu.Unlock()
		if seen[string(d.Msg().Data)] {
			t.Errorf("message %s delivered again after its ack", d.Msg().Data)
		}
		// Its first delivery was into the first consumer's buffer: a
		// stopping consumer that gave it back while its pull was open got
		// it again, spending deliveries (MaxDeliver) on nothing.
		if d.NumDelivered() != 2 {
			t.Errorf("message %s is at delivery %d here, want 2", d.Msg().Data, d.NumDelivered())
		}
		seen[string(d.Msg().Data)] = true
		_ = d.Ack(ctx)
		if len(seen) == n {
			close(all)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = second.Stop() }()
	select {
	case <-all:
	case <-time.After(15 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d messages handled; the rest wait for AckWait", len(seen), n)
	}
}

// A message pulled at its last delivery and never handed over when the
// consumer stops cannot be given back with a nak (the server delivers it no
// more than MaxDeliver times): it is dead-lettered, with the reason.
func TestStopDeadLettersBufferedLastDeliveries(t *testing.T) {
	ctx := t.Context()
	const n = 4
	b := streamOfN(t, n)
	letters := make(chan *bus.Msg, n)
	dl, err := b.Subscribe(ctx, bus.DefaultDeadLetters().Subject("s.>"), "", func(m *bus.Msg) { letters <- m })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dl.Unsubscribe() }()
	cfg := bus.ConsumerConfig{Stream: "s", Durable: "d", AckWait: time.Minute, MaxDeliver: 2}
	info := func() *jetstream.ConsumerInfo {
		c, err := b.JetStream().Consumer(ctx, "s", "d")
		if err != nil {
			t.Fatal(err)
		}
		return c.CachedInfo()
	}
	// poll waits for the server's counts, which have no notification.
	poll := func(what string, done func(*jetstream.ConsumerInfo) bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; {
			ci := info()
			if done(ci) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d ack pending, %d redelivered, %d pending", what, ci.NumAckPending, ci.NumRedelivered, ci.NumPending)
			}
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}

	// A first consumer gives every message back for later: its second
	// delivery, the last, comes to the consumer started next.
	firsts := make(chan struct{}, n)
	a, err := b.Consume(ctx, cfg, func(d bus.Delivery) {
		if d.NumDelivered() == 1 {
			_ = d.Nak(300 * time.Millisecond)
			firsts <- struct{}{}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		<-firsts
	}
	_ = a.Stop()

	got, release := make(chan string, 1), make(chan struct{})
	var once sync.Once
	c, err := b.Consume(ctx, cfg, func(d bus.Delivery) {
		once.Do(func() { got <- string(d.Msg().Data); <-release })
		_ = d.Ack(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	handled := <-got
	poll("the last deliveries were not all sent", func(ci *jetstream.ConsumerInfo) bool {
		return ci.NumAckPending == n && ci.NumRedelivered == n && ci.NumPending == 0
	})
	stopWhileHandling(c, release)

	// A delivery the server counted as sent can still be on its way when
	// the subscription goes, and is then dropped by the server: it waits
	// for its AckWait, beyond this consumer's reach. Every other message
	// is handled or dead-lettered.
	lettered := map[string]bool{}
	var stranded uint64
	poll("messages neither handled, dead-lettered nor left with the server", func(ci *jetstream.ConsumerInfo) bool {
		for {
			select {
			case m := <-letters:
				if reason := m.Header.Get(bus.HeaderDeadLetterReason); !strings.Contains(reason, "last delivery (2 of MaxDeliver 2)") {
					t.Errorf("dead letter of %s: reason %q", m.Data, reason)
				}
				lettered[string(m.Data)] = true
				continue
			default:
			}
			break
		}
		stranded = uint64(ci.NumAckPending)
		return uint64(len(lettered))+1+stranded == n
	})
	if lettered[handled] {
		t.Errorf("message %s was handled and dead-lettered", handled)
	}
	if len(lettered) == 0 {
		t.Fatalf("no dead letter: of %d messages at their last delivery behind the handler, %d were left with the server", n-1, stranded)
	}
}

// doneLater is a context that is done but says so only from its second
// Err call on: Subscribe's first check passes, as when a program starts
// shutting down while Subscribe waits for the server.
type doneLater struct {
	context.Context
	calls atomic.Int32
	done  chan struct{}
}

func (c *doneLater) Done() <-chan struct{} { return c.done }

func (c *doneLater) Err() error {
	if c.calls.Add(1) == 1 {
		return nil
	}
	return context.Canceled
}

// A subscription whose caller gave up while it waited for the server is no
// reason for a warning: a clean exit logged one.
func TestSubscribeDuringShutdownDoesNotWarn(t *testing.T) {
	var logged strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(p)
	}), nil))
	b := connect(t, natsbus.Config{URL: server(t, natsserver.Options{}).URL(), Logger: log})
	ctx := &doneLater{Context: context.Background(), done: make(chan struct{})}
	close(ctx.done)
	sub, err := b.Subscribe(ctx, "a.b", "", func(*bus.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	_ = sub.Unsubscribe()
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logged.String(), "not confirmed") {
		t.Errorf("logged at shutdown: %s", logged.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A consumer whose stream was deleted without the server's notice reaching
// the open pull request (it was being renewed) is found gone by the probe a
// missed heartbeat starts, and reported lost; while it exists, the probe
// reports nothing.
func TestConsumerGoneWithoutNoticeReportedLost(t *testing.T) {
	ctx := t.Context()
	b := connect(t, natsbus.Config{URL: server(t, natsserver.Options{}).URL()})
	if err := b.EnsureStream(ctx, bus.AgentStream("Gone")); err != nil {
		t.Fatal(err)
	}
	c, err := b.Consume(ctx, bus.RunnerConsumer("Gone"), func(d bus.Delivery) { _ = d.Ack(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	lost := c.(bus.LossReporter).Lost()
	natsbus.Probe(c)
	select {
	case err := <-lost:
		t.Fatalf("reported lost while it exists: %v", err)
	default:
	}
	if err := b.JetStream().DeleteStream(ctx, "agent_Gone_stream"); err != nil {
		t.Fatal(err)
	}
	natsbus.Probe(c)
	select {
	case err := <-lost:
		if !errors.Is(err, bus.ErrConsumerLost) {
			t.Fatalf("lost with %v, want ErrConsumerLost", err)
		}
	default:
		t.Fatal("the deleted consumer was not reported lost")
	}
}
