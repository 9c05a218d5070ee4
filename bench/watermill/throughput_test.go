package watermill_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmjs "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/jetstream"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// inFlight is how many runs the throughput benchmarks keep going at once.
const inFlight = 64

// BenchmarkThroughput: the 3-step runs of BenchmarkJetStream with 64 in
// flight, each case on its own embedded server with file storage. runs/s
// is the figure; every case is bounded by the same window of 64. raw is
// plain nats.go with a goroutine per delivery (publish, wait for the
// PubAck, ack); watermill runs 64 handlers per hop on one durable
// consumer per topic, since a Watermill handler takes one message at a
// time; agent is this SDK's runtime with its defaults (JetStream KV
// store).
func BenchmarkThroughput(b *testing.B) {
	b.Run("raw", benchRawThroughput)
	b.Run("watermill", benchWatermillThroughput)
	b.Run("agent=kv", benchAgentThroughput)
}

// window keeps inFlight runs going: start publishes one run, ended
// receives one token per finished run.
func window(b *testing.B, ended <-chan struct{}, start func()) {
	b.Helper()
	b.ResetTimer()
	cpu := cpuTime()
	t0 := time.Now()
	n := 0
	open := 0
	for b.Loop() {
		for open >= inFlight {
			<-ended
			open--
		}
		start()
		open++
		n++
	}
	for ; open > 0; open-- {
		<-ended
	}
	b.StopTimer()
	reportCPU(b, cpu)
	b.ReportMetric(float64(n)/time.Since(t0).Seconds(), "runs/s")
}

func benchRawThroughput(b *testing.B) {
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
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "raw_runner", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: 4 * inFlight})
	if err != nil {
		b.Fatal(err)
	}
	ended := make(chan struct{}, inFlight)
	// A delivery's goroutine may still be acking when the last run has
	// ended and the connection closes: only errors before that count.
	var closing atomic.Bool
	defer closing.Store(true)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		hop := m.Headers().Get("hop")
		if hop == "3" {
			_ = m.Ack()
			ended <- struct{}{}
			return
		}
		go func() {
			next := nats.NewMsg("raw.step")
			next.Header.Set("hop", string(rune(hop[0]+1)))
			next.Data = m.Data()
			if _, err := js.PublishMsg(ctx, next, jetstream.WithMsgID(nats.NewInbox())); err != nil && !closing.Load() {
				b.Error(err)
			}
			_ = m.Ack()
		}()
	})
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()
	payload, _ := event.Marshal(event.Stamp(userMessage()))
	window(b, ended, func() {
		m := nats.NewMsg("raw.start")
		m.Header.Set("hop", "0")
		m.Data = payload
		if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(nats.NewInbox())); err != nil {
			b.Fatal(err)
		}
	})
}

func benchWatermillThroughput(b *testing.B) {
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
	durable := func(ctx context.Context, js jetstream.JetStream, topic string) (jetstream.Consumer, func(context.Context, watermill.LoggerAdapter), error) {
		st, err := js.CreateOrUpdateStream(ctx, streamCfg(topic))
		if err != nil {
			return nil, nil, err
		}
		c, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "wm_" + topic, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: 4 * inFlight})
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
	ended := make(chan struct{}, inFlight)
	for i := range 3 {
		for k := range inFlight {
			r.AddHandler(fmt.Sprintf("h%d_%d", i, k), hopTopics[i], sub, hopTopics[i+1], pub,
				func(m *message.Message) ([]*message.Message, error) {
					return []*message.Message{message.NewMessage(watermill.NewUUID(), m.Payload)}, nil
				})
		}
	}
	for k := range inFlight {
		r.AddConsumerHandler(fmt.Sprintf("end_%d", k), hopTopics[3], sub, func(m *message.Message) error {
			ended <- struct{}{}
			return nil
		})
	}
	runRouter(b, r)
	payload, _ := event.Marshal(event.Stamp(userMessage()))
	window(b, ended, func() {
		if err := pub.Publish(hopTopics[0], message.NewMessage(watermill.NewUUID(), payload)); err != nil {
			b.Fatal(err)
		}
	})
}

func benchAgentThroughput(b *testing.B) {
	s := server(b)
	c, err := natsbus.Connect(natsbus.Config{URL: s.URL()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	class := "Bench_" + event.NewID()[12:]
	ended := make(chan struct{}, inFlight)
	sub, err := c.Subscribe(context.Background(), "agent."+class+".*.*.*.*.display_event.StopEvent.*", "", func(m *bus.Msg) {
		ended <- struct{}{}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	r, err := agent.New(&linear{class: class}, agent.WithNATS(s.URL()), agent.Standalone(), agent.Discoverable(false), agent.WithLogger(quiet))
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
	window(b, ended, func() {
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
	})
}
