package watermill_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/engine"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/ThreeDotsLabs/watermill"
	wmjs "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// The events of the linear agent.
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

// linear is the 3-step agent of the runtime benchmarks: UserMessage →
// Asked → Answered → Stop.
type linear struct{ class string }

func (l *linear) Class() string { return l.class }

func (l *linear) Steps() []*step.Step {
	return []*step.Step{step.New(l.Ask), step.New(l.Answer), step.New(l.Finish)}
}

func (l *linear) Ask(ctx step.Context, m *event.UserMessageEvent) (*Asked, error) {
	return &Asked{Text: m.Messages[0].Content()}, nil
}

func (l *linear) Answer(ctx step.Context, a *Asked) (*Answered, error) {
	return &Answered{Text: strings.ToUpper(a.Text)}, nil
}

func (l *linear) Finish(ctx step.Context, a *Answered) (*event.StopEvent, error) {
	return &event.StopEvent{}, nil
}

func userMessage() *event.UserMessageEvent {
	return &event.UserMessageEvent{
		User:     &event.UserIdentity{ID: "u1", Name: "Ursula", Email: "u@example.com", Roles: []string{"user"}},
		Messages: []event.ChatMessage{event.Text(event.RoleUser, "hi")},
	}
}

// server starts an embedded nats-server with file storage.
func server(b *testing.B) *natsserver.Server {
	b.Helper()
	s, err := natsserver.Start(natsserver.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Shutdown)
	return s
}

func perStep(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/3, "ns/step")
}

// cpuTime is the process's CPU time so far (user and system): the server,
// the clients and the SDK all run in the benchmark's process, so CPU per
// run is what a run costs, whatever else the machine is doing.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU spent per run since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/run")
}

var quiet = slog.New(slog.DiscardHandler)

// BenchmarkJetStream: a 3-step run, one at a time, each case on its own
// embedded server with file storage. raw is the baseline: plain nats.go,
// a durable pull consumer whose handler publishes the next message, waits
// for its PubAck and acks. watermill is a Watermill router chaining three
// handlers over JetStream (durable consumers, ack after the handler). The
// agent cases are this SDK's runtime with the JetStream KV store (the
// default) and with the in-memory store.
func BenchmarkJetStream(b *testing.B) {
	b.Run("raw", benchRaw)
	b.Run("watermill", benchWatermillJetStream)
	b.Run("agent=kv", func(b *testing.B) { benchAgent(b, false) })
	b.Run("agent=memory", func(b *testing.B) { benchAgent(b, true) })
}

func benchRaw(b *testing.B) {
	s := server(b)
	nc, err := nats.Connect(s.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "raw", Subjects: []string{"raw.>"}, Storage: jetstream.FileStorage, Duplicates: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "raw_runner", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{}, 1)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		hop := m.Headers().Get("hop")
		if hop == "3" {
			_ = m.Ack()
			done <- struct{}{}
			return
		}
		next := nats.NewMsg("raw.step")
		next.Header.Set("hop", string(rune(hop[0]+1)))
		next.Data = m.Data()
		if _, err := js.PublishMsg(ctx, next, jetstream.WithMsgID(nats.NewInbox())); err != nil {
			b.Error(err)
		}
		_ = m.Ack()
	})
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()
	payload, _ := event.Marshal(event.Stamp(userMessage()))
	b.ResetTimer()
	cpu := cpuTime()
	defer func() { reportCPU(b, cpu) }()
	for b.Loop() {
		m := nats.NewMsg("raw.start")
		m.Header.Set("hop", "0")
		m.Data = payload
		if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(nats.NewInbox())); err != nil {
			b.Fatal(err)
		}
		<-done
	}
	perStep(b)
}

// hopTopics are the four topics of the Watermill routers: three handlers
// publish to the next, and the last topic's handler ends the run.
var hopTopics = []string{"hop0", "hop1", "hop2", "hop3"}

// threeHops adds three handlers that each publish a new message (new
// UUID, same payload) to the next topic, and one that ends the run.
func threeHops(r *message.Router, sub message.Subscriber, pub message.Publisher, done chan<- struct{}) {
	for i := range 3 {
		r.AddHandler(fmt.Sprintf("h%d", i), hopTopics[i], sub, hopTopics[i+1], pub,
			func(m *message.Message) ([]*message.Message, error) {
				return []*message.Message{message.NewMessage(watermill.NewUUID(), m.Payload)}, nil
			})
	}
	r.AddConsumerHandler("end", hopTopics[3], sub, func(m *message.Message) error {
		done <- struct{}{}
		return nil
	})
}

func runRouter(b *testing.B, r *message.Router) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		_ = r.Close()
		<-errc
	})
	select {
	case <-r.Running():
	case err := <-errc:
		b.Fatalf("router stopped: %v", err)
	}
}

func benchWatermillJetStream(b *testing.B) {
	s := server(b)
	nc, err := nats.Connect(s.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	logger := watermill.NopLogger{}
	streamCfg := func(topic string) jetstream.StreamConfig {
		return jetstream.StreamConfig{Name: topic, Subjects: []string{topic}, Storage: jetstream.FileStorage, Duplicates: time.Minute}
	}
	// Durable consumers, one per topic, on file-storage streams.
	durable := func(ctx context.Context, js jetstream.JetStream, topic string) (jetstream.Consumer, func(context.Context, watermill.LoggerAdapter), error) {
		st, err := js.CreateOrUpdateStream(ctx, streamCfg(topic))
		if err != nil {
			return nil, nil, err
		}
		c, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "wm_" + topic, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second})
		return c, nil, err
	}
	pub, err := wmjs.NewPublisher(wmjs.PublisherConfig{Conn: nc, Logger: logger, ConfigureStream: streamCfg})
	if err != nil {
		b.Fatal(err)
	}
	sub, err := wmjs.NewSubscriber(wmjs.SubscriberConfig{Conn: nc, Logger: logger, ResourceInitializer: durable, AckAsync: true})
	if err != nil {
		b.Fatal(err)
	}
	r, err := message.NewRouter(message.RouterConfig{}, logger)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{}, 1)
	threeHops(r, sub, pub, done)
	runRouter(b, r)
	payload, _ := event.Marshal(event.Stamp(userMessage()))
	b.ResetTimer()
	cpu := cpuTime()
	defer func() { reportCPU(b, cpu) }()
	for b.Loop() {
		if err := pub.Publish(hopTopics[0], message.NewMessage(watermill.NewUUID(), payload)); err != nil {
			b.Fatal(err)
		}
		<-done
	}
	perStep(b)
}

func benchAgent(b *testing.B, memStore bool) {
	s := server(b)
	c, err := natsbus.Connect(natsbus.Config{URL: s.URL()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	class := "Bench_" + event.NewID()[12:]
	stops := make(chan string, 1024)
	sub, err := c.Subscribe(context.Background(), "agent."+class+".*.*.*.*.display_event.StopEvent.*", "", func(m *bus.Msg) {
		if tp, err := topic.ParseAgent(m.Subject); err == nil {
			stops <- tp.Run
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	opts := []agent.Option{agent.WithNATS(s.URL()), agent.Standalone(), agent.Discoverable(false), agent.WithLogger(quiet)}
	if memStore {
		opts = append(opts, agent.WithStore(memstore.New()))
	}
	r, err := agent.New(&linear{class: class}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx) }()
	defer func() { cancel(); <-errc }()
	select {
	case <-r.Ready():
	case err := <-errc:
		b.Fatalf("runner stopped: %v", err)
	}
	b.ResetTimer()
	cpu := cpuTime()
	defer func() { reportCPU(b, cpu) }()
	for b.Loop() {
		run := topic.Agent{Class: class, ID: "b", Thread: event.NewID(), Display: event.NewID(), Run: event.NewID()}
		ev := userMessage()
		event.Stamp(ev)
		data, err := event.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		subj, err := run.Event(topic.Control, event.Name(ev), ev.EventID).Subject()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.PublishStream(ctx, &bus.Msg{Subject: subj, Data: data}, ev.EventID); err != nil {
			b.Fatal(err)
		}
		for id := range stops {
			if id == run.Run {
				break
			}
		}
	}
	perStep(b)
}

// BenchmarkInMemory: the same three hops in process. gochannel is a
// Watermill router over its GoChannel pub/sub; engine is this SDK's
// engine on its in-memory bus (manual delivery, one goroutine) with the
// in-memory store, as dispatch's BenchmarkLinearRun.
func BenchmarkInMemory(b *testing.B) {
	b.Run("gochannel", benchGoChannel)
	b.Run("engine", benchEngine)
}

func benchGoChannel(b *testing.B) {
	logger := watermill.NopLogger{}
	pubSub := gochannel.NewGoChannel(gochannel.Config{OutputChannelBuffer: 16}, logger)
	defer func() { _ = pubSub.Close() }()
	r, err := message.NewRouter(message.RouterConfig{}, logger)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{}, 1)
	threeHops(r, pubSub, pubSub, done)
	runRouter(b, r)
	payload, _ := event.Marshal(event.Stamp(userMessage()))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := pubSub.Publish(hopTopics[0], message.NewMessage(watermill.NewUUID(), payload)); err != nil {
			b.Fatal(err)
		}
		<-done
	}
	perStep(b)
}

func benchEngine(b *testing.B) {
	ctx := context.Background()
	class := "BenchEngine"
	mb := memory.New(memory.Options{Manual: true, Logger: quiet})
	defer func() { _ = mb.Close() }()
	if err := mb.EnsureStream(ctx, bus.AgentStream(class)); err != nil {
		b.Fatal(err)
	}
	w, err := step.NewWorkflow(class, (&linear{class: class}).Steps()...)
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New(w, mb, memstore.New(), engine.Sequential(), engine.WithLogger(quiet))
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	c, err := mb.Consume(ctx, bus.RunnerConsumer(class), func(d bus.Delivery) { eng.Handle(ctx, d) })
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		run := event.NewID()
		ev := userMessage()
		event.Stamp(ev)
		data, err := event.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		subj, err := topic.Agent{Class: class, ID: "bench", Thread: run, Display: run, Run: run,
			Type: topic.Control, Name: event.Name(ev), EventID: ev.EventID}.Subject()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := mb.PublishStream(ctx, &bus.Msg{Subject: subj, Data: data}, ev.EventID); err != nil {
			b.Fatal(err)
		}
		mb.DeliverAll(ctx)
	}
	perStep(b)
}
