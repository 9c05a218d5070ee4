package agent_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saap-go/agent/store"

	"github.com/nats-io/nats.go/jetstream"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store/natskv"
	redisstore "github.com/saap-go/agent/store/redis"
	"github.com/saap-go/agent/topic"
)

// Test events of the linear agent.
type (
	Asked struct {
		event.ControlEvent
		Text string `json:"text"`
	}
	Answered struct {
		event.ControlEvent
		Text string `json:"text"`
	}
)

func init() {
	event.MustRegister[Asked]()
	event.MustRegister[Answered]()
}

// waitLong bounds every wait of a test: generous, since the machine is
// shared; a healthy run takes milliseconds.
const waitLong = 60 * time.Second

// uniqueClass returns a class name no other test (or test run on the shared
// external server) uses.
func uniqueClass(prefix string) string {
	return prefix + "_" + event.NewID()[12:]
}

// target is one NATS (and optional Redis) setup a suite runs against.
type target struct {
	name     string
	natsURL  string
	redisURL string
	external bool
}

// targets returns the embedded server (always) and the external servers
// named by NATS_URL and REDIS_URL (when set).
func targets(t *testing.T) []target {
	t.Helper()
	ts := []target{{name: "embedded", natsURL: embedded(t).URL()}}
	if u := os.Getenv("NATS_URL"); u != "" {
		ts = append(ts, target{name: "nats-external", natsURL: u, external: true})
	}
	if r := os.Getenv("REDIS_URL"); r != "" {
		ts = append(ts, target{name: "redis", natsURL: ts[0].natsURL, redisURL: r})
	}
	return ts
}

// eachTarget runs f as a subtest per target.
func eachTarget(t *testing.T, f func(t *testing.T, tg target)) {
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) { f(t, tg) })
	}
}

// embedded starts a hermetic nats-server for the test.
func embedded(t testing.TB) *natsserver.Server {
	t.Helper()
	s, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// client connects a bus for the test's own publishing and watching.
func client(t testing.TB, url string) *natsbus.Bus {
	t.Helper()
	b, err := natsbus.Connect(natsbus.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// storeFor returns the state store options for tg: Redis with a unique
// prefix, or a KV store in unique buckets that are deleted afterwards.
func storeFor(t testing.TB, tg target, c *natsbus.Bus) agent.Option {
	t.Helper()
	return agent.WithStore(newStore(t, tg, c))
}

func newStore(t testing.TB, tg target, c *natsbus.Bus) store.Store {
	t.Helper()
	ctx := context.Background()
	if tg.redisURL != "" {
		s, err := redisstore.Open(ctx, tg.redisURL, redisstore.Config{Prefix: "saaptest:" + event.NewID() + ":", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	bucket := "saaptest_" + event.NewID()
	s, err := natskv.New(ctx, c.JetStream(), natskv.Config{Bucket: bucket, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.JetStream().DeleteKeyValue(context.Background(), bucket)
		_ = c.JetStream().DeleteKeyValue(context.Background(), bucket+natskv.ThreadBucketSuffix)
	})
	return s
}

// deadLetterFeed delivers the dead letters published from now on, until the
// test ends.
func deadLetterFeed(t testing.TB, c *natsbus.Bus) <-chan *bus.Msg {
	t.Helper()
	letters := make(chan *bus.Msg, 1)
	sub, err := c.Subscribe(context.Background(), bus.DefaultDeadLetters().Subject(">"), "", func(m *bus.Msg) { letters <- m })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return letters
}

// dropStream deletes the class's stream (and its consumers) when the test
// ends, so the shared external server does not fill up.
func dropStream(t testing.TB, c *natsbus.Bus, class string) {
	t.Cleanup(func() { _ = c.DeleteStream(context.Background(), topic.StreamName(class)) })
}

// running is a runner started by startRunner.
type running struct {
	*agent.Runner
	cancel context.CancelFunc
	errc   chan error
	once   sync.Once
	err    error
}

// startRunner runs a until the test ends and returns once it is ready.
func startRunner(t testing.TB, a agent.Agent, opts ...agent.Option) *running {
	t.Helper()
	r, err := agent.New(a, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rr := &running{Runner: r, cancel: cancel, errc: make(chan error, 1)}
	go func() { rr.errc <- r.Run(ctx) }()
	select {
	case <-r.Ready():
	case err := <-rr.errc:
		cancel()
		t.Fatalf("runner stopped before it was ready: %v", err)
	case <-time.After(waitLong):
		cancel()
		t.Fatal("runner not ready")
	}
	t.Cleanup(func() {
		if err := rr.stop(); err != nil {
			t.Errorf("Run returned %v", err)
		}
	})
	return rr
}

// stop cancels the runner and returns what Run returned.
func (r *running) stop() error {
	r.once.Do(func() {
		r.cancel()
		r.err = <-r.errc
	})
	return r.err
}

// newRun returns the topic of a fresh run of class, with ObjectId ids.
func newRun(class, agentID string) topic.Agent {
	return topic.Agent{
		Class: class, ID: agentID,
		Thread: event.NewID(), Display: event.NewID(), Run: event.NewID(),
	}
}

// publish sends ev into the run as a producer of the platform would:
// control events to the stream (msg id = event id), display events to core,
// both for events that are both.
func publish(t testing.TB, b bus.Bus, run topic.Agent, ev event.Event, h bus.Header) {
	t.Helper()
	if err := publishErr(context.Background(), b, run, ev, h); err != nil {
		t.Fatal(err)
	}
}

func publishErr(ctx context.Context, b bus.Bus, run topic.Agent, ev event.Event, h bus.Header) error {
	event.Stamp(ev)
	data, err := event.Marshal(ev)
	if err != nil {
		return err
	}
	id := ev.EventBase().EventID
	if event.IsControl(ev) {
		s, err := run.Event(topic.Control, event.Name(ev), id).Subject()
		if err != nil {
			return err
		}
		ack, err := b.PublishStream(ctx, &bus.Msg{Subject: s, Header: h.Clone(), Data: data}, id)
		if err != nil {
			return err
		}
		published(run.Class, ack.Seq)
	}
	if event.IsDisplay(ev) {
		s, err := run.Event(topic.Display, event.Name(ev), id).Subject()
		if err != nil {
			return err
		}
		if err := b.Publish(ctx, &bus.Msg{Subject: s, Header: h.Clone(), Data: data}); err != nil {
			return err
		}
	}
	return nil
}

var (
	lastMu  sync.Mutex
	lastSeq = map[string]uint64{} // by class: the highest stream sequence the test published
)

func published(class string, seq uint64) {
	lastMu.Lock()
	lastSeq[class] = max(lastSeq[class], seq)
	lastMu.Unlock()
}

func lastPublished(class string) uint64 {
	lastMu.Lock()
	defer lastMu.Unlock()
	return lastSeq[class]
}

// userMessage is a valid UserMessageEvent.
func userMessage(text string) *event.UserMessageEvent {
	return &event.UserMessageEvent{
		User:     &event.UserIdentity{ID: "u1", Name: "Ursula", Email: "u@example.com", Roles: []string{"user"}},
		Messages: []event.ChatMessage{event.Text(event.RoleUser, text)},
	}
}

// watcher collects the display events of a class, per run.
type watcher struct {
	mu     sync.Mutex
	events map[string][]event.Event // by run id
	wake   chan struct{}
}

func watch(t testing.TB, b bus.Bus, class string) *watcher {
	t.Helper()
	w := &watcher{events: map[string][]event.Event{}, wake: make(chan struct{}, 1)}
	pattern := "agent." + class + ".*.*.*.*.display_event.*.*"
	sub, err := b.Subscribe(context.Background(), pattern, "", func(m *bus.Msg) {
		tp, err := topic.ParseAgent(m.Subject)
		if err != nil {
			return
		}
		ev, err := event.Unmarshal(m.Data)
		if err != nil {
			return
		}
		w.mu.Lock()
		w.events[tp.Run] = append(w.events[tp.Run], ev)
		w.mu.Unlock()
		select {
		case w.wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return w
}

// of returns the display events seen for run so far.
func (w *watcher) of(run string) []event.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]event.Event(nil), w.events[run]...)
}

// until waits until cond holds for the events of run, and returns them.
func (w *watcher) until(t testing.TB, run string, what string, cond func([]event.Event) bool) []event.Event {
	t.Helper()
	deadline := time.NewTimer(waitLong)
	defer deadline.Stop()
	for {
		evs := w.of(run)
		if cond(evs) {
			return evs
		}
		select {
		case <-w.wake:
		case <-deadline.C:
			t.Fatalf("run %s: %s did not happen; display events: %s", run, what, names(evs))
		}
	}
}

// terminal waits for the run's StopEvent or ExceptionEvent.
func (w *watcher) terminal(t testing.TB, run string) event.Event {
	t.Helper()
	evs := w.until(t, run, "a terminal event", func(evs []event.Event) bool { return findTerminal(evs) != nil })
	return findTerminal(evs)
}

func findTerminal(evs []event.Event) event.Event {
	for _, e := range evs {
		if event.IsStop(e) || event.IsException(e) {
			return e
		}
	}
	return nil
}

func names(evs []event.Event) string {
	s := make([]string, len(evs))
	for i, e := range evs {
		s[i] = event.Name(e)
		if x, ok := e.(*event.ExceptionEvent); ok {
			s[i] += fmt.Sprintf("(%q)", x.Message)
		}
	}
	return "[" + strings.Join(s, " ") + "]"
}

func count(evs []event.Event, name string) int {
	n := 0
	for _, e := range evs {
		if event.Name(e) == name {
			n++
		}
	}
	return n
}

// linear is a three-step agent: UserMessageEvent → Asked → Answered → Stop,
// with a ChunkEvent streamed by the first step.
type linear struct {
	class string
}

func (l *linear) Class() string { return l.class }

func (l *linear) Steps() []*step.Step {
	return []*step.Step{step.New(l.Ask), step.New(l.Answer), step.New(l.Finish)}
}

func (l *linear) Ask(ctx step.Context, m *event.UserMessageEvent) (*Asked, error) {
	if err := ctx.Emit(&event.ChunkEvent{Content: "thinking"}); err != nil {
		return nil, err
	}
	text := ""
	if len(m.Messages) > 0 {
		text = m.Messages[0].Content()
	}
	return &Asked{Text: text}, nil
}

func (l *linear) Answer(ctx step.Context, a *Asked) (*Answered, error) {
	return &Answered{Text: strings.ToUpper(a.Text)}, nil
}

func (l *linear) Finish(ctx step.Context, a *Answered) (*event.StopEvent, error) {
	return &event.StopEvent{}, nil
}

// consumerNames lists the consumers of the class's stream.
func consumerNames(t testing.TB, c *natsbus.Bus, class string) []string {
	t.Helper()
	s, err := c.JetStream().Stream(context.Background(), topic.StreamName(class))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	l := s.ConsumerNames(context.Background())
	for n := range l.Name() {
		out = append(out, n)
	}
	if err := l.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		t.Fatal(err)
	}
	return out
}

// waitAcked waits until the class's runner consumer has delivered every
// event and got an acknowledgement for each (teardowns included). JetStream
// has no notification for that, so it polls the consumer's state.
func waitAcked(t testing.TB, js jetstream.JetStream, class string) {
	t.Helper()
	// The ack floor check covers the moment right after a publish, when the
	// server may not have counted the new message as pending yet.
	floor := lastPublished(class)
	waitConsumer(t, js, class, "settled", func(i *jetstream.ConsumerInfo) bool {
		return i.AckFloor.Stream >= floor && i.NumPending == 0 && i.NumAckPending == 0 && i.NumRedelivered == 0
	})
}

// waitConsumer waits until the class's runner consumer satisfies cond.
func waitConsumer(t testing.TB, js jetstream.JetStream, class, what string, cond func(*jetstream.ConsumerInfo) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ci, err := js.Consumer(ctx, topic.StreamName(class), "agent_runner_"+class)
		if err != nil {
			t.Fatal(err)
		}
		info, err := ci.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cond(info) {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("consumer not %s: pending %d, ack pending %d, redelivered %d", what,
				info.NumPending, info.NumAckPending, info.NumRedelivered)
		}
	}
}

// controlEvents returns the control events of run stored in the class's
// stream, in stream order.
func controlEvents(t testing.TB, b bus.Bus, class, run string) []event.Event {
	t.Helper()
	filter, err := topic.RunControl(class, run)
	if err != nil {
		t.Fatal(err)
	}
	var out []event.Event
	for seq := uint64(1); ; {
		m, err := b.NextMsg(context.Background(), topic.StreamName(class), filter, seq)
		if errors.Is(err, bus.ErrNotFound) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		ev, err := event.Unmarshal(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
		seq = m.Seq + 1
	}
}

// quiet is a logger for runners in tests: warnings and errors only, to the
// test log.
func quiet(t testing.TB) agent.Option {
	return agent.WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// signalOn is a logger that closes ch when a record with message msg is
// logged (once), and otherwise logs warnings to the test log.
func signalOn(t testing.TB, msg string, ch chan struct{}) agent.Option {
	return agent.WithLogger(slog.New(&signalHandler{
		Handler: slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}),
		msg:     msg, ch: ch, once: &sync.Once{},
	}))
}

type signalHandler struct {
	slog.Handler
	msg  string
	ch   chan struct{}
	once *sync.Once
}

func (h *signalHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.ch) })
	}
	if h.Handler.Enabled(ctx, r.Level) {
		return h.Handler.Handle(ctx, r)
	}
	return nil
}

func (h *signalHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &signalHandler{Handler: h.Handler.WithAttrs(as), msg: h.msg, ch: h.ch, once: h.once}
}

func (h *signalHandler) WithGroup(name string) slog.Handler {
	return &signalHandler{Handler: h.Handler.WithGroup(name), msg: h.msg, ch: h.ch, once: h.once}
}

// seqOf returns the stream sequence of the run's first control event named
// name.
func seqOf(t testing.TB, b bus.Bus, run topic.Agent, name string) uint64 {
	t.Helper()
	filter := "agent." + run.Class + ".*.*.*." + run.Run + ".control_event." + name + ".*"
	m, err := b.NextMsg(context.Background(), topic.StreamName(run.Class), filter, 1)
	if err != nil {
		t.Fatal(err)
	}
	return m.Seq
}

// awaitControl returns a channel that receives the run's control events
// named name as they are published (subscribe before publishing).
func awaitControl(t testing.TB, b bus.Bus, run topic.Agent, name string) <-chan struct{} {
	t.Helper()
	ch := make(chan struct{}, 16)
	sub, err := b.Subscribe(context.Background(), "agent."+run.Class+".*.*.*."+run.Run+".control_event."+name+".*", "", func(*bus.Msg) {
		ch <- struct{}{}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return ch
}

// askedRun starts a run of a greeter-like class (its first step asks a
// HITL input question) and returns it once the question is out.
func askedRun(t testing.TB, c bus.Bus, w *watcher, class string) (topic.Agent, *event.HumanInTheLoopInputRequestEvent) {
	t.Helper()
	run := newRun(class, "wiki")
	publish(t, c, run, userMessage("hi"), nil)
	evs := w.until(t, run.Run, "the question", func(evs []event.Event) bool {
		return count(evs, "HumanInTheLoopInputRequestEvent") == 1
	})
	for _, e := range evs {
		if q, ok := e.(*event.HumanInTheLoopInputRequestEvent); ok {
			return run, q
		}
	}
	t.Fatalf("run %s: no question among %s", run.Run, names(evs))
	return run, nil
}
