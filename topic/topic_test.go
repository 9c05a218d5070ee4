package topic

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

const (
	thread  = "66b9f0a1c2d3e4f5a6b7c8d0"
	display = "66b9f0a1c2d3e4f5a6b7c8d1"
	run     = "66b9f0a1c2d3e4f5a6b7c8d2"
)

func must(tb testing.TB) func(string, error) string {
	return func(s string, err error) string {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return s
	}
}

// TestSubscriberPatterns checks the subscription subject of every
// subscriber of the Python platform against the builder here that
// produces it. The subjects are literal: a builder that drifts from the
// platform's pattern fails here.
func TestSubscriberPatterns(t *testing.T) {
	m := must(t)
	for _, c := range []struct {
		subscriber string
		got        []string
		want       []string
	}{
		{"AgentJSSubscriber.for_agent_class_control_events (agent runner)",
			[]string{m(ClassControl("RAGAgent"))},
			[]string{"agent.RAGAgent.*.*.*.*.control_event.*.*"}},
		{"AgentJSSubscriber.for_agent_instance_control_events",
			[]string{m(InstanceControl("RAGAgent", "wiki"))},
			[]string{"agent.RAGAgent.wiki.*.*.*.control_event.*.*"}},
		{"AgentNCSubscriber.for_all_agent_events (persister)",
			[]string{AllAgentEvents()},
			[]string{"agent.*.*.*.*.*.*.*.*"}},
		{"AgentNCSubscriber.for_all_agents_display_events",
			[]string{AllDisplayEvents()},
			[]string{"agent.*.*.*.*.*.display_event.*.*"}},
		// The gateway leaves class, id and run open.
		{"AgentNCSubscriber.for_thread_display_events",
			[]string{m(ThreadDisplay(thread, display))},
			[]string{"agent.*.*." + thread + "." + display + ".*.display_event.*.*"}},
		{"AgentNCSubscriber.for_all_thread_events",
			[]string{m(ThreadEvents("RAGAgent", "wiki", thread, display, run))},
			[]string{"agent.RAGAgent.wiki." + thread + "." + display + "." + run + ".*.*.*"}},
		{"AgentNCSubscriber.for_thread_control_events",
			[]string{m(ThreadControl("RAGAgent", "wiki", thread, display, run))},
			[]string{"agent.RAGAgent.wiki." + thread + "." + display + "." + run + ".control_event.*.*"}},
		{"AgentNCSubscriber.for_agent_class_discovery_request_events",
			[]string{DiscoveryRequests(KindAgent)},
			[]string{"class_discovery.agent.*.*.request.*"}},
		{"AgentNCSubscriber.for_agent_class_discovery_response_events",
			[]string{m(DiscoveryResponses(KindAgent, "c1"))},
			[]string{"class_discovery.agent.*.*.response.c1"}},
		{"AgentNCSubscriber.for_specific_control_event_in_agent_instance",
			[]string{m(InstanceControlEvent("RAGAgent", "wiki", "StopEvent"))},
			[]string{"agent.RAGAgent.wiki.*.*.*.control_event.StopEvent.*"}},
		{"ProcessJSSubscriber.for_process_class_work_events (process runner)",
			[]string{m(ProcessClassWork("RAGAgent"))},
			[]string{"process.RAGAgent.*.*.work.*.*"}},
		{"ProcessJSSubscriber.for_process_class_work_request_events",
			[]string{m(ProcessClassWorkRequests("RAGAgent"))},
			[]string{"process.RAGAgent.*.*.work_request.*.*"}},
		{"ProcessNCSubscriber.for_all_process_events",
			[]string{AllProcessEvents()},
			[]string{"process.*.*.*.*.*.*"}},
		{"ProcessNCSubscriber.for_process_class_discovery_request_events",
			[]string{DiscoveryRequests(KindProcess)},
			[]string{"class_discovery.process.*.*.request.*"}},
		{"NCResponder (config responders)",
			[]string{ConfigRequests(KindAgent), ConfigRequests(KindProcess)},
			[]string{"aihub.rpc.config.agent.*.*", "aihub.rpc.config.process.*.*"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: got %q, want %q", c.subscriber, c.got, c.want)
		}
	}
}

func TestStreams(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{StreamName("RAGAgent"), "agent_RAGAgent_stream"},
		{StreamSubject("RAGAgent"), "agent.RAGAgent.*.*.*.*.*.*.*"},
		{ProcessStreamName("Onboarding"), "process_Onboarding_stream"},
		{ProcessStreamSubject("Onboarding"), "process.Onboarding.*.*.*.*.*"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	// The stream subject must capture every agent subject of the class.
	for _, s := range []string{must(t)(ClassControl("RAGAgent")), AllAgentEvents()} {
		if strings.Count(s, ".") != strings.Count(StreamSubject("RAGAgent"), ".") {
			t.Errorf("%q and the stream subject differ in token count", s)
		}
	}
}

func TestAgentSubject(t *testing.T) {
	a := Agent{"MyChatAgent", "dev_agent", "t948", "d135", "r4fg", Control, "UserMessageEvent", "e423"}
	want := "agent.MyChatAgent.dev_agent.t948.d135.r4fg.control_event.UserMessageEvent.e423"
	if s, err := a.Subject(); s != want || err != nil {
		t.Fatalf("Subject() = %q, %v; want %q", s, err, want)
	}
	chunk := a.Event(Display, "ChunkEvent", "e424")
	if s := chunk.String(); s != "agent.MyChatAgent.dev_agent.t948.d135.r4fg.display_event.ChunkEvent.e424" {
		t.Errorf("Event: %q", s)
	}
	echo := UserEcho("9a1c-user", "t948", "d135", "r4fg", "UserMessageEvent", "e1")
	if s := must(t)(echo.Subject()); s != "agent.UserAgent.9a1c-user.t948.d135.r4fg.display_event.UserMessageEvent.e1" {
		t.Errorf("UserEcho: %q", s)
	}
	// A user id with a dot would shift every later token of the echo subject.
	_, err := UserEcho("first.last", "t", "d", "r", "UserMessageEvent", "e").Subject()
	if te := tokenErr(err); te == nil || te.Token != "agent_id" || te.Char != '.' || te.Pos != 5 {
		t.Errorf("UserEcho with a dot: %v", err)
	}
	// String never fails and shows bad tokens as they are.
	if s := (Agent{Class: "A b", Type: "weird"}).String(); s != "agent.A b.....weird.." {
		t.Errorf("String() = %q", s)
	}
	// Subject never lets a wildcard through.
	if _, err := (Agent{"X", "*", "t", "d", "r", Control, "N", "e"}).Subject(); tokenErr(err) == nil {
		t.Error("Subject accepted a \"*\" agent_id")
	}
}

func TestPatterns(t *testing.T) {
	m := must(t)
	for _, c := range []struct{ got, want string }{
		{m(RunControl("RAGAgent", run)), "agent.RAGAgent.*.*.*." + run + ".control_event.*.*"},
		{m(AgentPattern{}.Subject()), AllAgentEvents()},
		{m(AgentPattern{Type: Display}.Subject()), AllDisplayEvents()},
		{m(AgentPattern{Class: "X", ID: "*", Type: "*"}.Subject()), "agent.X.*.*.*.*.*.*.*"},
		{m(ThreadEvents("", "", thread, display, "")), "agent.*.*." + thread + "." + display + ".*.*.*.*"},
		{m(ProcessPattern{Class: "P", Walkthrough: "w"}.Subject()), "process.P.*.w.*.*.*"},
		{m(DiscoveryResponses(KindProcess, "c9")), "class_discovery.process.*.*.response.c9"},
		{ConfigRequests("user"), ""},
		{DiscoveryRequests("pipeline"), ""},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	// Pattern builders that need a concrete token refuse an empty one
	// rather than silently widening the subscription.
	for name, err := range map[string]error{
		"agent_class":   second(ClassControl("")),
		"agent_id":      second(InstanceControl("X", "")),
		"run_id":        second(RunControl("X", "")),
		"thread_id":     second(ThreadDisplay("", "d")),
		"display_id":    second(ThreadEvents("", "", "t", "", "")),
		"event_name":    second(InstanceControlEvent("X", "i", "")),
		"process_class": second(ProcessClassWork("")),
		"call_id":       second(DiscoveryResponses(KindAgent, "")),
	} {
		if te := tokenErr(err); te == nil || te.Token != name {
			t.Errorf("want an error naming %s, got %v", name, err)
		}
	}
	if _, err := (AgentPattern{Class: "a>b"}).Subject(); tokenErr(err) == nil || tokenErr(err).Char != '>' {
		t.Errorf("AgentPattern accepted '>': %v", err)
	}
	if _, err := (AgentPattern{Type: "work"}).Subject(); tokenErr(err) == nil {
		t.Error("AgentPattern accepted event type work")
	}
}

func second(_ string, err error) error { return err }

func TestProcessRPCDiscovery(t *testing.T) {
	m := must(t)
	p := Process{"Onboarding", AnyProcessID, "w1", Work, "HumanWorkEvent", "e1"}
	if s := m(p.Subject()); s != "process.Onboarding.*.w1.work.HumanWorkEvent.e1" {
		t.Errorf("process: %q", s)
	}
	if s := m(AgentConfig("RAGAgent", "wiki").Subject()); s != "aihub.rpc.config.agent.RAGAgent.wiki" {
		t.Errorf("AgentConfig: %q", s)
	}
	if s := m(ProcessConfig("P", "p1").Subject()); s != "aihub.rpc.config.process.P.p1" {
		t.Errorf("ProcessConfig: %q", s)
	}
	if _, err := AgentConfig("RAGAgent", "").Subject(); tokenErr(err) == nil || tokenErr(err).Token != "entity_id" {
		t.Errorf("AgentConfig with empty id: %v", err)
	}
	req := Discovery{Kind: KindAgent, Class: AnyClass, Dir: DirRequest, CallID: "c1"}
	if s := m(req.Subject()); s != "class_discovery.agent.*.*.request.c1" {
		t.Errorf("discovery request: %q", s)
	}
	resp := Discovery{Kind: KindAgent, Class: "RAGAgent", Dir: DirResponse, CallID: "c1"}
	if s := m(resp.Subject()); s != "class_discovery.agent.RAGAgent.*.response.c1" {
		t.Errorf("discovery response: %q", s)
	}
	if _, err := (Discovery{KindAgent, AnyClass, DirRequest, "*"}).Subject(); tokenErr(err) == nil {
		t.Error("Discovery.Subject accepted a \"*\" call_id")
	}
	if _, err := ParseDiscovery("class_discovery.agent.X.i1.request.c1"); tokenErr(err) == nil || tokenErr(err).Token != "instance" {
		t.Errorf("fourth discovery token other than *: %v", err)
	}
}

// TestParseSubjects parses real subjects seen on the wire and in the
// golden payloads' notes.
func TestParseSubjects(t *testing.T) {
	for _, c := range []struct {
		subject string
		want    any
	}{
		// Short placeholder ids, as in the platform's docs, are valid tokens.
		{"agent.MyChatAgent.dev_agent.t948.d135.r4fg.control_event.UserMessageEvent.e423",
			Agent{"MyChatAgent", "dev_agent", "t948", "d135", "r4fg", Control, "UserMessageEvent", "e423"}},
		{"agent.X.*.*.*.*.control_event.*.*", Agent{"X", "*", "*", "*", "*", Control, "*", "*"}},
		{"process.P.*.w.work_request.AgentWorkRequestEvent.e", Process{"P", "*", "w", WorkRequest, "AgentWorkRequestEvent", "e"}},
		{"aihub.rpc.config.agent.RAGAgent.wiki", RPC{"config", "agent", "RAGAgent", "wiki"}},
		{"aihub.rpc.config.agent.*.*", RPC{"config", "agent", "*", "*"}},
		{"class_discovery.agent.*.*.request.c1", Discovery{"agent", "*", "request", "c1"}},
	} {
		got, err := Parse(c.subject)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %#v, %v; want %#v", c.subject, got, err, c.want)
		}
	}
	for _, c := range []struct{ subject, wantErr string }{
		{"", `topic: subject "": subject does not match the grammar: unknown root ""`},
		{"agent.X", `topic: agent subject "agent.X": subject does not match the grammar: 2 tokens, want 9`},
		{"agent.>", "2 tokens, want 9"},
		{"agent.X.i.t.d.r.control_event.N.>", `"agent.X.i.t.d.r.control_event.N.>" at byte 32: invalid event_id ">": '>' (U+003E) at byte 0: wildcard (only pattern builders may use it)`},
		{"agent.X.i.t.d.r.control_event..e", `invalid event_name "": empty`},
		{"pipeline.a.b.to.c.d.k.N.e", `unknown root "pipeline"`},
		{"aihub.user.agent.X.i.j", `root "aihub.user", want "aihub.rpc"`},
		{"process.P.i.w.done.N.e", `invalid event_type "done": want "work", "work_request" or "*"`},
		{"class_discovery.bot.X.*.request.c", `invalid kind "bot": want "agent" or "process"`},
		{"agent.X.i.t\u00a0x.d.r.control_event.N.e", `at byte 11: invalid thread_id "t\u00a0x": '\u00a0' (U+00A0) at byte 1: whitespace`},
	} {
		v, err := Parse(c.subject)
		if err == nil || v != nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("Parse(%q) = %v, %v; want error containing %q", c.subject, v, err, c.wantErr)
		}
		var se *SubjectError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q): %T is not a *SubjectError", c.subject, err)
		}
	}
}

func TestValidateToken(t *testing.T) {
	for _, ok := range []string{"RAGAgent", "dev_agent", "9a1c-4f", "urn:x:y", "Zürich", "日本", "🙂", "a#b"} {
		if err := ValidateToken("t", ok); err != nil {
			t.Errorf("ValidateToken(%q) = %v", ok, err)
		}
	}
	err := ValidateToken("thread_id", "ab\xffc")
	if te := tokenErr(err); te == nil || te.Pos != 2 || te.Reason != "invalid UTF-8" {
		t.Errorf("invalid UTF-8: %v", err)
	}
	if got := err.Error(); got != `topic: invalid thread_id "ab\xffc": at byte 2: invalid UTF-8` {
		t.Errorf("message: %s", got)
	}
	long := strings.Repeat("é", 200) + " "
	if msg := ValidateToken("run_id", long).Error(); len(msg) > 250 || !strings.Contains(msg, "at byte 400") {
		t.Errorf("long value not clipped or position lost: %d bytes: %s", len(msg), msg)
	}
}

// TestAllocations pins the allocation budget: building a subject is one
// allocation, parsing none.
func TestAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	a := Agent{"RAGAgent", "wiki", thread, display, run, Control, "UserMessageEvent", "66b9f0a1c2d3e4f5a6b7c8d3"}
	s := must(t)(a.Subject())
	for name, c := range map[string]struct {
		f    func()
		want float64
	}{
		"Agent.Subject": {func() { _, _ = a.Subject() }, 1},
		"Agent.String":  {func() { _ = a.String() }, 1},
		"ParseAgent":    {func() { _, _ = ParseAgent(s) }, 0},
		"ClassControl":  {func() { _, _ = ClassControl("RAGAgent") }, 1},
	} {
		if got := testing.AllocsPerRun(100, c.f); got != c.want {
			t.Errorf("%s: %v allocations, want %v", name, got, c.want)
		}
	}
}

// TestWrongRoot: each grammar's parser rejects the others' subjects by
// their root, as ErrGrammar.
func TestWrongRoot(t *testing.T) {
	for name, err := range map[string]error{
		"agent":     second2(ParseAgent("process.a.b.c.d.e.f.g.h")),
		"process":   second2(ParseProcess("agent.a.b.c.d.e.f")),
		"rpc":       second2(ParseRPC("aihub.user.a.b.c.d")),
		"discovery": second2(ParseDiscovery("instance_discovery.agent.X.i.request.c")),
	} {
		var se *SubjectError
		if !errors.Is(err, ErrGrammar) || !errors.As(err, &se) || se.Grammar != name || !strings.Contains(err.Error(), "root") {
			t.Errorf("%s: err = %v, want a root ErrGrammar", name, err)
		}
	}
}

func second2[T any](_ T, err error) error { return err }

func TestPatternBuildersRequireTokens(t *testing.T) {
	for name, err := range map[string]error{
		"kind":           second(DiscoveryResponses("bot", "c1")),
		"run_id":         second(ThreadControl("X", "i", "t", "d", "")),
		"process_class":  second(ProcessClassWorkRequests("")),
		"walkthrough_id": second(ProcessPattern{Walkthrough: "w w"}.Subject()),
		"event_type":     second(ProcessPattern{Type: "control_event"}.Subject()),
	} {
		if te := tokenErr(err); te == nil || te.Token != name {
			t.Errorf("want an error naming %s, got %v", name, err)
		}
	}
	if _, err := (Process{"P", "*", "w", Work, "N", "e*"}).Subject(); tokenErr(err) == nil || tokenErr(err).Token != "event_id" {
		t.Errorf("Process.Subject accepted a wildcard in event_id: %v", err)
	}
}

func TestClipKeepsUTF8(t *testing.T) {
	s := strings.Repeat("a", 127) + "日本"
	got := clip(s)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) > 128+len("…") {
		t.Errorf("clip(%q) = %q", s, got)
	}
}

func TestAgentSubjects(t *testing.T) {
	a := Agent{Class: "C", ID: "i", Thread: "th", Display: "d", Run: "r", Type: Display, Name: "X", EventID: "x"}
	c, d, err := a.Subjects("ChunkEvent", "e1")
	if err != nil {
		t.Fatal(err)
	}
	wc, _ := a.Event(Control, "ChunkEvent", "e1").Subject()
	wd, _ := a.Event(Display, "ChunkEvent", "e1").Subject()
	if c != wc || d != wd {
		t.Fatalf("Subjects = %q, %q; want %q, %q", c, d, wc, wd)
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = a.Subjects("ChunkEvent", "e1") }); n != 1 {
		t.Fatalf("Subjects allocates %v times, want 1", n)
	}
	if _, _, err := a.Subjects("Bad.Name", "e1"); err == nil {
		t.Fatal("Subjects accepted an invalid event name")
	}
}

// Check fails exactly where Subject does.
func TestAgentCheck(t *testing.T) {
	long := strings.Repeat("x", MaxSubjectLen)
	for _, a := range []Agent{
		{Class: "C", ID: "i", Thread: "th", Display: "d", Run: "r", Type: Control, Name: "X", EventID: "x"},
		{Class: "C", ID: "i", Thread: "th", Display: "d", Run: "r", Type: "other", Name: "X", EventID: "x"},
		{Class: "C", ID: "", Thread: "th", Display: "d", Run: "r", Type: Display, Name: "X", EventID: "x"},
		{Class: "C", ID: "i", Thread: "th", Display: "d", Run: long[:200], Type: Display, Name: "X", EventID: long[:100]},
	} {
		_, want := a.Subject()
		got := a.Check()
		if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
			t.Errorf("Check(%v) = %v, Subject's error %v", a, got, want)
		}
		if n := testing.AllocsPerRun(10, func() { _ = a.Check() }); want == nil && n != 0 {
			t.Errorf("Check allocates %v times", n)
		}
	}
}
