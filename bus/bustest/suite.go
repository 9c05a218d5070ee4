package bustest

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/topic"
)

// env is one subtest's bus plus unique names and cleanup.
type env struct {
	t       *testing.T
	h       Harness
	tg      *Target
	b       bus.Bus
	ctx     context.Context
	id      string // unique token
	prefix  string // subject prefix "bt<id>"
	dl      bus.DeadLetters
	ackWait time.Duration
	streams []string
}

func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	// Registered first, so it runs last: after the bus is closed and the
	// streams are deleted. A deleted stream's signalling goroutine belongs
	// to the server and may not have been scheduled yet to see the stream
	// stopped: it ends on its own, later than the check's retries under
	// load.
	t.Cleanup(func() {
		goleak.VerifyNone(t, ignore, goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*stream).signalConsumersLoop"))
	})
	id := Unique()
	e := &env{t: t, h: h, ctx: ctxFor(t), id: id, prefix: "bt" + id}
	e.dl = bus.DeadLetters{Prefix: "btdl" + id, Stream: "bt" + id + "_deadletter"}
	e.tg = h.New(t, Options{DeadLetters: e.dl})
	e.b = e.tg.Bus
	e.ackWait = h.RealTime
	if e.ackWait <= 0 {
		e.ackWait = 300 * time.Millisecond
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, s := range append(e.streams, e.dl.Stream) {
			if err := e.b.DeleteStream(ctx, s); err != nil && !isNotFound(err) && !errors.Is(err, bus.ErrClosed) {
				t.Errorf("delete stream %s: %v", s, err)
			}
		}
		if err := e.b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return e
}

// subj returns a subject under the subtest's prefix.
func (e *env) subj(tokens ...string) string {
	return e.prefix + "." + strings.Join(tokens, ".")
}

// stream creates a stream capturing prefix.<name>.> and returns its name.
func (e *env) stream(name string) string {
	e.t.Helper()
	cfg := bus.StreamConfig{
		Name:       e.prefix + "_" + name,
		Subjects:   []string{e.subj(name, ">")},
		Storage:    bus.MemoryStorage,
		MaxAge:     time.Hour,
		Duplicates: time.Minute,
	}
	must(e.t, e.b.EnsureStream(e.ctx, cfg))
	e.streams = append(e.streams, cfg.Name)
	return cfg.Name
}

// advance lets d pass: on the target's clock, or in real time.
func (e *env) advance(d time.Duration) {
	if e.tg.Advance != nil {
		e.tg.Advance(d)
	}
}

// quiet is how long to watch for something that must not happen after
// advance(d): real buses need d itself to pass (and some), clocked buses
// only their goroutines to run.
func (e *env) quiet(d time.Duration) time.Duration {
	if e.tg.Advance != nil {
		return 50 * time.Millisecond
	}
	return d + d/2 + 100*time.Millisecond
}

func (e *env) subscribe(pattern, queue string) (<-chan *bus.Msg, bus.Subscription) {
	e.t.Helper()
	ch := make(chan *bus.Msg, 1024)
	s, err := e.b.Subscribe(e.ctx, pattern, queue, func(m *bus.Msg) { ch <- m })
	must(e.t, err)
	return ch, s
}

// sync makes sure the core subscriptions made so far are registered on the
// server before publishing (NATS subscribes asynchronously): a request to a
// fresh responder round-trips through the server after them.
func (e *env) sync() {
	e.t.Helper()
	s := "btsync" + e.id + "." + Unique()
	sub, err := e.b.Subscribe(e.ctx, s, "", func(m *bus.Msg) { _ = bus.Respond(e.ctx, e.b, m, nil, nil) })
	must(e.t, err)
	defer sub.Unsubscribe()
	for i := 0; ; i++ {
		if _, err := e.b.Request(e.ctx, &bus.Msg{Subject: s}); err == nil {
			return
		} else if i == 50 {
			e.t.Fatalf("sync: %v", err)
		}
	}
}

func (e *env) consume(cfg bus.ConsumerConfig, h func(bus.Delivery)) bus.Consumer {
	e.t.Helper()
	c, err := e.b.Consume(e.ctx, cfg, h)
	must(e.t, err)
	e.t.Cleanup(func() { _ = c.Stop() })
	return c
}

// deliveries consumes into a channel without settling.
func (e *env) deliveries(cfg bus.ConsumerConfig) (<-chan bus.Delivery, bus.Consumer) {
	ch := make(chan bus.Delivery, 1024)
	c := e.consume(cfg, func(d bus.Delivery) { ch <- d })
	return ch, c
}

func (e *env) pub(subject string, data string, id string) bus.PubAck {
	e.t.Helper()
	ack, err := e.b.PublishStream(e.ctx, &bus.Msg{Subject: subject, Data: []byte(data)}, id)
	must(e.t, err)
	return ack
}

// Run runs the conformance suite against h. Name the caller's test after
// the implementation (TestConformance/memory, .../nats) so each one's
// results are visible.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		f    func(*env)
	}{
		{"publish-subscribe/wildcards", testWildcards},
		{"publish-subscribe/literal-star", testLiteralStar},
		{"publish-subscribe/queue-group", testQueueGroup},
		{"publish-subscribe/unsubscribe", testUnsubscribe},
		{"stream/publish-consume", testStreamConsume},
		{"stream/core-subscribers-see-stream-publishes", testCoreSeesStream},
		{"stream/dedupe-msg-id", testDedupe},
		{"stream/no-stream", testNoStream},
		{"stream/ensure-idempotent", testEnsureIdempotent},
		{"stream/agent-stream-config", testAgentStreamConfig},
		{"stream/next-msg", testNextMsg},
		{"stream/has-subject", testHasSubject},
		{"stream/publish-new", testPublishNew},
		{"stream/max-msgs-discard-old", testMaxMsgs},
		{"durable/deliver-all-history", testDeliverAll},
		{"durable/max-ack-pending", testMaxAckPending},
		{"durable/redelivery-after-ack-wait", testRedelivery},
		{"durable/max-deliver", testMaxDeliver},
		{"durable/ack", testAck},
		{"durable/nak", testNak},
		{"durable/nak-delay", testNakDelay},
		{"durable/term", testTerm},
		{"durable/in-progress", testInProgress},
		{"durable/settle-twice", testSettleTwice},
		{"durable/shared-durable", testSharedDurable},
		{"durable/resume-after-stop", testResume},
		{"durable/reconcile", testReconcile},
		{"request-reply/reply", testRequestReply},
		{"request-reply/error-replies", testErrorReplies},
		{"request-reply/no-responders", testNoResponders},
		{"request-reply/timeout", testRequestTimeout},
		{"headers/trace-and-aihub", testHeaders},
		{"dead-letters/undecodable", testDeadLetter},
		{"bad-input/invalid-subject", testInvalidSubject},
		{"bad-input/payload-too-large", testPayloadTooLarge},
		{"closed", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.f(newEnv(t, h))
		})
	}
}

func testWildcards(e *env) {
	star, _ := e.subscribe(e.subj("*", "x"), "")
	full, _ := e.subscribe(e.subj(">"), "")
	exact, _ := e.subscribe(e.subj("a", "x"), "")
	e.sync()
	for _, s := range []string{e.subj("a", "x"), e.subj("b", "x"), e.subj("a", "y"), e.subj("a", "x", "deep")} {
		must(e.t, e.b.Publish(e.ctx, &bus.Msg{Subject: s, Data: []byte(s)}))
	}
	want := map[<-chan *bus.Msg][]string{
		star:  {e.subj("a", "x"), e.subj("b", "x")},
		full:  {e.subj("a", "x"), e.subj("b", "x"), e.subj("a", "y"), e.subj("a", "x", "deep")},
		exact: {e.subj("a", "x")},
	}
	for ch, subjects := range want {
		for _, s := range subjects {
			m := recv(e.t, ch, "message on "+s)
			if m.Subject != s || string(m.Data) != s {
				e.t.Fatalf("got %q (%q), want %q in publish order", m.Subject, m.Data, s)
			}
		}
	}
	// A marker each of them matches proves nothing else is queued before it.
	must(e.t, e.b.Publish(e.ctx, &bus.Msg{Subject: e.subj("a", "x")}))
	for ch := range want {
		if m := recv(e.t, ch, "marker"); m.Subject != e.subj("a", "x") {
			e.t.Fatalf("unexpected message %q", m.Subject)
		}
	}
}

func testLiteralStar(e *env) {
	// Discovery publishes literal "*" tokens: class_discovery.agent.*.*.request.<id>.
	wild, _ := e.subscribe(e.subj("*", "request", "*"), "")
	concrete, _ := e.subscribe(e.subj("MyClass", "request", "*"), "")
	e.sync()
	literal := e.subj("*", "request", "c1")
	must(e.t, e.b.Publish(e.ctx, &bus.Msg{Subject: literal}))
	must(e.t, e.b.Publish(e.ctx, &bus.Msg{Subject: e.subj("MyClass", "request", "c2")}))
	if m := recv(e.t, wild, "literal * message"); m.Subject != literal {
		e.t.Fatalf("wildcard subscriber got %q first, want %q", m.Subject, literal)
	}
	if m := recv(e.t, wild, "concrete message"); m.Subject != e.subj("MyClass", "request", "c2") {
		e.t.Fatalf("wildcard subscriber got %q", m.Subject)
	}
	// Per-publisher order: had the concrete subscriber matched the literal
	// "*", it would have got it before c2.
	if m := recv(e.t, concrete, "concrete message"); m.Subject != e.subj("MyClass", "request", "c2") {
		e.t.Fatalf("subscriber with a concrete token matched the literal * subject %q", m.Subject)
	}

	// Streams capture literal "*" subjects like any other.
	st := e.stream("proc")
	ack := e.pub(e.subj("proc", "*", "work"), "w", "")
	got, err := e.b.NextMsg(e.ctx, st, e.subj("proc", "*", "work"), 1)
	must(e.t, err)
	if got.Seq != ack.Seq || got.Subject != e.subj("proc", "*", "work") {
		e.t.Fatalf("stored %q #%d, want #%d", got.Subject, got.Seq, ack.Seq)
	}
	if _, err := e.b.NextMsg(e.ctx, st, e.subj("proc", "p1", "work"), 1); !isNotFound(err) {
		e.t.Fatalf("concrete filter matched a literal * subject: %v", err)
	}
}

func testQueueGroup(e *env) {
	q1, _ := e.subscribe(e.subj("q", "*"), "workers")
	q2, _ := e.subscribe(e.subj("q", "*"), "workers")
	all, _ := e.subscribe(e.subj("q", "*"), "")
	e.sync()
	const n = 40
	for i := range n {
		must(e.t, e.b.Publish(e.ctx, &bus.Msg{Subject: e.subj("q", strconv.Itoa(i))}))
	}
	for range n {
		recv(e.t, all, "plain subscriber's copy")
	}
	seen := map[string]int{}
	c1, c2 := 0, 0
	for range n {
		select {
		case m := <-q1:
			seen[m.Subject]++
			c1++
		case m := <-q2:
			seen[m.Subject]++
			c2++
		case <-time.After(waitTimeout):
			e.t.Fatalf("queue group got %d of %d messages", c1+c2, n)
		}
	}
	for s, k := range seen {
		if k != 1 {
			e.t.Fatalf("%s delivered %d times within the queue group", s, k)
		}
	}
	if len(seen) != n || c1 == 0 || c2 == 0 {
		e.t.Fatalf("queue split %d/%d over %d subjects; want every message once and both members used", c1, c2, len(seen))
	}
	none(e.t, q1, e.quiet(0), "extra queue delivery")
	none(e.t, q2, 0, "extra queue delivery")
}

func testUnsubscribe(e *env) {
	ch, sub := e.subscribe(e.subj("u"), "")
	keep, _ := e.subscribe(e.subj("u"), "")
	e.sync()
	must(e.t, e.b.Publish(e.ctx, &bus.Msg{Subject: e.subj("u")}))
	recv(e.t, ch, "message before Unsubscribe")
	recv(e.t, keep, "message before Unsubscribe")
	must(e.t, sub.Unsubscribe())
	must(e.t, sub.Unsubscribe()) // idempotent
	e.sync()
	must(e.t, e.b.Publish(e.ctx, &bus.Msg{Subject: e.subj("u")}))
	recv(e.t, keep, "message after the other's Unsubscribe")
	none(e.t, ch, e.quiet(0), "message after Unsubscribe")
}

func testStreamConsume(e *env) {
	st := e.stream("s")
	var acks []bus.PubAck
	for i := range 3 {
		acks = append(acks, e.pub(e.subj("s", strconv.Itoa(i)), "m"+strconv.Itoa(i), ""))
	}
	for i, a := range acks {
		if a.Stream != st || a.Duplicate || (i > 0 && a.Seq != acks[i-1].Seq+1) {
			e.t.Fatalf("PubAck %d = %+v; want stream %s, consecutive sequences", i, a, st)
		}
	}
	ch, _ := e.deliveries(bus.ConsumerConfig{Stream: st, Durable: "d", FilterSubject: e.subj("s", ">"), AckWait: time.Minute})
	for i, a := range acks {
		d := recv(e.t, ch, "delivery")
		if d.Seq() != a.Seq || d.NumDelivered() != 1 || string(d.Msg().Data) != "m"+strconv.Itoa(i) ||
			d.Msg().Subject != e.subj("s", strconv.Itoa(i)) {
			e.t.Fatalf("delivery %d: seq %d, delivered %d, %q on %q", i, d.Seq(), d.NumDelivered(), d.Msg().Data, d.Msg().Subject)
		}
		must(e.t, d.Ack(e.ctx))
	}
	info, err := e.b.StreamInfo(e.ctx, st)
	must(e.t, err)
	if info.Msgs != 3 || info.FirstSeq != acks[0].Seq || info.LastSeq != acks[2].Seq {
		e.t.Fatalf("stream info %+v", info)
	}
}

func testCoreSeesStream(e *env) {
	st := e.stream("cs")
	ch, _ := e.subscribe(e.subj("cs", ">"), "")
	e.sync()
	ack := e.pub(e.subj("cs", "x"), "payload", "id-1")
	m := recv(e.t, ch, "core copy of a stream publish")
	if m.Subject != e.subj("cs", "x") || string(m.Data) != "payload" {
		e.t.Fatalf("core copy %q %q", m.Subject, m.Data)
	}
	if ack.Stream != st {
		e.t.Fatalf("ack stream %q", ack.Stream)
	}
	if got := m.Header.Get("Nats-Msg-Id"); got != "id-1" {
		e.t.Fatalf("Nats-Msg-Id on the core copy = %q", got)
	}
}

func testDedupe(e *env) {
	st := e.stream("dd")
	a1 := e.pub(e.subj("dd", "x"), "first", "event-1")
	a2 := e.pub(e.subj("dd", "x"), "second", "event-1")
	a3 := e.pub(e.subj("dd", "x"), "third", "event-2")
	if a1.Duplicate || !a2.Duplicate || a2.Seq != a1.Seq || a3.Duplicate || a3.Seq != a1.Seq+1 {
		e.t.Fatalf("acks %+v %+v %+v: want the second a duplicate of the first", a1, a2, a3)
	}
	m, err := e.b.NextMsg(e.ctx, st, "", 1)
	must(e.t, err)
	if string(m.Data) != "first" || m.Header.Get("Nats-Msg-Id") != "event-1" {
		e.t.Fatalf("stored %q with msg id %q", m.Data, m.Header.Get("Nats-Msg-Id"))
	}
	info, err := e.b.StreamInfo(e.ctx, st)
	must(e.t, err)
	if info.Msgs != 2 {
		e.t.Fatalf("stream holds %d messages, want 2", info.Msgs)
	}
}

func testNoStream(e *env) {
	_, err := e.b.PublishStream(e.ctx, &bus.Msg{Subject: e.subj("nostream", "x")}, "")
	if !errors.Is(err, bus.ErrNoResponders) {
		e.t.Fatalf("publish to a subject no stream captures: %v, want ErrNoResponders", err)
	}
	if _, err := e.b.Consume(e.ctx, bus.ConsumerConfig{Stream: e.prefix + "_missing", Durable: "d"}, func(bus.Delivery) {}); !isNotFound(err) {
		e.t.Fatalf("Consume on a missing stream: %v, want ErrNotFound", err)
	}
	if _, err := e.b.StreamInfo(e.ctx, e.prefix+"_missing"); !isNotFound(err) {
		e.t.Fatalf("StreamInfo of a missing stream: %v", err)
	}
	if err := e.b.DeleteStream(e.ctx, e.prefix+"_missing"); !isNotFound(err) {
		e.t.Fatalf("DeleteStream of a missing stream: %v", err)
	}
}

func testEnsureIdempotent(e *env) {
	cfg := bus.StreamConfig{Name: e.prefix + "_ens", Subjects: []string{e.subj("ens", "*")}, Storage: bus.MemoryStorage,
		MaxMsgs: 100, MaxAge: time.Hour, Duplicates: time.Minute}
	e.streams = append(e.streams, cfg.Name)
	must(e.t, e.b.EnsureStream(e.ctx, cfg))
	e.pub(e.subj("ens", "a"), "kept", "")
	must(e.t, e.b.EnsureStream(e.ctx, cfg))
	drift := cfg
	drift.MaxMsgs, drift.MaxAge = 5, 2*time.Hour
	must(e.t, e.b.EnsureStream(e.ctx, drift)) // exists: left as it is
	info, err := e.b.StreamInfo(e.ctx, cfg.Name)
	must(e.t, err)
	if info.Config.MaxMsgs != 100 || info.Config.MaxAge != time.Hour || info.Msgs != 1 {
		e.t.Fatalf("EnsureStream changed an existing stream: %+v", info)
	}
	bad := cfg
	bad.Name = ""
	if err := e.b.EnsureStream(e.ctx, bad); err == nil {
		e.t.Fatal("EnsureStream accepted an empty name")
	}
	bad = cfg
	bad.Name = "has.dot"
	if err := e.b.EnsureStream(e.ctx, bad); err == nil || !strings.Contains(err.Error(), "has.dot") {
		e.t.Fatalf("EnsureStream with a dotted name: %v", err)
	}
}

func testAgentStreamConfig(e *env) {
	class := "BT" + e.id
	cfg := bus.AgentStream(class)
	cfg.Storage = bus.MemoryStorage // keep shared servers' disks clean; the rest is the reference's
	e.streams = append(e.streams, cfg.Name)
	must(e.t, e.b.EnsureStream(e.ctx, cfg))
	info, err := e.b.StreamInfo(e.ctx, cfg.Name)
	must(e.t, err)
	c := info.Config
	if c.Name != "agent_"+class+"_stream" || len(c.Subjects) != 1 || c.Subjects[0] != "agent."+class+".*.*.*.*.*.*.*" ||
		c.MaxMsgs != 10_000_000 || c.MaxAge != 30*24*time.Hour || c.Duplicates != 60*time.Second {
		e.t.Fatalf("agent stream config %+v", c)
	}
	rc := bus.RunnerConsumer(class)
	ch, _ := e.deliveries(rc)
	run := topic.Agent{Class: class, ID: "wiki", Thread: "t1", Display: "d1", Run: "r1"}
	subject, err := run.Event(topic.Control, "StartEvent", "e1").Subject()
	must(e.t, err)
	display, err := run.Event(topic.Display, "ChunkEvent", "e0").Subject()
	must(e.t, err)
	e.pub(display, "display", "")
	e.pub(subject, "control", "e1")
	d := recv(e.t, ch, "control event on the runner consumer")
	if d.Msg().Subject != subject {
		e.t.Fatalf("runner consumer got %q; its filter must pass control events only", d.Msg().Subject)
	}
	must(e.t, d.Ack(e.ctx))
}

func testNextMsg(e *env) {
	st := e.stream("nm")
	runA := func(n string) string { return e.subj("nm", "ra", "control_event", n) }
	runB := func(n string) string { return e.subj("nm", "rb", "control_event", n) }
	a1 := e.pub(runA("1"), "a1", "")
	e.pub(runB("1"), "b1", "")
	a2 := e.pub(runA("2"), "a2", "")
	filter := e.subj("nm", "ra", "control_event", "*")
	m, err := e.b.NextMsg(e.ctx, st, filter, 0)
	must(e.t, err)
	if m.Seq != a1.Seq || string(m.Data) != "a1" || m.Subject != runA("1") || m.Time.IsZero() {
		e.t.Fatalf("first: %+v", m)
	}
	m, err = e.b.NextMsg(e.ctx, st, filter, a1.Seq+1)
	must(e.t, err)
	if m.Seq != a2.Seq || string(m.Data) != "a2" {
		e.t.Fatalf("next: seq %d %q, want %d", m.Seq, m.Data, a2.Seq)
	}
	if _, err := e.b.NextMsg(e.ctx, st, filter, a2.Seq+1); !isNotFound(err) {
		e.t.Fatalf("past the end: %v, want ErrNotFound", err)
	}
	if _, err := e.b.NextMsg(e.ctx, e.prefix+"_nostream", filter, 1); !isNotFound(err) {
		e.t.Fatalf("missing stream: %v, want ErrNotFound", err)
	}
	if _, err := e.b.NextMsg(e.ctx, st, "bad..filter", 1); !errors.Is(err, bus.ErrInvalidSubject) {
		e.t.Fatalf("bad filter: %v, want ErrInvalidSubject", err)
	}
}

func testHasSubject(e *env) {
	st := e.stream("hs")
	subj := func(id string) string { return e.subj("hs", "r", "control_event", id) }
	e.pub(subj("e1"), "1", "")
	e.pub(subj("e2"), "2", "")
	for id, want := range map[string]bool{"e1": true, "e2": true, "e3": false} {
		got, err := e.b.HasSubject(e.ctx, st, subj(id))
		must(e.t, err)
		if got != want {
			e.t.Fatalf("HasSubject(%s) = %v, want %v", id, got, want)
		}
	}
	// Exact: a subject is not a pattern, and a prefix is not a match.
	if got, err := e.b.HasSubject(e.ctx, st, e.subj("hs", "r", "control_event", "e")); err != nil || got {
		e.t.Fatalf("HasSubject(prefix) = %v, %v; want false", got, err)
	}
	if _, err := e.b.HasSubject(e.ctx, e.prefix+"_nostream", subj("e1")); !isNotFound(err) {
		e.t.Fatalf("missing stream: %v, want ErrNotFound", err)
	}
	if _, err := e.b.HasSubject(e.ctx, st, "bad..subject"); !errors.Is(err, bus.ErrInvalidSubject) {
		e.t.Fatalf("bad subject: %v, want ErrInvalidSubject", err)
	}
}

// PublishNew refuses a second message on a subject however its msg id
// differs (no duplicate window is involved), and stores what is new.
func testPublishNew(e *env) {
	st := e.stream("pn")
	subj := e.subj("pn", "r", "control_event", "e1")
	a1, err := e.b.PublishNew(e.ctx, &bus.Msg{Subject: subj, Data: []byte("first")}, "id-1")
	must(e.t, err)
	if a1.Duplicate || a1.Seq == 0 {
		e.t.Fatalf("first PublishNew: %+v, want stored", a1)
	}
	a2, err := e.b.PublishNew(e.ctx, &bus.Msg{Subject: subj, Data: []byte("second")}, "id-2")
	must(e.t, err)
	if !a2.Duplicate || (a2.Seq != 0 && a2.Seq != a1.Seq) {
		e.t.Fatalf("second PublishNew on the subject: %+v, want a duplicate of #%d", a2, a1.Seq)
	}
	a3, err := e.b.PublishNew(e.ctx, &bus.Msg{Subject: e.subj("pn", "r", "control_event", "e2"), Data: []byte("other")}, "id-3")
	must(e.t, err)
	if a3.Duplicate || a3.Seq != a1.Seq+1 {
		e.t.Fatalf("PublishNew on another subject: %+v, want stored at #%d", a3, a1.Seq+1)
	}
	info, err := e.b.StreamInfo(e.ctx, st)
	must(e.t, err)
	if info.Msgs != 2 {
		e.t.Fatalf("stream holds %d messages, want 2", info.Msgs)
	}
	m, err := e.b.NextMsg(e.ctx, st, subj, 1)
	must(e.t, err)
	if string(m.Data) != "first" {
		e.t.Fatalf("subject holds %q, want the first message", m.Data)
	}
	// A plain publish is not fenced.
	if a := e.pub(subj, "plain", "id-4"); a.Duplicate {
		e.t.Fatalf("PublishStream after PublishNew: %+v, want stored", a)
	}
}

func testMaxMsgs(e *env) {
	cfg := bus.StreamConfig{Name: e.prefix + "_mm", Subjects: []string{e.subj("mm", ">")}, Storage: bus.MemoryStorage, MaxMsgs: 2}
	e.streams = append(e.streams, cfg.Name)
	must(e.t, e.b.EnsureStream(e.ctx, cfg))
	for i := range 3 {
		e.pub(e.subj("mm", strconv.Itoa(i)), strconv.Itoa(i), "")
	}
	info, err := e.b.StreamInfo(e.ctx, cfg.Name)
	must(e.t, err)
	if info.Msgs != 2 || info.FirstSeq != 2 || info.LastSeq != 3 {
		e.t.Fatalf("after 3 publishes into MaxMsgs 2: %+v; want the oldest discarded", info)
	}
	m, err := e.b.NextMsg(e.ctx, cfg.Name, "", 1)
	must(e.t, err)
	if m.Seq != 2 || string(m.Data) != "1" {
		e.t.Fatalf("first kept message #%d %q", m.Seq, m.Data)
	}
}

func testDeliverAll(e *env) {
	st := e.stream("da")
	for i := range 3 {
		e.pub(e.subj("da", strconv.Itoa(i)), strconv.Itoa(i), "")
	}
	// A new durable starts at the beginning of the stream (deliver all).
	ch, _ := e.deliveries(bus.ConsumerConfig{Stream: st, Durable: "late", AckWait: time.Minute})
	for i := range 3 {
		d := recv(e.t, ch, "history delivery")
		if d.Seq() != uint64(i+1) || string(d.Msg().Data) != strconv.Itoa(i) {
			e.t.Fatalf("history delivery %d: #%d %q", i, d.Seq(), d.Msg().Data)
		}
		must(e.t, d.Ack(e.ctx))
	}
}

func testMaxAckPending(e *env) {
	cfg := e.durable("ap", 5)
	cfg.AckWait, cfg.MaxAckPending = time.Minute, 2
	ch, _ := e.deliveries(cfg)
	for i := range 5 {
		e.pub(e.subj("ap", strconv.Itoa(i)), strconv.Itoa(i), "")
	}
	d1 := recv(e.t, ch, "delivery 1")
	recv(e.t, ch, "delivery 2")
	none(e.t, ch, e.quiet(e.ackWait), "delivery beyond MaxAckPending")
	must(e.t, d1.Ack(e.ctx))
	if d := recv(e.t, ch, "delivery after an ack freed a slot"); string(d.Msg().Data) != "2" {
		e.t.Fatalf("got %q, want the next message", d.Msg().Data)
	}
	none(e.t, ch, e.quiet(0), "second delivery for one freed slot")
}

func (e *env) durable(name string, maxDeliver int) bus.ConsumerConfig {
	return bus.ConsumerConfig{Stream: e.stream(name), Durable: "d" + name, AckWait: e.ackWait, MaxDeliver: maxDeliver}
}

func testRedelivery(e *env) {
	cfg := e.durable("rd", 5)
	ch, _ := e.deliveries(cfg)
	a := e.pub(e.subj("rd", "x"), "m", "")
	d1 := recv(e.t, ch, "first delivery")
	if d1.NumDelivered() != 1 || d1.Seq() != a.Seq {
		e.t.Fatalf("first delivery: delivered %d seq %d", d1.NumDelivered(), d1.Seq())
	}
	e.advance(e.ackWait) // not acked: due again
	d2 := recv(e.t, ch, "redelivery after AckWait")
	if d2.NumDelivered() != 2 || d2.Seq() != a.Seq || string(d2.Msg().Data) != "m" {
		e.t.Fatalf("redelivery: delivered %d seq %d %q", d2.NumDelivered(), d2.Seq(), d2.Msg().Data)
	}
	must(e.t, d2.Ack(e.ctx))
	e.advance(2 * e.ackWait)
	none(e.t, ch, e.quiet(2*e.ackWait), "redelivery after Ack")
}

func testMaxDeliver(e *env) {
	cfg := e.durable("md", 2)
	ch, _ := e.deliveries(cfg)
	e.pub(e.subj("md", "x"), "poison", "")
	recv(e.t, ch, "delivery 1")
	e.advance(e.ackWait)
	if d := recv(e.t, ch, "delivery 2"); d.NumDelivered() != 2 {
		e.t.Fatalf("delivery count %d", d.NumDelivered())
	}
	e.advance(e.ackWait)
	e.advance(e.ackWait)
	none(e.t, ch, e.quiet(2*e.ackWait), "delivery beyond MaxDeliver")
	// The consumer goes on with later messages.
	e.pub(e.subj("md", "y"), "next", "")
	if d := recv(e.t, ch, "next message"); string(d.Msg().Data) != "next" {
		e.t.Fatalf("got %q", d.Msg().Data)
	}
}

func testAck(e *env) {
	cfg := e.durable("ak", 5)
	ch, _ := e.deliveries(cfg)
	for i := range 3 {
		e.pub(e.subj("ak", strconv.Itoa(i)), strconv.Itoa(i), "")
	}
	for i := range 3 {
		d := recv(e.t, ch, "delivery")
		if string(d.Msg().Data) != strconv.Itoa(i) {
			e.t.Fatalf("delivery %d is %q: out of order", i, d.Msg().Data)
		}
		must(e.t, d.Ack(e.ctx))
	}
	e.advance(2 * e.ackWait)
	none(e.t, ch, e.quiet(2*e.ackWait), "redelivery of acked message")
}

func testNak(e *env) {
	cfg := e.durable("nk", 5)
	ch, _ := e.deliveries(cfg)
	e.pub(e.subj("nk", "x"), "m", "")
	d := recv(e.t, ch, "delivery")
	must(e.t, d.Nak(0))
	d2 := recv(e.t, ch, "redelivery after Nak")
	if d2.NumDelivered() != 2 || d2.Seq() != d.Seq() {
		e.t.Fatalf("after Nak: delivered %d seq %d", d2.NumDelivered(), d2.Seq())
	}
	must(e.t, d2.Ack(e.ctx))
}

func testNakDelay(e *env) {
	if !e.h.Features.NakDelay {
		e.t.Skipf("Nak with delay not supported: %s", e.h.Features.Reason)
	}
	cfg := e.durable("nd", 5)
	cfg.AckWait = time.Minute // only the Nak delay may bring it back
	ch, _ := e.deliveries(cfg)
	e.pub(e.subj("nd", "x"), "m", "")
	d := recv(e.t, ch, "delivery")
	delay := e.ackWait
	start := time.Now()
	must(e.t, d.Nak(delay))
	if e.tg.Advance != nil {
		none(e.t, ch, e.quiet(0), "redelivery before the Nak delay")
		e.advance(delay)
	}
	d2 := recv(e.t, ch, "redelivery after the Nak delay")
	if e.tg.Advance == nil && time.Since(start) < delay/2 {
		e.t.Fatalf("redelivered after %s, before the Nak delay of %s", time.Since(start), delay)
	}
	if d2.NumDelivered() != 2 {
		e.t.Fatalf("delivered %d", d2.NumDelivered())
	}
	must(e.t, d2.Ack(e.ctx))
}

func testTerm(e *env) {
	cfg := e.durable("tm", 5)
	ch, _ := e.deliveries(cfg)
	e.pub(e.subj("tm", "x"), "m", "")
	d := recv(e.t, ch, "delivery")
	must(e.t, d.Term("not for us"))
	e.advance(2 * e.ackWait)
	none(e.t, ch, e.quiet(2*e.ackWait), "redelivery after Term")
}

func testInProgress(e *env) {
	cfg := e.durable("ip", 5)
	// A longer AckWait than the other subtests leaves each heartbeat room
	// on a loaded machine: it only has to come within 3/4 of it.
	cfg.AckWait = 4 * e.ackWait
	ch, _ := e.deliveries(cfg)
	e.pub(e.subj("ip", "x"), "m", "")
	d := recv(e.t, ch, "delivery")
	// Work for two ack waits, heartbeating at a quarter of one.
	step := cfg.AckWait / 4
	for range 8 {
		if e.tg.Advance != nil {
			e.advance(step)
		} else {
			time.Sleep(step) // real work being simulated, not synchronisation
		}
		must(e.t, d.InProgress())
	}
	none(e.t, ch, 0, "redelivery while in progress")
	must(e.t, d.Ack(e.ctx))
	e.advance(2 * cfg.AckWait)
	none(e.t, ch, e.quiet(cfg.AckWait), "redelivery after in-progress then Ack")
}

func testSettleTwice(e *env) {
	cfg := e.durable("st", 5)
	ch, _ := e.deliveries(cfg)
	e.pub(e.subj("st", "x"), "m", "")
	d := recv(e.t, ch, "delivery")
	must(e.t, d.Ack(e.ctx))
	for name, err := range map[string]error{
		"Ack": d.Ack(e.ctx), "Nak": d.Nak(0), "Term": d.Term("x"), "InProgress": d.InProgress(),
		"DeadLetter": d.DeadLetter(e.ctx, "x"),
	} {
		if !errors.Is(err, bus.ErrSettled) {
			e.t.Errorf("%s after Ack: %v, want ErrSettled", name, err)
		}
	}
}

func testSharedDurable(e *env) {
	cfg := e.durable("sh", 5)
	cfg.AckWait = time.Minute
	var mu sync.Mutex
	by := map[string]int{}
	seen := map[uint64]int{}
	done := make(chan struct{}, 100)
	h := func(name string) func(bus.Delivery) {
		return func(d bus.Delivery) {
			mu.Lock()
			by[name]++
			seen[d.Seq()]++
			mu.Unlock()
			_ = d.Ack(e.ctx)
			done <- struct{}{}
		}
	}
	e.consume(cfg, h("one"))
	e.consume(cfg, h("two"))
	const n = 30
	for i := range n {
		e.pub(e.subj("sh", strconv.Itoa(i)), "m", "")
	}
	for range n {
		recv(e.t, done, "delivery to a member")
	}
	none(e.t, done, e.quiet(0), "extra delivery")
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != n {
		e.t.Fatalf("%d distinct messages delivered, want %d", len(seen), n)
	}
	for seq, k := range seen {
		if k != 1 {
			e.t.Fatalf("message %d delivered %d times across members", seq, k)
		}
	}
}

func testResume(e *env) {
	cfg := e.durable("rs", 5)
	ch, c := e.deliveries(cfg)
	e.pub(e.subj("rs", "x"), "m", "")
	d := recv(e.t, ch, "delivery")
	must(e.t, c.Stop())
	must(e.t, c.Stop())
	ch2, _ := e.deliveries(cfg)
	e.advance(e.ackWait)
	d2 := recv(e.t, ch2, "redelivery to the next consumer")
	if d2.Seq() != d.Seq() || d2.NumDelivered() != 2 {
		e.t.Fatalf("after resume: seq %d delivered %d", d2.Seq(), d2.NumDelivered())
	}
	must(e.t, d2.Ack(e.ctx))
	e.pub(e.subj("rs", "y"), "n", "")
	if d3 := recv(e.t, ch2, "new message"); string(d3.Msg().Data) != "n" {
		e.t.Fatalf("got %q", d3.Msg().Data)
	}
	none(e.t, ch, 0, "delivery to a stopped consumer")
}

func testReconcile(e *env) {
	cfg := e.durable("rc", 5)
	cfg.AckWait = time.Minute
	_, c := e.deliveries(cfg)
	must(e.t, c.Stop())
	// Same durable with a shorter AckWait: the consumer is updated, so the
	// redelivery comes after the new AckWait.
	cfg.AckWait = e.ackWait
	ch, c2 := e.deliveries(cfg)
	e.pub(e.subj("rc", "x"), "m", "")
	recv(e.t, ch, "delivery")
	e.advance(e.ackWait)
	d := recv(e.t, ch, "redelivery after the reconciled AckWait")
	if d.NumDelivered() != 2 {
		e.t.Fatalf("delivered %d", d.NumDelivered())
	}
	must(e.t, d.Ack(e.ctx))
	if !e.h.Features.ConsumerFilterUpdate {
		return
	}
	must(e.t, c2.Stop())
	cfg.FilterSubject = e.subj("rc", "only")
	ch3, _ := e.deliveries(cfg)
	e.pub(e.subj("rc", "other"), "skip", "")
	e.pub(e.subj("rc", "only"), "take", "")
	for {
		d := recv(e.t, ch3, "delivery under the new filter")
		if string(d.Msg().Data) == "skip" {
			e.t.Fatal("reconciled filter not applied")
		}
		if string(d.Msg().Data) == "take" {
			break
		}
	}
}

func (e *env) responder(pattern string, f func(m *bus.Msg)) {
	e.t.Helper()
	_, err := e.b.Subscribe(e.ctx, pattern, "", f)
	must(e.t, err)
	e.sync()
}

func testRequestReply(e *env) {
	e.responder(e.subj("rpc", "*"), func(m *bus.Msg) {
		_ = bus.Respond(e.ctx, e.b, m, append([]byte("echo:"), m.Data...), nil)
	})
	r, err := e.b.Request(e.ctx, &bus.Msg{Subject: e.subj("rpc", "a"), Data: []byte(`{"agent_class":"X"}`)})
	must(e.t, err)
	if string(r.Data) != `echo:{"agent_class":"X"}` {
		e.t.Fatalf("reply %q", r.Data)
	}
	// A config reply with "error": null is not an error.
	e.responder(e.subj("cfg", "*"), func(m *bus.Msg) {
		_ = bus.Respond(e.ctx, e.b, m, []byte(`{"found":true,"config":{},"error":null}`), nil)
	})
	if _, err := e.b.Request(e.ctx, &bus.Msg{Subject: e.subj("cfg", "a")}); err != nil {
		t := e.t
		t.Fatalf("config reply taken as an error: %v", err)
	}
}

func testErrorReplies(e *env) {
	e.responder(e.subj("typed"), func(m *bus.Msg) {
		_ = bus.RespondError(e.ctx, e.b, m, errors.New("no such agent"), "LookupError")
	})
	e.responder(e.subj("ref"), func(m *bus.Msg) {
		_ = bus.Respond(e.ctx, e.b, m, []byte(`{"error": "boom", "error_type": "ValueError"}`), nil)
	})
	for _, c := range []struct{ subject, msg, typ string }{
		{e.subj("typed"), "no such agent", "LookupError"},
		{e.subj("ref"), "boom", "ValueError"},
	} {
		r, err := e.b.Request(e.ctx, &bus.Msg{Subject: c.subject})
		var re *bus.RemoteError
		if !errors.As(err, &re) || re.Message != c.msg || re.Type != c.typ || r == nil {
			e.t.Fatalf("request to %s: reply %v, err %v; want RemoteError %s: %s", c.subject, r, err, c.typ, c.msg)
		}
		var body map[string]any
		if json.Unmarshal(r.Data, &body) != nil || body["error"] != c.msg {
			e.t.Fatalf("error reply body %q lacks the reference shape", r.Data)
		}
	}
}

func testNoResponders(e *env) {
	_, err := e.b.Request(e.ctx, &bus.Msg{Subject: e.subj("nobody")})
	if !errors.Is(err, bus.ErrNoResponders) {
		e.t.Fatalf("request without responders: %v, want ErrNoResponders", err)
	}
}

func testRequestTimeout(e *env) {
	e.responder(e.subj("slow"), func(*bus.Msg) {}) // never replies
	ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
	defer cancel()
	_, err := e.b.Request(ctx, &bus.Msg{Subject: e.subj("slow")})
	if !errors.Is(err, context.DeadlineExceeded) {
		e.t.Fatalf("request to a silent responder: %v, want DeadlineExceeded", err)
	}
}

func testHeaders(e *env) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(e.ctx, sc)
	member, _ := baggage.NewMember("tenant", "acme")
	bag, _ := baggage.New(member)
	ctx = baggage.ContextWithBaggage(ctx, bag)

	h := bus.Header{}
	h.Set("X-AIHub-Request-Id", "r-1")
	h.Set("x-aihub-user-agent", "ui")
	h.Set("Custom", "kept")

	st := e.stream("hd")
	core, _ := e.subscribe(e.subj("hd", ">"), "")
	e.sync()
	ch, _ := e.deliveries(bus.ConsumerConfig{Stream: st, Durable: "d", AckWait: time.Minute})
	_, err := e.b.PublishStream(ctx, &bus.Msg{Subject: e.subj("hd", "x"), Header: h, Data: []byte("{}")}, "hd-1")
	must(e.t, err)
	if len(h) != 3 {
		e.t.Fatalf("PublishStream modified the caller's header: %v", h)
	}
	d := recv(e.t, ch, "durable delivery")
	must(e.t, d.Ack(e.ctx))
	for name, m := range map[string]*bus.Msg{"core": recv(e.t, core, "core copy"), "durable": d.Msg()} {
		if got := m.Header.Get("traceparent"); got != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
			e.t.Fatalf("%s: traceparent (lower-case key) = %q; headers %v", name, got, m.Header)
		}
		got := trace.SpanContextFromContext(bus.ExtractTrace(context.Background(), m.Header))
		if got.TraceID() != tid || got.SpanID() != sid || !got.IsRemote() {
			e.t.Fatalf("%s: extracted span context %v", name, got)
		}
		if v := baggage.FromContext(bus.ExtractTrace(context.Background(), m.Header)).Member("tenant").Value(); v != "acme" {
			e.t.Fatalf("%s: baggage tenant = %q", name, v)
		}
		ai := bus.AIHubHeaders(m.Header)
		if ai["x-aihub-request-id"] != "r-1" || ai["x-aihub-user-agent"] != "ui" || len(ai) != 2 {
			e.t.Fatalf("%s: X-AIHub headers %v", name, ai)
		}
		if m.Header.Lookup("custom") != "kept" {
			e.t.Fatalf("%s: custom header lost: %v", name, m.Header)
		}
	}
	// Requests carry the trace too.
	e.responder(e.subj("hdrpc"), func(m *bus.Msg) {
		_ = bus.Respond(e.ctx, e.b, m, []byte(m.Header.Get("traceparent")), nil)
	})
	r, err := e.b.Request(ctx, &bus.Msg{Subject: e.subj("hdrpc")})
	must(e.t, err)
	if !strings.Contains(string(r.Data), tid.String()) {
		e.t.Fatalf("request carried traceparent %q", r.Data)
	}
}

func testDeadLetter(e *env) {
	cfg := e.durable("dl", 5)
	cfg.AckWait = time.Minute
	dlSub, _ := e.subscribe(e.dl.Prefix+".>", "")
	e.sync()
	handled := make(chan string, 10)
	e.consume(cfg, func(d bus.Delivery) {
		var v map[string]any
		if err := json.Unmarshal(d.Msg().Data, &v); err != nil {
			if err := d.DeadLetter(e.ctx, "undecodable: "+err.Error()); err != nil {
				e.t.Errorf("DeadLetter: %v", err)
			}
			return
		}
		_ = d.Ack(e.ctx)
		handled <- string(d.Msg().Data)
	})
	h := bus.Header{}
	h.Set("X-AIHub-Request-Id", "r-9")
	bad, err := e.b.PublishStream(e.ctx, &bus.Msg{Subject: e.subj("dl", "x"), Header: h, Data: []byte("{not json")}, "bad-1")
	must(e.t, err)
	e.pub(e.subj("dl", "y"), `{"ok":true}`, "good-1")
	if got := recv(e.t, handled, "the good message after the poison one"); got != `{"ok":true}` {
		e.t.Fatalf("handled %q", got)
	}
	letter := recv(e.t, dlSub, "dead letter")
	if letter.Subject != e.dl.Subject(e.subj("dl", "x")) || string(letter.Data) != "{not json" {
		e.t.Fatalf("dead letter %q %q", letter.Subject, letter.Data)
	}
	want := map[string]string{
		bus.HeaderDeadLetterSubject:    e.subj("dl", "x"),
		bus.HeaderDeadLetterStream:     cfg.Stream,
		bus.HeaderDeadLetterSeq:        strconv.FormatUint(bad.Seq, 10),
		bus.HeaderDeadLetterDeliveries: "1",
		"X-AIHub-Request-Id":           "r-9",
	}
	for k, v := range want {
		if got := letter.Header.Get(k); got != v {
			e.t.Errorf("dead letter header %s = %q, want %q", k, got, v)
		}
	}
	if r := letter.Header.Get(bus.HeaderDeadLetterReason); !strings.HasPrefix(r, "undecodable: ") {
		e.t.Errorf("reason %q", r)
	}
	// Kept in the dead-letter stream, not only sent.
	stored, err := e.b.NextMsg(e.ctx, e.dl.Stream, e.dl.Subject(">"), 1)
	must(e.t, err)
	if string(stored.Data) != "{not json" {
		e.t.Fatalf("dead-letter stream holds %q", stored.Data)
	}
	e.advance(2 * time.Minute)
	none(e.t, handled, e.quiet(0), "redelivery of a dead-lettered message")
}

func testInvalidSubject(e *env) {
	bads := []string{"", "a..b", ".a", "a.", "a b", "a\tb", "a\nb"}
	for _, s := range bads {
		if err := e.b.Publish(e.ctx, &bus.Msg{Subject: s}); !errors.Is(err, bus.ErrInvalidSubject) {
			e.t.Errorf("Publish(%q): %v, want ErrInvalidSubject", s, err)
		}
		if _, err := e.b.PublishStream(e.ctx, &bus.Msg{Subject: s}, ""); !errors.Is(err, bus.ErrInvalidSubject) {
			e.t.Errorf("PublishStream(%q): %v, want ErrInvalidSubject", s, err)
		}
		if _, err := e.b.Request(e.ctx, &bus.Msg{Subject: s}); !errors.Is(err, bus.ErrInvalidSubject) {
			e.t.Errorf("Request(%q): %v, want ErrInvalidSubject", s, err)
		}
	}
	for _, p := range append(bads, "a.>.b") {
		if _, err := e.b.Subscribe(e.ctx, p, "", func(*bus.Msg) {}); !errors.Is(err, bus.ErrInvalidSubject) {
			e.t.Errorf("Subscribe(%q): %v, want ErrInvalidSubject", p, err)
		}
	}
	if _, err := e.b.Subscribe(e.ctx, e.subj("ok"), "bad queue", func(*bus.Msg) {}); err == nil {
		e.t.Error("Subscribe accepted a queue name with a space")
	}
	if err := e.b.Publish(e.ctx, nil); err == nil {
		e.t.Error("Publish(nil) accepted")
	}
	h := bus.Header{"Bad Key": {"v"}}
	if err := e.b.Publish(e.ctx, &bus.Msg{Subject: e.subj("ok"), Header: h}); err == nil {
		e.t.Error("header key with a space accepted")
	}
}

func testPayloadTooLarge(e *env) {
	limit := e.b.MaxPayload()
	if limit <= 0 {
		e.t.Fatalf("MaxPayload = %d", limit)
	}
	big := make([]byte, limit+1)
	e.stream("big")
	errs := map[string]error{
		"Publish": e.b.Publish(e.ctx, &bus.Msg{Subject: e.subj("big", "x"), Data: big}),
	}
	_, errs["PublishStream"] = e.b.PublishStream(e.ctx, &bus.Msg{Subject: e.subj("big", "x"), Data: big}, "")
	_, errs["Request"] = e.b.Request(e.ctx, &bus.Msg{Subject: e.subj("big", "x"), Data: big})
	for name, err := range errs {
		if !errors.Is(err, bus.ErrPayloadTooLarge) || !strings.Contains(err.Error(), strconv.Itoa(limit)) {
			e.t.Errorf("%s of %d bytes: %v; want ErrPayloadTooLarge naming the limit %d", name, len(big), err, limit)
		}
	}
	// Within the limit is fine.
	must(e.t, e.b.Publish(e.ctx, &bus.Msg{Subject: e.subj("big", "x"), Data: big[:limit-64]}))
}

func testClosed(e *env) {
	must(e.t, e.b.Close())
	must(e.t, e.b.Close())
	if err := e.b.Publish(e.ctx, &bus.Msg{Subject: e.subj("x")}); !errors.Is(err, bus.ErrClosed) {
		e.t.Fatalf("Publish after Close: %v, want ErrClosed", err)
	}
	if _, err := e.b.Subscribe(e.ctx, e.subj("x"), "", func(*bus.Msg) {}); !errors.Is(err, bus.ErrClosed) {
		e.t.Fatalf("Subscribe after Close: %v, want ErrClosed", err)
	}
}
