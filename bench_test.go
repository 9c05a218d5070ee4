package agent_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/store"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/crashtest"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/store/natskv"
	redisstore "github.com/saap-go/agent/store/redis"
	"github.com/saap-go/agent/topic"
)

// The runtime benchmarks (BENCHMARKS.md, "runtime: agent.Run over
// JetStream"). Each reports its figure next to a baseline measured in the
// same run.
//
//	go test -run '^$' -bench 'Runtime' -benchtime 2000x .

// benchServer starts an embedded server with file storage.
func benchServer(b *testing.B) *natsserver.Server {
	b.Helper()
	s, err := natsserver.Start(natsserver.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Shutdown)
	return s
}

// stops delivers the run ids of StopEvents seen on core NATS.
func stops(b *testing.B, c bus.Bus, class string) <-chan string {
	ch := make(chan string, 1024)
	sub, err := c.Subscribe(context.Background(), "agent."+class+".*.*.*.*.display_event.StopEvent.*", "", func(m *bus.Msg) {
		tp, err := topic.ParseAgent(m.Subject)
		if err == nil {
			ch <- tp.Run
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sub.Unsubscribe() })
	return ch
}

// kvDefault makes the runner's default store the JetStream KV store for
// the rest of b: with REDIS_URL set (as .ci/run sets it) the default would
// be Redis.
func kvDefault(b *testing.B) { b.Setenv(agent.EnvRedisURL, "") }

func silent() agent.Option {
	return agent.WithLogger(slog.New(slog.DiscardHandler))
}

// BenchmarkRuntimeLinearRun is a 3-step run (UserMessage → Asked →
// Answered → Stop) through agent.Run over embedded JetStream with file
// storage, one run at a time, with the default JetStream KV store and, to
// separate the store's share, the in-memory store. ns/step is the figure;
// see BenchmarkRuntimeRawLoop for the baseline.
func BenchmarkRuntimeLinearRun(b *testing.B) {
	b.Run("store=kv", func(b *testing.B) { benchLinear(b, nil) })
	b.Run("store=memory", func(b *testing.B) { benchLinear(b, memstore.New()) })
	b.Run("store=redis", func(b *testing.B) {
		url := os.Getenv("REDIS_URL")
		if url == "" {
			b.Skip("set REDIS_URL to measure the Redis store")
		}
		rs, err := redisstore.Open(context.Background(), url, redisstore.Config{Prefix: uniqueClass("bench") + ":"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = rs.Close() })
		benchLinear(b, rs)
	})
}

// BenchmarkRuntimeStoreCalls is the KV run of BenchmarkRuntimeLinearRun
// through a counting wrapper: store calls per run and the time spent in
// them (the wrapper's own cost is a few atomics).
func BenchmarkRuntimeStoreCalls(b *testing.B) {
	s := benchServer(b)
	c := client(b, s.URL())
	kv, err := natskv.New(context.Background(), c.JetStream(), natskv.Config{})
	if err != nil {
		b.Fatal(err)
	}
	cs := &countedStore{Store: kv}
	benchLinearOn(b, s, c, cs)
	b.ReportMetric(float64(cs.calls.Load())/float64(b.N), "store-calls/run")
	b.ReportMetric(float64(cs.ns.Load())/float64(b.N)/1e3, "store-µs/run")
}

// countedStore counts a store's calls and the time they take.
type countedStore struct {
	store.Store
	calls, ns atomic.Int64
}

func (c *countedStore) done(t time.Time) { c.calls.Add(1); c.ns.Add(int64(time.Since(t))) }

func (c *countedStore) Claim(ctx context.Context, run store.RunKey, req store.ClaimRequest) (store.ClaimResult, error) {
	defer c.done(time.Now())
	return c.Store.Claim(ctx, run, req)
}
func (c *countedStore) Complete(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) error {
	defer c.done(time.Now())
	return c.Store.Complete(ctx, run, step, key, o)
}
func (c *countedStore) Record(ctx context.Context, run store.RunKey, step, key string, o store.Outcome) (store.ClaimResult, error) {
	defer c.done(time.Now())
	return c.Store.Record(ctx, run, step, key, o)
}

// WatchMarker forwards the wrapped store's watch, uncounted: it is set up
// once, not a call per event.
func (c *countedStore) WatchMarker(ctx context.Context, class, name string, fn func(string)) (store.MarkerWatch, error) {
	return c.Store.(store.Watcher).WatchMarker(ctx, class, name, fn)
}
func (c *countedStore) Count(ctx context.Context, run store.RunKey, step string) (int64, error) {
	defer c.done(time.Now())
	return c.Store.Count(ctx, run, step)
}
func (c *countedStore) SetMarker(ctx context.Context, run store.RunKey, name, value string) (string, bool, error) {
	defer c.done(time.Now())
	return c.Store.SetMarker(ctx, run, name, value)
}
func (c *countedStore) Marker(ctx context.Context, run store.RunKey, name string) (string, bool, error) {
	defer c.done(time.Now())
	return c.Store.Marker(ctx, run, name)
}
func (c *countedStore) Get(ctx context.Context, s store.Scope, key string) ([]byte, bool, error) {
	defer c.done(time.Now())
	return c.Store.Get(ctx, s, key)
}
func (c *countedStore) Set(ctx context.Context, s store.Scope, key string, value []byte) error {
	defer c.done(time.Now())
	return c.Store.Set(ctx, s, key, value)
}
func (c *countedStore) SetMany(ctx context.Context, s store.Scope, entries []store.Entry) error {
	defer c.done(time.Now())
	return c.Store.(store.Contexts).SetMany(ctx, s, entries)
}
func (c *countedStore) DeleteRun(ctx context.Context, run store.RunKey) error {
	defer c.done(time.Now())
	return c.Store.DeleteRun(ctx, run)
}

func benchLinear(b *testing.B, store store.Store) {
	s := benchServer(b)
	benchLinearOn(b, s, client(b, s.URL()), store)
}

func benchLinearOn(b *testing.B, s *natsserver.Server, c *natsbus.Bus, store store.Store) {
	class := uniqueClass("Bench")
	done := stops(b, c, class)
	opts := []agent.Option{agent.WithNATS(s.URL()), agent.Standalone(), agent.Discoverable(false), silent()}
	if store != nil {
		opts = append(opts, agent.WithStore(store))
	} else {
		kvDefault(b)
	}
	startRunner(b, &linear{class: class}, opts...)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		run := newRun(class, "b")
		if err := publishErr(ctx, c, run, userMessage("hi"), nil); err != nil {
			b.Fatal(err)
		}
		for id := range done {
			if id == run.Run {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/3, "ns/step")
}

// BenchmarkRuntimeRawLoop is the baseline: raw nats.go doing the same
// JetStream round trips per step as the runtime does at least: a durable
// pull consumer receives a message, the handler publishes the next one to
// the stream and waits for its PubAck, then acks; three hops per run.
func BenchmarkRuntimeRawLoop(b *testing.B) { benchRawLoop(b, false) }

// BenchmarkRuntimeRawLoopDisplay is the raw loop doing what the protocol
// asks of every event that is both control and display, as the linear
// run's are: besides the stream publish, a core NATS copy on a display
// subject, which the class's stream stores too. It is the floor of a
// runtime that stores nothing but the protocol's messages.
func BenchmarkRuntimeRawLoopDisplay(b *testing.B) { benchRawLoop(b, true) }

// rawClient starts an embedded server and connects plain nats.go to it,
// for the raw baselines; both end with b.
func rawClient(b *testing.B) (*nats.Conn, jetstream.JetStream) {
	b.Helper()
	s := benchServer(b)
	nc, err := nats.Connect(s.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	return nc, js
}

// arrivals signals each message published on subject, once the server has
// the subscription.
func arrivals(b *testing.B, nc *nats.Conn, subject string) <-chan struct{} {
	b.Helper()
	ch := make(chan struct{}, 1)
	sub, err := nc.Subscribe(subject, func(*nats.Msg) { ch <- struct{}{} })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		b.Fatal(err)
	}
	return ch
}

func benchRawLoop(b *testing.B, display bool) {
	nc, js := rawClient(b)
	ctx := context.Background()
	subjects, filter := []string{"raw.>"}, ""
	if display { // the display copies go to the same stream, not to the consumer
		subjects, filter = []string{"raw.>", "rawd.>"}, "raw.>"
	}
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "raw", Subjects: subjects, Storage: jetstream.FileStorage, Duplicates: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "raw_runner", FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxDeliver: 5})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{}, 1)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		hop := m.Headers().Get("hop")
		switch hop {
		case "0", "1", "2":
			next := nats.NewMsg("raw.step")
			next.Header.Set("hop", string(rune(hop[0]+1)))
			next.Data = m.Data()
			if _, err := js.PublishMsg(ctx, next, jetstream.WithMsgID(nats.NewInbox())); err != nil {
				b.Error(err)
			}
			if display {
				_ = nc.Publish("rawd.display", next.Data)
			}
			_ = m.Ack()
		default:
			if display {
				_ = nc.Publish("rawd.display", m.Data())
			}
			_ = m.Ack()
			done <- struct{}{}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()
	payload, _ := event.Marshal(event.Stamp(userMessage("hi")))
	b.ResetTimer()
	for b.Loop() {
		m := nats.NewMsg("raw.start")
		m.Header.Set("hop", "0")
		m.Data = payload
		if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(nats.NewInbox())); err != nil {
			b.Fatal(err)
		}
		<-done
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/3, "ns/step")
}

// BenchmarkRuntimeRawLoopRecorded is the raw loop sending the linear run's
// messages as the protocol shapes them, and making, with plain nats.go on a
// KV bucket, the store writes of a state model: the floor each model sets
// for a KV run, with none of the SDK's code. Every event has its own
// subject (run and event id in it), as on an agent stream; the start and
// the stop also go out as display copies and the first hop sends a chunk,
// all stored by the stream as the class's stream stores them. The benchmark
// waits for the stop's display copy, as it waits for the StopEvent in
// BenchmarkRuntimeLinearRun; what a model does after the stop overlaps the
// next run, as the SDK's teardown does.
//
//   - model=sdk is this SDK's KV store: at the start an identity create
//     beside a terminal-marker read, then the run-context write and the
//     status and thread-index writes off the step's way; a record per step
//     before its output is published; a terminal-marker create after the
//     stop is published; then the teardown's purge of the run's keys,
//     end-marker create and final status.
//   - model=one-record keeps what the guarantees need in one run record: a
//     create at the start holding identity, run context and status, a record
//     per step, then a terminal update, the purge and an end update.
//   - model=step-records writes the records alone, one per step: the floor
//     of any design that records a step before publishing its outputs.
//   - model=none writes nothing: the protocol's messages alone, the floor
//     of the in-memory store.
func BenchmarkRuntimeRawLoopRecorded(b *testing.B) {
	for _, m := range []string{"sdk", "one-record", "step-records", "none"} {
		b.Run("model="+m, func(b *testing.B) { benchRawRecorded(b, m) })
	}
}

func benchRawRecorded(b *testing.B, model string) {
	nc, js := rawClient(b)
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "rawr", Subjects: []string{"rawr.>", "rawrd.>"}, Storage: jetstream.FileStorage, Duplicates: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "rawr_state", TTL: natskv.DefaultTTL, Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	kvs, err := js.Stream(ctx, "KV_rawr_state")
	if err != nil {
		b.Fatal(err)
	}
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "rawr_runner", FilterSubject: "rawr.>", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxDeliver: 5})
	if err != nil {
		b.Fatal(err)
	}
	// Value sizes as the SDK writes them for this run.
	record, seed, status, ident := make([]byte, 200), make([]byte, 950), make([]byte, 190), make([]byte, 96)
	chunk, _ := event.Marshal(event.Stamp(&event.ChunkEvent{Content: "thinking"}))
	check := func(err error) {
		if err != nil {
			b.Error(err)
		}
	}
	put := func(key string, v []byte) { _, err := kv.Put(ctx, key, v); check(err) }
	create := func(key string, v []byte) uint64 { rev, err := kv.Create(ctx, key, v); check(err); return rev }
	var bg, teardowns sync.WaitGroup
	var revs sync.Map // run → revision of its run record (one-record)
	start := func(run string) {
		switch model {
		case "sdk":
			var wg sync.WaitGroup
			wg.Go(func() { create("m."+run+".identity", ident) })
			if _, err := kv.Get(ctx, "m."+run+".terminal"); !errors.Is(err, jetstream.ErrKeyNotFound) {
				b.Error("terminal marker read:", err)
			}
			wg.Wait()
			bg.Go(func() { put("r."+run+".y", seed) })
			bg.Go(func() { put("s."+run, status); put("h.t."+run, nil) })
		case "one-record":
			revs.Store(run, create("m."+run, append(append(slices.Clip(ident), seed...), status...)))
		}
	}
	stopped := func(run string) {
		switch model {
		case "sdk":
			create("m."+run+".terminal", []byte("published"))
		case "one-record":
			rev, _ := revs.Load(run)
			rev, err := kv.Update(ctx, "m."+run, append(slices.Clip(ident), "terminal"...), rev.(uint64))
			check(err)
			revs.Store(run, rev)
		}
	}
	teardown := func(run string) {
		switch model {
		case "sdk":
			check(kvs.Purge(ctx, jetstream.WithPurgeSubject("$KV.rawr_state.r."+run+".>")))
			create("m."+run+".end", []byte("completed"))
			put("s."+run, status)
		case "one-record":
			check(kvs.Purge(ctx, jetstream.WithPurgeSubject("$KV.rawr_state.r."+run+".>")))
			rev, _ := revs.LoadAndDelete(run)
			_, err := kv.Update(ctx, "m."+run, append(slices.Clip(ident), "completed"...), rev.(uint64))
			check(err)
		}
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		hop, run := m.Headers().Get("hop"), m.Headers().Get("run")
		switch hop {
		case "0", "1", "2":
			if hop == "0" {
				start(run)
			}
			if hop == "0" {
				check(nc.Publish("rawrd."+run+".display_event.ChunkEvent."+event.NewID(), chunk))
			}
			if model != "none" {
				create("r."+run+".c."+hop, record)
			}
			id := event.NewID()
			next := nats.NewMsg("rawr." + run + ".control_event.Hop" + hop + "." + id)
			next.Header.Set("hop", string(rune(hop[0]+1)))
			next.Header.Set("run", run)
			next.Data = m.Data()
			_, err := js.PublishMsg(ctx, next, jetstream.WithMsgID(id))
			check(err)
			if hop == "2" {
				check(nc.Publish("rawrd."+run+".display_event.StopEvent."+id, next.Data))
				stopped(run)
			}
			check(m.Ack())
		default:
			defer teardowns.Done()
			teardown(run)
			check(m.Ack())
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()
	done := arrivals(b, nc, "rawrd.*.display_event.StopEvent.*")
	payload, _ := event.Marshal(event.Stamp(userMessage("hi")))
	b.ResetTimer()
	for b.Loop() {
		run, id := event.NewID(), event.NewID()
		m := nats.NewMsg("rawr." + run + ".control_event.UserMessageEvent." + id)
		m.Header.Set("hop", "0")
		m.Header.Set("run", run)
		m.Data = payload
		teardowns.Add(1)
		if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(id)); err != nil {
			b.Fatal(err)
		}
		if err := nc.Publish("rawrd."+run+".display_event.UserMessageEvent."+id, payload); err != nil {
			b.Fatal(err)
		}
		<-done
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/3, "ns/step")
	b.StopTimer()
	teardowns.Wait() // the last run's teardown, before the connection closes
	bg.Wait()
}

// BenchmarkRuntimeFirstChunk measures the latency from publishing a
// UserMessageEvent to the first ChunkEvent on a core subscriber, one run at
// a time, and reports p50 and p99 (run with -benchtime 1000x or more), with
// the default JetStream KV store and with the in-memory store.
func BenchmarkRuntimeFirstChunk(b *testing.B) {
	b.Run("store=kv", func(b *testing.B) { benchFirstChunk(b, nil) })
	b.Run("store=memory", func(b *testing.B) { benchFirstChunk(b, memstore.New()) })
}

func benchFirstChunk(b *testing.B, store store.Store) {
	s := benchServer(b)
	c := client(b, s.URL())
	class := uniqueClass("Chunk")
	done := stops(b, c, class)
	chunks := make(chan string, 1024)
	sub, err := c.Subscribe(context.Background(), "agent."+class+".*.*.*.*.display_event.ChunkEvent.*", "", func(m *bus.Msg) {
		tp, _ := topic.ParseAgent(m.Subject)
		chunks <- tp.Run
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	opts := []agent.Option{agent.WithNATS(s.URL()), agent.Standalone(), agent.Discoverable(false), silent()}
	if store != nil {
		opts = append(opts, agent.WithStore(store))
	} else {
		kvDefault(b)
	}
	startRunner(b, &linear{class: class}, opts...)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		run := newRun(class, "b")
		t0 := time.Now()
		if err := publishErr(ctx, c, run, userMessage("hi"), nil); err != nil {
			b.Fatal(err)
		}
		for id := range chunks {
			if id == run.Run {
				break
			}
		}
		lat = append(lat, time.Since(t0))
		// Let the run finish before the next one starts, so runs do not
		// overlap and each latency is measured on an idle runner.
		for id := range done {
			if id == run.Run {
				break
			}
		}
	}
	reportPercentiles(b, lat)
}

// BenchmarkRuntimeFirstChunkRawFloor is the floor for the latency above:
// a JetStream publish consumed by a durable whose handler publishes one core
// message that a subscriber receives. With store=kv the handler first
// creates a key, the one store round trip a new run's first step waits for
// on a KV store (the run's identity). With idle=0s the next publish follows
// at once and every goroutine on the way is awake; with idle=1.5ms each
// publish comes after a pause about as long as a KV run, so the way pays
// for waking the goroutines and threads that parked, as the linear runs
// above do.
func BenchmarkRuntimeFirstChunkRawFloor(b *testing.B) {
	for _, kv := range []bool{false, true} {
		for _, idle := range []time.Duration{0, 1500 * time.Microsecond} {
			name := "store=none"
			if kv {
				name = "store=kv"
			}
			b.Run(fmt.Sprintf("%s/idle=%s", name, idle), func(b *testing.B) { benchFirstChunkRaw(b, kv, idle) })
		}
	}
}

func benchFirstChunkRaw(b *testing.B, create bool, idle time.Duration) {
	nc, js := rawClient(b)
	ctx := context.Background()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "rawc", Subjects: []string{"rawc.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "rawc", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		b.Fatal(err)
	}
	var kv jetstream.KeyValue
	if create {
		if kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "rawc_state", TTL: natskv.DefaultTTL, Storage: jetstream.FileStorage}); err != nil {
			b.Fatal(err)
		}
	}
	ident := make([]byte, 96)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if kv != nil {
			if _, err := kv.Create(ctx, "m."+event.NewID()+".identity", ident); err != nil {
				b.Error(err)
			}
		}
		_ = nc.Publish("chunk.out", m.Data())
		_ = m.Ack()
	})
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()
	got := arrivals(b, nc, "chunk.out")
	payload, _ := event.Marshal(event.Stamp(userMessage("hi")))
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := js.Publish(ctx, "rawc.in", payload); err != nil {
			b.Fatal(err)
		}
		<-got
		lat = append(lat, time.Since(t0))
		if idle > 0 {
			time.Sleep(idle) // the condition measured, not a wait for anything
		}
	}
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	p := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(p(0.50), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
}

// BenchmarkRuntimeRestart measures a restart: New, Run until Ready, and one
// new run to its StopEvent, on a stream that holds 100,000 events of
// completed runs (the runner consumer's ack floor past them, as after the
// runner handled them) against an empty stream.
func BenchmarkRuntimeRestart(b *testing.B) {
	kvDefault(b)
	for _, n := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			s := benchServer(b)
			c := client(b, s.URL())
			class := uniqueClass("Restart")
			ctx := context.Background()
			if err := c.EnsureStream(ctx, bus.AgentStream(class)); err != nil {
				b.Fatal(err)
			}
			if n > 0 {
				fillCompletedRuns(b, c, class, n)
			}
			done := stops(b, c, class)
			b.ResetTimer()
			for b.Loop() {
				r, err := agent.New(&linear{class: class}, agent.WithNATS(s.URL()), agent.Standalone(), agent.Discoverable(false), silent())
				if err != nil {
					b.Fatal(err)
				}
				rctx, cancel := context.WithCancel(ctx)
				errc := make(chan error, 1)
				go func() { errc <- r.Run(rctx) }()
				<-r.Ready()
				run := newRun(class, "r")
				if err := publishErr(ctx, c, run, userMessage("hi"), nil); err != nil {
					b.Fatal(err)
				}
				for id := range done {
					if id == run.Run {
						break
					}
				}
				b.StopTimer()
				cancel()
				if err := <-errc; err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// fillCompletedRuns stores n control events of completed runs (4 per run)
// and creates the runner durable with its ack floor after them.
func fillCompletedRuns(b *testing.B, c interface {
	JetStream() jetstream.JetStream
}, class string, n int) {
	b.Helper()
	js := c.JetStream()
	ctx := context.Background()
	var last uint64
	var pending []jetstream.PubAckFuture
	for i := 0; i < n; i += 4 {
		run := newRun(class, "h")
		evs := []event.Event{userMessage("x"), &Asked{Text: "q"}, &Answered{Text: "a"}, &event.StopEvent{}}
		for _, ev := range evs[:min(4, n-i)] {
			event.Stamp(ev)
			data, _ := event.Marshal(ev)
			subj, _ := run.Event(topic.Control, event.Name(ev), ev.EventBase().EventID).Subject()
			f, err := js.PublishAsync(subj, data, jetstream.WithMsgID(ev.EventBase().EventID))
			if err != nil {
				b.Fatal(err)
			}
			pending = append(pending, f)
		}
		if len(pending) >= 4000 {
			last = drain(b, pending, last)
			pending = pending[:0]
		}
	}
	last = drain(b, pending, last)
	_, err := js.CreateConsumer(ctx, topic.StreamName(class), jetstream.ConsumerConfig{
		Durable: "agent_runner_" + class, AckPolicy: jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: last + 1,
		FilterSubject: "agent." + class + ".*.*.*.*.control_event.*.*",
		AckWait:       30 * time.Second, MaxDeliver: 5, MaxAckPending: 1000,
	})
	if err != nil {
		b.Fatal(err)
	}
}

func drain(b *testing.B, fs []jetstream.PubAckFuture, last uint64) uint64 {
	for _, f := range fs {
		select {
		case a := <-f.Ok():
			last = max(last, a.Sequence)
		case err := <-f.Err():
			b.Fatal(err)
		}
	}
	return last
}

// BenchmarkRuntimePausedRuns parks 10,000 runs waiting for a response event
// and reports the heap and goroutines they cost the runner's process. The
// NATS server runs in a child process, so its memory is not counted.
func BenchmarkRuntimePausedRuns(b *testing.B) { eachCacheSize(b, benchPaused) }

// eachCacheSize runs bench with the default history cache and with one
// that holds all 10,000 paused runs.
func eachCacheSize(b *testing.B, bench func(*testing.B, []agent.Option)) {
	for _, cache := range []int{0, 10_000} {
		name := "cache=default"
		opts := []agent.Option{agent.Standalone(), agent.Discoverable(false), silent()}
		if cache > 0 {
			name = fmt.Sprintf("cache=%d", cache)
			opts = append(opts, agent.WithCacheSize(cache))
		}
		b.Run(name, func(b *testing.B) { bench(b, opts) })
	}
}

func benchPaused(b *testing.B, opts []agent.Option) {
	const runs = 10_000
	kvDefault(b)
	for b.Loop() {
		url := serverProcess(b)
		c := client(b, url)
		class := uniqueClass("Paused")
		r := startRunner(b, &history{class: class}, append(opts, agent.WithNATS(url))...)
		ctx := context.Background()
		// Warm up with one paused run, so lazily built plans and pools are
		// not counted.
		publish(b, c, newRun(class, "p"), userMessage("x"), nil)
		waitAcked(b, c.JetStream(), class)

		before, gBefore := heapNow()
		var failed atomic.Int32
		for range runs {
			if err := publishErr(ctx, c, newRun(class, "p"), userMessage("x"), nil); err != nil {
				failed.Add(1)
			}
		}
		if failed.Load() > 0 {
			b.Fatalf("%d publishes failed", failed.Load())
		}
		waitAcked(b, c.JetStream(), class)
		after, gAfter := heapNow()
		b.ReportMetric(float64(int64(after)-int64(before))/runs, "heap-B/paused-run")
		b.ReportMetric(float64(gAfter-gBefore), "goroutines-added")
		b.ReportMetric(float64(gBefore), "goroutines-before")
		b.ReportMetric(float64(before)/1e6, "heap-MB-before")
		b.ReportMetric(float64(after)/1e6, "heap-MB-after")
		if err := r.stop(); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
		// Wait for the memory to be released, so the next measurement
		// starts clean.
		deadline := time.Now().Add(30 * time.Second)
		for h, _ := heapNow(); h > before+1<<20 && time.Now().Before(deadline); h, _ = heapNow() {
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func heapNow() (uint64, int) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, runtime.NumGoroutine()
}

func init() {
	helperModes["natsserver"] = serverMain
}

// serverMain is a helper process that runs a nats-server until killed and
// prints its URL.
func serverMain() int {
	s, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Shutdown()
	fmt.Println("URL=" + s.URL())
	crashtest.Ready()
	select {}
}

// serverProcess starts a nats-server in a child process and returns its URL.
func serverProcess(b *testing.B) string {
	b.Helper()
	child := crashtest.Start(b, "nats-server", "natsserver")
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	child.WaitReady(ctx)
	for _, l := range strings.Split(child.Output(), "\n") {
		if u, ok := strings.CutPrefix(l, "URL="); ok {
			return u
		}
	}
	b.Fatalf("no URL from the server process: %s", child.Output())
	return ""
}

// fanIn is Fan → 20 Asked → Work each → 20 Answered → Join([20]Answered)
// → Stop: a fan-out of 20 and its fixed fan-in, 42 control events a run.
type fanIn struct{ class string }

const fanWidth = 20

func (f *fanIn) Class() string { return f.class }

func (f *fanIn) Steps() []*step.Step {
	return []*step.Step{step.New(f.Fan), step.New(f.Work), step.New(f.Join)}
}

func (f *fanIn) Fan(ctx step.Context, m *event.UserMessageEvent) ([]*Asked, error) {
	out := make([]*Asked, fanWidth)
	for i := range out {
		out[i] = &Asked{Text: strconv.Itoa(i)}
	}
	return out, nil
}

func (f *fanIn) Work(ctx step.Context, a *Asked) (*Answered, error) {
	return &Answered{Text: a.Text}, nil
}

func (f *fanIn) Join(ctx step.Context, as [fanWidth]*Answered) (*event.StopEvent, error) {
	return &event.StopEvent{}, nil
}

// BenchmarkRuntimeFanIn compares, per control event, runs of a fan-out of
// 20 and its fixed fan-in (42 events a run) with linear 3-step runs (4
// events a run), one run at a time through agent.Run on the default
// JetStream KV store; a fan-in that costs O(n) per run keeps ns/event
// near the linear runs'.
//
//	go test -run '^$' -bench RuntimeFanIn -benchtime 200x .
func BenchmarkRuntimeFanIn(b *testing.B) {
	b.Run("linear", func(b *testing.B) { benchEvents(b, &linear{class: uniqueClass("BenchLin")}, 4) })
	b.Run("fanin=20", func(b *testing.B) { benchEvents(b, &fanIn{class: uniqueClass("BenchFan")}, 2*fanWidth+2) })
}

type classAgent interface {
	agent.Agent
	Class() string
}

func benchEvents(b *testing.B, a classAgent, events int) {
	s := benchServer(b)
	c := client(b, s.URL())
	kv, err := natskv.New(context.Background(), c.JetStream(), natskv.Config{})
	if err != nil {
		b.Fatal(err)
	}
	cs := &countedStore{Store: kv}
	done := stops(b, c, a.Class())
	startRunner(b, a, agent.WithNATS(s.URL()), agent.Standalone(), agent.Discoverable(false), silent(), agent.WithStore(cs))
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		run := newRun(a.Class(), "b")
		if err := publishErr(ctx, c, run, userMessage("hi"), nil); err != nil {
			b.Fatal(err)
		}
		for id := range done {
			if id == run.Run {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(events), "ns/event")
	b.ReportMetric(float64(cs.calls.Load())/float64(b.N)/float64(events), "store-calls/event")
}
