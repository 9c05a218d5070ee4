package bus_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, subject string
		want             bool
	}{
		{"a.b.c", "a.b.c", true},
		{"a.*.c", "a.b.c", true},
		{"a.*.c", "a.b.d", false},
		{"a.>", "a.b.c", true},
		{"a.>", "a", false},
		{">", "a", true},
		{"*", "a", true},
		{"*", "a.b", false},
		{"a.*", "a", false},
		{"a.b", "a.b.c", false},
		{"a.b.c", "a.b", false},
		// A published literal "*" token: only "*" or ">" match it.
		{"a.*.c", "a.*.c", true},
		{"a.>", "a.*.c", true},
		{"a.b.c", "a.*.c", false},
		{"class_discovery.agent.*.*.request.*", "class_discovery.agent.*.*.request.c1", true},
		{"class_discovery.agent.RAG.*.request.*", "class_discovery.agent.*.*.request.c1", false},
		{"agent.X.*.*.*.*.control_event.*.*", "agent.X.i.t.d.r.control_event.Start.e", true},
		{"agent.X.*.*.*.*.control_event.*.*", "agent.X.i.t.d.r.display_event.Chunk.e", false},
		{"agent.X.*.*.*.r1.control_event.*.*", "agent.X.i.t.d.r2.control_event.Start.e", false},
	}
	for _, c := range cases {
		if got := bus.Match(c.pattern, c.subject); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.subject, got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, s := range []string{"a", "a.b", "a.*.b", "a.>", "*", "a.>.b"} {
		if err := bus.ValidateSubject(s); err != nil {
			t.Errorf("ValidateSubject(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", ".", "a.", ".a", "a..b", "a b", "a\x00b", "a\u00a0b"} {
		err := bus.ValidateSubject(s)
		if !errors.Is(err, bus.ErrInvalidSubject) {
			t.Errorf("ValidateSubject(%q) = %v, want ErrInvalidSubject", s, err)
		}
	}
	if err := bus.ValidatePattern("a.>.b"); !errors.Is(err, bus.ErrInvalidSubject) || !strings.Contains(err.Error(), "last token") {
		t.Errorf("ValidatePattern(a.>.b) = %v", err)
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("a.*.c", "a.b.c")
	f.Add("a.>", "a.*.c")
	f.Fuzz(func(t *testing.T, pattern, subject string) {
		if bus.ValidatePattern(pattern) != nil || bus.ValidateSubject(subject) != nil {
			return
		}
		got := bus.Match(pattern, subject)
		// A subject always matches itself when it has no wildcards, and
		// ">" matches everything.
		if !strings.ContainsAny(subject, "*>") && pattern == subject && !got {
			t.Fatalf("Match(%q, %q) = false", pattern, subject)
		}
		if !bus.Match(">", subject) {
			t.Fatalf("> does not match %q", subject)
		}
	})
}

func TestCheckMsg(t *testing.T) {
	h := bus.Header{"K": {"v"}}
	m := &bus.Msg{Subject: "a", Header: h, Data: make([]byte, 10)}
	size := 10 + len("NATS/1.0\r\n\r\n") + len("K: v\r\n")
	if err := bus.CheckMsg(m, size); err != nil {
		t.Fatalf("exactly at the limit: %v", err)
	}
	err := bus.CheckMsg(m, size-1)
	var pe *bus.PayloadError
	if !errors.Is(err, bus.ErrPayloadTooLarge) || !errors.As(err, &pe) || pe.Max != size-1 || pe.Size != size {
		t.Fatalf("over the limit: %v", err)
	}
	if err := bus.CheckMsg(&bus.Msg{Subject: "a", Header: bus.Header{"K": {"a\r\nb"}}}, 0); err == nil {
		t.Fatal("header value with CRLF accepted")
	}
	if err := bus.CheckMsg(&bus.Msg{Subject: "a", Reply: "b c"}, 0); !errors.Is(err, bus.ErrInvalidSubject) {
		t.Fatalf("bad reply subject: %v", err)
	}
}

func TestReplyError(t *testing.T) {
	cases := []struct {
		name string
		m    *bus.Msg
		want string // "" = not an error
	}{
		{"reference shape", &bus.Msg{Data: []byte(`{"error":"boom","error_type":"ValueError"}`)}, "ValueError: boom"},
		{"config ok", &bus.Msg{Data: []byte(`{"found":true,"config":{},"error":null}`)}, ""},
		{"config not found", &bus.Msg{Data: []byte(`{"found":false,"error":"missing"}`)}, ""},
		{"error without type", &bus.Msg{Data: []byte(`{"error":"x"}`)}, ""},
		{"null error with type", &bus.Msg{Data: []byte(`{"error":null,"error_type":"X"}`)}, ""},
		{"not json", &bus.Msg{Data: []byte(`error_type`)}, ""},
		{"array", &bus.Msg{Data: []byte(`[{"error":"x","error_type":"y"}]`)}, ""},
		{"typed header", &bus.Msg{Header: bus.Header{"saap-error": {"nope"}}}, "nope"},
	}
	for _, c := range cases {
		err := bus.ReplyError("s", c.m)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestHeaderLookupAndAIHub(t *testing.T) {
	h := bus.Header{"X-AIHub-Trace": {"1"}, "x-aihub-other": {"2"}, "Other": {"3"}}
	if h.Lookup("x-aihub-trace") != "1" || h.Lookup("OTHER") != "3" || h.Lookup("none") != "" {
		t.Fatalf("Lookup: %v", h)
	}
	ai := bus.AIHubHeaders(h)
	if len(ai) != 2 || ai["x-aihub-trace"] != "1" || ai["x-aihub-other"] != "2" {
		t.Fatalf("AIHubHeaders = %v", ai)
	}
	out := bus.CopyAIHubHeaders(nil, h)
	if len(out) != 2 || out.Get("X-AIHub-Trace") != "1" {
		t.Fatalf("CopyAIHubHeaders = %v", out)
	}
	if bus.InjectTrace(context.Background(), nil) != nil {
		t.Fatal("InjectTrace without a span created headers")
	}
}

func TestReferenceConfigs(t *testing.T) {
	s := bus.AgentStream("RAGAgent")
	if s.Name != "agent_RAGAgent_stream" || s.Subjects[0] != "agent.RAGAgent.*.*.*.*.*.*.*" || s.Storage != bus.FileStorage ||
		s.MaxMsgs != 10_000_000 || s.MaxAge != 30*24*time.Hour || s.Duplicates != time.Minute {
		t.Fatalf("AgentStream = %+v", s)
	}
	if s.Name != topic.StreamName("RAGAgent") || s.Subjects[0] != topic.StreamSubject("RAGAgent") {
		t.Fatalf("AgentStream disagrees with package topic")
	}
	c := bus.RunnerConsumer("RAGAgent")
	filter, _ := topic.ClassControl("RAGAgent")
	if c.Durable != "agent_runner_RAGAgent" || c.FilterSubject != filter || c.AckWait != 30*time.Second || c.MaxDeliver != 5 || c.Stream != s.Name {
		t.Fatalf("RunnerConsumer = %+v", c)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestReferenceConfigsRefuseBadClass: a class that is not a valid subject
// token is refused by Validate, naming the token, and the runner consumer's
// filter never widens to the whole stream.
func TestReferenceConfigsRefuseBadClass(t *testing.T) {
	for _, class := range []string{"", "a.b", "a b", "*", ">", "a\u00a0b", "bad\xff"} {
		s, c := bus.AgentStream(class), bus.RunnerConsumer(class)
		for name, err := range map[string]error{"AgentStream": s.Validate(), "RunnerConsumer": c.Validate()} {
			if !errors.Is(err, topic.ErrInvalidToken) || !strings.Contains(err.Error(), "agent_class") {
				t.Errorf("%s(%q).Validate() = %v, want an invalid agent_class token", name, class, err)
			}
		}
		b := memory.New(memory.Options{Manual: true})
		if err := b.EnsureStream(context.Background(), s); err == nil {
			t.Errorf("EnsureStream(AgentStream(%q)) succeeded", class)
		}
		if _, err := b.Consume(context.Background(), c, func(bus.Delivery) {}); !errors.Is(err, topic.ErrInvalidToken) {
			t.Errorf("Consume(RunnerConsumer(%q)) = %v, want an invalid agent_class token", class, err)
		}
		_ = b.Close()
	}
}

func TestBackoff(t *testing.T) {
	want := []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for n, w := range want {
		if got := bus.Backoff(uint64(n)); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", n, got, w)
		}
	}
}

// runTopic is a run's address with valid tokens.
var runTopic = topic.Agent{Class: "BusTest", ID: "a1", Thread: "t1", Display: "d1", Run: "r1"}

func manualBus(t *testing.T) *memory.Bus {
	b := memory.New(memory.Options{Manual: true, Clock: memory.NewManualClock(time.Unix(0, 0))})
	t.Cleanup(func() { _ = b.Close() })
	if err := b.EnsureStream(context.Background(), bus.AgentStream("BusTest")); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPublishEventRoutes(t *testing.T) {
	ctx := context.Background()
	b := manualBus(t)
	var got []string
	if _, err := b.Subscribe(ctx, topic.StreamSubject("BusTest"), "", func(m *bus.Msg) { got = append(got, m.Subject) }); err != nil {
		t.Fatal(err)
	}
	stop := event.Stamp(&event.StopEvent{})
	ack, err := bus.PublishEvent(ctx, b, runTopic, stop, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Seq != 1 || ack.Stream != "agent_BusTest_stream" {
		t.Fatalf("ack %+v", ack)
	}
	chunk := event.Stamp(&event.ChunkEvent{Content: "hi"})
	ack, err = bus.PublishEvent(ctx, b, runTopic, chunk, nil)
	if err != nil || ack != (bus.PubAck{}) {
		t.Fatalf("display-only: ack %+v err %v, want zero ack", ack, err)
	}
	b.DeliverAll(ctx)
	id, cid := stop.EventBase().EventID, chunk.EventBase().EventID
	want := []string{
		"agent.BusTest.a1.t1.d1.r1.control_event.StopEvent." + id, // control first
		"agent.BusTest.a1.t1.d1.r1.display_event.StopEvent." + id,
		"agent.BusTest.a1.t1.d1.r1.display_event.ChunkEvent." + cid,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("published\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	stored, err := b.NextMsg(ctx, "agent_BusTest_stream", ">", 1)
	if err != nil || stored.Header.Get("Nats-Msg-Id") != id {
		t.Fatalf("stored msg id %v, err %v; want event_id", stored, err)
	}
	// Re-publishing the same event is absorbed by the stream.
	if ack, err := bus.PublishEvent(ctx, b, runTopic, stop, nil); err != nil || !ack.Duplicate {
		t.Fatalf("republish: %+v %v", ack, err)
	}
}

func TestPublishEventRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	b := manualBus(t)
	bad := runTopic
	bad.Thread = "has.dot"
	_, err := bus.PublishEvent(ctx, b, bad, event.Stamp(&event.StopEvent{}), nil)
	var te *topic.TokenError
	if !errors.As(err, &te) {
		t.Fatalf("bad token: %v, want *topic.TokenError", err)
	}
	if b.Pending() != 0 {
		t.Fatal("something was published despite the bad token")
	}
	if _, err := bus.PublishEvent(ctx, b, runTopic, &event.StopEvent{}, nil); err == nil || !strings.Contains(err.Error(), "event_id") {
		t.Fatalf("no event id: %v", err)
	}
}

func TestHandleEventsSettles(t *testing.T) {
	ctx := context.Background()
	b := manualBus(t)
	var handled []string
	fail := map[string]error{}
	c, err := b.Consume(ctx, bus.RunnerConsumer("BusTest"), bus.HandleEvents(ctx, func(_ context.Context, d bus.Delivery, e event.Event) error {
		handled = append(handled, e.EventBase().EventID)
		return fail[e.EventBase().EventID]
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	dl, err := b.Subscribe(ctx, "deadletter.>", "", func(m *bus.Msg) {
		handled = append(handled, "dead:"+m.Header.Get(bus.HeaderDeadLetterReason))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Unsubscribe()

	ok := event.Stamp(&event.StopEvent{})
	perm := event.Stamp(&event.StopEvent{})
	fail[perm.EventBase().EventID] = bus.Permanent(errors.New("bad config"))
	retry := event.Stamp(&event.StopEvent{})
	fail[retry.EventBase().EventID] = errors.New("flaky")
	for _, e := range []event.Event{ok, perm, retry} {
		if _, err := bus.PublishEvent(ctx, b, runTopic, e, nil); err != nil {
			t.Fatal(err)
		}
	}
	poison := runTopic
	poison.Type, poison.Name, poison.EventID = topic.Control, "StopEvent", "poison"
	subj, _ := poison.Subject()
	if _, err := b.PublishStream(ctx, &bus.Msg{Subject: subj, Data: []byte("{")}, "poison"); err != nil {
		t.Fatal(err)
	}
	b.DeliverAll(ctx)
	got := strings.Join(handled, " ")
	for _, want := range []string{ok.EventBase().EventID, "dead:rejected: permanent failure: bad config", "dead:undecodable: "} {
		if !strings.Contains(got, want) {
			t.Fatalf("handled %q, missing %q", got, want)
		}
	}
	// The flaky one was naked with a backoff: back after 1 s.
	n := strings.Count(got, retry.EventBase().EventID)
	b.Clock().(*memory.ManualClock).Advance(time.Second)
	b.DeliverAll(ctx)
	if c := strings.Count(strings.Join(handled, " "), retry.EventBase().EventID); c != n+1 {
		t.Fatalf("flaky event handled %d times after the backoff, want %d", c, n+1)
	}
}

func FuzzReplyError(f *testing.F) {
	f.Add([]byte(`{"error":"boom","error_type":"ValueError"}`))
	f.Add([]byte(`{"found":true,"error":null}`))
	f.Add([]byte(`{"error":1,"error_type":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := bus.ReplyError("s", &bus.Msg{Data: data})
		var re *bus.RemoteError
		if err != nil && (!errors.As(err, &re) || re.Message == "") {
			t.Fatalf("ReplyError(%q) = %v", data, err)
		}
	})
}

func FuzzValidateSubject(f *testing.F) {
	f.Add("agent.X.*.*.*.*.control_event.*.*")
	f.Add("a..b")
	f.Fuzz(func(t *testing.T, s string) {
		err := bus.ValidateSubject(s)
		if err != nil && !errors.Is(err, bus.ErrInvalidSubject) {
			t.Fatalf("ValidateSubject(%q) = %v, not ErrInvalidSubject", s, err)
		}
		if err == nil && (s == "" || strings.Contains(s, "..") || strings.ContainsAny(s, " \t\r\n")) {
			t.Fatalf("ValidateSubject(%q) accepted", s)
		}
	})
}

// TestCheckSubscribe: what both buses refuse before subscribing, each
// error naming the problem.
func TestCheckSubscribe(t *testing.T) {
	h := func(*bus.Msg) {}
	cases := []struct {
		pattern, queue string
		h              func(*bus.Msg)
		want           string // "" for accepted
	}{
		{"a.*.>", "", h, ""},
		{"a.b", "workers", h, ""},
		{"a..b", "", h, "empty token"},
		{"a.>.b", "", h, `">" before its last token`},
		{"a.b", "bad queue", h, "queue group"},
		{"a.b", "", nil, "nil handler"},
	}
	for _, c := range cases {
		err := bus.CheckSubscribe(c.pattern, c.queue, c.h)
		if c.want == "" {
			if err != nil {
				t.Errorf("CheckSubscribe(%q, %q) = %v", c.pattern, c.queue, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckSubscribe(%q, %q) = %v, want an error about %s", c.pattern, c.queue, err, c.want)
		}
		if _, serr := memory.New(memory.Options{}).Subscribe(context.Background(), c.pattern, c.queue, c.h); serr == nil || serr.Error() != err.Error() {
			t.Errorf("memory Subscribe(%q, %q) = %v, want %v", c.pattern, c.queue, serr, err)
		}
	}
}

// TestSubjectLineLimit: a subject too long for the server's protocol line
// is refused before any I/O (NATS would drop the connection for good), and
// a dead letter of such a subject still has a subject that can be sent.
func TestSubjectLineLimit(t *testing.T) {
	long := "a." + strings.Repeat("x", bus.MaxWireSubjectLen)
	err := bus.CheckMsg(&bus.Msg{Subject: long}, 0)
	if !errors.Is(err, bus.ErrInvalidSubject) || !errors.Is(err, topic.ErrSubjectTooLong) {
		t.Fatalf("CheckMsg(long) = %v, want ErrInvalidSubject and topic.ErrSubjectTooLong", err)
	}
	if !strings.Contains(err.Error(), strconv.Itoa(bus.MaxWireSubjectLen)) {
		t.Fatalf("%q does not name the limit", err)
	}
	half := strings.Repeat("y", bus.MaxWireSubjectLen/2+1)
	if err := bus.CheckMsg(&bus.Msg{Subject: half, Reply: half}, 0); !errors.Is(err, topic.ErrSubjectTooLong) {
		t.Fatalf("subject plus reply over the limit: %v", err)
	}
	if err := bus.CheckSubscribe(long, "", func(*bus.Msg) {}); !errors.Is(err, topic.ErrSubjectTooLong) {
		t.Fatalf("CheckSubscribe(long) = %v", err)
	}
	if err := bus.CheckMsg(&bus.Msg{Subject: long[:bus.MaxWireSubjectLen]}, 0); err != nil {
		t.Fatalf("at the limit: %v", err)
	}

	dl := bus.DefaultDeadLetters()
	orig := "agent.C." + strings.Repeat("i", 4000) + ".t.d.r.control_event.E.e"
	letter, _ := dl.Letter(&bus.Msg{Subject: orig, Data: []byte("{}")}, "s", 1, 1, "why")
	if letter.Subject != "deadletter.agent.C."+bus.TooLongSubject {
		t.Fatalf("dead letter of an over-long subject goes to %.40q", letter.Subject)
	}
	if err := bus.CheckMsg(letter, 0); err != nil {
		t.Fatalf("the dead letter cannot be sent: %v", err)
	}
	if letter.Header.Get(bus.HeaderDeadLetterSubject) != orig {
		t.Fatal("the dead letter lost the original subject")
	}
	if got := dl.Subject("agent.x"); got != "deadletter.agent.x" {
		t.Fatalf("Subject(short) = %q", got)
	}
}

// TestDeadLetterFit: a dead letter that would be over the max payload
// drops the original payload, then the original headers, but keeps its own.
func TestDeadLetterFit(t *testing.T) {
	dl := bus.DefaultDeadLetters()
	m := &bus.Msg{Subject: "agent.x", Header: bus.Header{"X-Aihub-Big": {strings.Repeat("h", 3000)}}, Data: []byte(strings.Repeat("d", 5000))}
	letter, _ := dl.Letter(m, "s", 7, 3, "why")
	if got := bus.Fit(letter, 1<<20); got != letter {
		t.Fatal("a letter that fits was changed")
	}
	got := bus.Fit(letter, 4500)
	if len(got.Data) != 0 || got.Header.Get("X-Aihub-Big") == "" || got.Header.Get(bus.HeaderDeadLetterDropped) != "5000" {
		t.Fatalf("payload not dropped alone: %d bytes, headers %v", len(got.Data), len(got.Header))
	}
	if err := bus.CheckMsg(got, 4500); err != nil {
		t.Fatal(err)
	}
	got = bus.Fit(letter, 1024)
	if got.Header.Get("X-Aihub-Big") != "" || got.Header.Get(bus.HeaderDeadLetterReason) != "why" || got.Header.Get(bus.HeaderDeadLetterSeq) != "7" {
		t.Fatalf("headers %v", got.Header)
	}
	if err := bus.CheckMsg(got, 1024); err != nil {
		t.Fatal(err)
	}
	if letter.Header.Get(bus.HeaderDeadLetterDropped) != "" || len(letter.Data) != 5000 {
		t.Fatal("Fit changed its argument")
	}
}

func TestNamesWithinJetStreamLimit(t *testing.T) {
	long := strings.Repeat("C", bus.MaxNameLen)
	if err := bus.AgentStream(long).Validate(); err == nil || !strings.Contains(err.Error(), "255") {
		t.Fatalf("stream of a %d-byte class: %v, want an error naming the limit", len(long), err)
	}
	if err := bus.RunnerConsumer(long).Validate(); err == nil || !strings.Contains(err.Error(), "255") {
		t.Fatalf("consumer of a %d-byte class: %v", len(long), err)
	}
	if err := bus.AgentStream(strings.Repeat("C", 200)).Validate(); err != nil {
		t.Fatal(err)
	}
}
