package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Result is the stop event of the AITL test agents: the doubled number, or
// -1 when the delegate failed; From names the delegate's stop event.
type Result struct {
	event.StopEvent
	Value int    `json:"value"`
	From  string `json:"from"`
}

func init() { event.MustRegister[Result]() }

// doubler is the delegate: it doubles the number the user sends, and fails
// on "fail".
type doubler struct{ class string }

func (d *doubler) Class() string       { return d.class }
func (d *doubler) Steps() []*step.Step { return []*step.Step{step.New(d.Double)} }
func (d *doubler) Double(ctx step.Context, m *event.UserMessageEvent) (*Result, error) {
	n, err := strconv.Atoi(lastText(m))
	if err != nil {
		return nil, fmt.Errorf("not a number: %q", lastText(m))
	}
	return &Result{Value: 2 * n}, nil
}

func lastText(m *event.UserMessageEvent) string {
	if len(m.Messages) == 0 {
		return ""
	}
	return m.Messages[len(m.Messages)-1].Content()
}

// orchestrator delegates the user's message to its worker class and ends
// with the worker's answer (or -1 on the worker's failure).
type orchestrator struct {
	class, worker string
	opts          []hitl.DelegateOption
	raw           bool // build the request by hand, unchecked
}

func (o *orchestrator) Class() string { return o.class }
func (o *orchestrator) Steps() []*step.Step {
	return []*step.Step{step.New(o.Ask), step.New(o.Done), step.New(o.Failed), step.New(o.TimedOut)}
}

// TimedOut ends the run with -2 when the worker did not answer in time.
func (o *orchestrator) TimedOut(ctx step.Context, x *event.AgentInTheLoopTimeoutEvent) (*Result, error) {
	return &Result{Value: -2, From: event.Name(x)}, nil
}

func (o *orchestrator) Ask(ctx step.Context, m *event.UserMessageEvent) (*event.AgentInTheLoopRequestEvent, error) {
	if o.raw {
		return &event.AgentInTheLoopRequestEvent{StartEvent: event.Stamp(userMessage(lastText(m))),
			OtherAgentTopic: &event.Topic{AgentClass: event.Str(o.worker), AgentID: event.Str("w1")}, ShareThreadID: true, ShareDisplayID: true}, nil
	}
	return hitl.Delegate(o.worker, "w1", userMessage(lastText(m)), o.opts...)
}

func (o *orchestrator) Done(ctx step.Context, r *event.AgentInTheLoopResponseEvent) (*Result, error) {
	res := &Result{From: event.Name(r.StopEvent)}
	if w, ok := r.StopEvent.(*Result); ok {
		res.Value = w.Value
	}
	return res, nil
}

func (o *orchestrator) Failed(ctx step.Context, x *event.AgentInTheLoopExceptionEvent) (*Result, error) {
	return &Result{Value: -1, From: event.Name(x.ExceptionEvent)}, nil
}

// aitlOutcome waits for the caller run's terminal event and returns it with
// the run's control events.
func aitlOutcome(t *testing.T, b bus.Bus, w *watcher, run topic.Agent) (*Result, []event.Event) {
	t.Helper()
	term := w.terminal(t, run.Run)
	res, ok := term.(*Result)
	if !ok {
		t.Fatalf("caller run ended with %s; display events %s", event.Name(term), names(w.of(run.Run)))
	}
	return res, controlEvents(t, b, run.Class, run.Run)
}

func TestScenario39_AITLRoundTrip(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		c := client(t, tg.natsURL)
		caller, worker := uniqueClass("Orchestrator"), uniqueClass("Worker")
		dropStream(t, c, caller)
		dropStream(t, c, worker)
		store := storeFor(t, tg, c)
		startRunner(t, &doubler{class: worker}, agent.WithNATS(tg.natsURL), agent.Standalone(), store, quiet(t))
		startRunner(t, &orchestrator{class: caller, worker: worker}, agent.WithNATS(tg.natsURL), agent.Standalone(), store, quiet(t))
		w := watch(t, c, caller)

		for _, tc := range []struct {
			input string
			want  int
			resp  string
		}{{"8", 16, "AgentInTheLoopResponseEvent"}, {"fail", -1, "AgentInTheLoopExceptionEvent"}} {
			run := newRun(caller, "boss")
			publish(t, c, run, userMessage(tc.input), nil)
			res, evs := aitlOutcome(t, c, w, run)
			if res.Value != tc.want {
				t.Errorf("input %q: Result(%d), want %d; control events %s", tc.input, res.Value, tc.want, names(evs))
			}
			if n := count(evs, tc.resp); n != 1 {
				t.Errorf("input %q: %d %s in the caller's run, want exactly 1: %s", tc.input, n, tc.resp, names(evs))
			}
			if n := count(evs, "AgentInTheLoopResponseEvent") + count(evs, "AgentInTheLoopExceptionEvent"); n != 1 {
				t.Errorf("input %q: %d outcomes, want 1: %s", tc.input, n, names(evs))
			}
			var req *event.AgentInTheLoopRequestEvent
			for _, e := range evs {
				if r, ok := e.(*event.AgentInTheLoopRequestEvent); ok {
					req = r
				}
			}
			if req == nil {
				t.Fatalf("no request in the caller's run: %s", names(evs))
			}
			for _, e := range evs {
				var got string
				switch x := e.(type) {
				case *event.AgentInTheLoopResponseEvent:
					got = x.RequestEventID
				case *event.AgentInTheLoopExceptionEvent:
					got = x.RequestEventID
				default:
					continue
				}
				if got != req.EventID {
					t.Errorf("outcome carries request_event_id %q, want the request's %q", got, req.EventID)
				}
			}
		}
	})
}

// refDelegate answers start events of class the way a reference agent
// would: with reference-format JSON published on its own control subject.
// answer returns the payload of the stop or exception (nil: stay silent).
type refDelegate struct {
	mu     sync.Mutex
	starts []*bus.Msg
	seen   chan *bus.Msg
}

func startRefDelegate(t *testing.T, b bus.Bus, class string, answer func(start *bus.Msg, tp topic.Agent) (name string, payload []byte)) *refDelegate {
	t.Helper()
	if err := b.EnsureStream(context.Background(), bus.AgentStream(class)); err != nil {
		t.Fatal(err)
	}
	d := &refDelegate{seen: make(chan *bus.Msg, 16)}
	sub, err := b.Subscribe(context.Background(), "agent."+class+".*.*.*.*.control_event.*.*", "", func(m *bus.Msg) {
		tp, err := topic.ParseAgent(m.Subject)
		if err != nil {
			return
		}
		ev, err := event.Unmarshal(m.Data)
		if err != nil || !event.IsStart(ev) {
			return
		}
		d.mu.Lock()
		d.starts = append(d.starts, m)
		d.mu.Unlock()
		d.seen <- m
		name, payload := answer(m, tp)
		if payload == nil {
			return
		}
		id := event.NewID()
		subj, _ := tp.Event(topic.Control, name, id).Subject()
		payload = []byte(strings.Replace(string(payload), "EVENT_ID", id, 1))
		go func() { // a handler must not block on a stream publish
			if _, err := b.PublishStream(context.Background(), &bus.Msg{Subject: subj, Data: payload}, id); err != nil {
				t.Errorf("reference delegate: %v", err)
			}
		}()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return d
}

func (d *refDelegate) next(t *testing.T) *bus.Msg {
	t.Helper()
	select {
	case m := <-d.seen:
		return m
	case <-time.After(waitLong):
		t.Fatal("the delegate was never started")
		return nil
	}
}

// refStop is a reference-format stop event of a type the caller does not
// register.
const refStop = `{"event_id":"EVENT_ID","created_at":1755015358940833273,"_event_name":"WorkerDoneStop",` +
	`"_parent_event_names":["WorkerDoneStop","StopEvent","ControlAndDisplayEvent","ControlEvent","DisplayEvent"],` +
	`"display_name":{"en":"Stop"},"display_description":{"en":"Signals the end of a run."},"answer":"sixteen"}`

// TestAITLGoCallerReferenceDelegate: a Go caller delegates to an agent that
// speaks the reference's events; the start event arrives as the reference
// sends it (subject ids, share flags, trace context, no X-AIHub headers),
// and a stop type the caller does not know still comes back as a response.
func TestAITLGoCallerReferenceDelegate(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		c := client(t, tg.natsURL)
		caller, worker := uniqueClass("Orchestrator"), uniqueClass("RefWorker")
		dropStream(t, c, caller)
		dropStream(t, c, worker)
		d := startRefDelegate(t, c, worker, func(*bus.Msg, topic.Agent) (string, []byte) { return "WorkerDoneStop", []byte(refStop) })
		startRunner(t, &orchestrator{class: caller, worker: worker}, agent.WithNATS(tg.natsURL), agent.Standalone(),
			storeFor(t, tg, c), quiet(t))
		w := watch(t, c, caller)

		run := newRun(caller, "boss")
		const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		publish(t, c, run, userMessage("8"), bus.Header{"traceparent": {"00-" + traceID + "-00f067aa0ba902b7-01"},
			"X-AIHub-Client": {"secret-client"}})
		start := d.next(t)
		res, evs := aitlOutcome(t, c, w, run)
		if res.From != "WorkerDoneStop" {
			t.Errorf("caller saw %q as the delegate's stop, want the unregistered WorkerDoneStop", res.From)
		}
		if n := count(evs, "AgentInTheLoopResponseEvent"); n != 1 {
			t.Errorf("%d responses, want 1: %s", n, names(evs))
		}

		st, err := topic.ParseAgent(start.Subject)
		if err != nil {
			t.Fatal(err)
		}
		var req *event.AgentInTheLoopRequestEvent
		for _, e := range evs {
			if r, ok := e.(*event.AgentInTheLoopRequestEvent); ok {
				req = r
			}
		}
		if req == nil {
			t.Fatalf("no request: %s", names(evs))
		}
		se, _ := event.Unmarshal(start.Data)
		if st.ID != "w1" || st.Thread != run.Thread || st.Display != run.Display || st.Run == run.Run ||
			!event.IsObjectID(st.Run) || st.Name != "UserMessageEvent" || st.EventID != *req.OtherAgentTopic.EventID ||
			st.EventID == se.EventBase().EventID {
			t.Errorf("start subject %s: want agent w1, the caller's thread and display, a new run, "+
				"and other_agent_topic.event_id %s (not the payload's %s)", start.Subject, *req.OtherAgentTopic.EventID, se.EventBase().EventID)
		}
		if tp := start.Header.Lookup("traceparent"); !strings.Contains(tp, traceID) {
			t.Errorf("start event traceparent %q does not continue the caller's trace %s", tp, traceID)
		}
		for k := range start.Header {
			if strings.HasPrefix(strings.ToLower(k), "x-aihub") {
				t.Errorf("start event carries %s; the reference forwards no X-AIHub headers", k)
			}
		}
	})
}

// TestAITLSeparateThreadAndTwoDelegates: one run delegates to two agents at
// once, one of them in a thread and display of its own; each answer comes
// back to its own request.
func TestAITLSeparateThreadAndTwoDelegates(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	caller, w1, w2 := uniqueClass("Fan"), uniqueClass("RefA"), uniqueClass("RefB")
	answer := func(v string) func(*bus.Msg, topic.Agent) (string, []byte) {
		return func(*bus.Msg, topic.Agent) (string, []byte) {
			return "WorkerDoneStop", []byte(strings.Replace(refStop, "sixteen", v, 1))
		}
	}
	da := startRefDelegate(t, c, w1, answer("a"))
	db := startRefDelegate(t, c, w2, answer("b"))
	startRunner(t, &fanOut{class: caller, a: w1, b: w2}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))
	w := watch(t, c, caller)
	run := newRun(caller, "boss")
	publish(t, c, run, userMessage("go"), nil)
	term := w.terminal(t, run.Run)
	ans, ok := term.(*fanDone)
	if !ok || ans.Answers != "a+b" {
		t.Fatalf("terminal %s %+v, want fanDone a+b", event.Name(term), term)
	}
	sa, _ := topic.ParseAgent(da.next(t).Subject)
	sb, _ := topic.ParseAgent(db.next(t).Subject)
	if sa.Thread != run.Thread || sb.Thread == run.Thread || sb.Display == run.Display || sa.Run == sb.Run {
		t.Errorf("delegate subjects %v %v for caller %v: want a shared thread for A, a new thread and display for B", sa, sb, run)
	}
}

type fanDone struct {
	event.StopEvent
	Answers string `json:"answers"`
}

func init() { event.MustRegister[fanDone]() }

type fanOut struct{ class, a, b string }

func (f *fanOut) Class() string { return f.class }
func (f *fanOut) Steps() []*step.Step {
	return []*step.Step{step.New(f.Ask), step.New(f.Combine)}
}

func (f *fanOut) Ask(ctx step.Context, m *event.UserMessageEvent) ([]*event.AgentInTheLoopRequestEvent, error) {
	a, err := hitl.Delegate(f.a, "x", userMessage("a"))
	if err != nil {
		return nil, err
	}
	b, err := hitl.Delegate(f.b, "y", userMessage("b"), hitl.ShareThread(false), hitl.ShareDisplay(false))
	if err != nil {
		return nil, err
	}
	return []*event.AgentInTheLoopRequestEvent{a, b}, nil
}

// Combine runs when both answers are in; it orders them by the request
// they answer, not by arrival.
func (f *fanOut) Combine(ctx step.Context, rs [2]*event.AgentInTheLoopResponseEvent, req []*event.AgentInTheLoopRequestEvent) (*fanDone, error) {
	byReq := map[string]string{}
	for _, r := range rs {
		v, _ := event.Extra(r.StopEvent, "answer")
		var s string
		_ = json.Unmarshal(v, &s)
		byReq[r.RequestEventID] = s
	}
	var out []string
	for _, q := range req {
		out = append(out, byReq[q.EventID])
	}
	return &fanDone{Answers: strings.Join(out, "+")}, nil
}

// TestAITLReferenceCallerGoDelegate: a reference caller delegates to a Go
// agent as the reference does: the start event on the delegate's control
// subject with a subject event id other than the payload's, and a core
// subscription on the delegate run's control events for its stop.
func TestAITLReferenceCallerGoDelegate(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		c := client(t, tg.natsURL)
		worker := uniqueClass("Worker")
		dropStream(t, c, worker)
		startRunner(t, &doubler{class: worker}, agent.WithNATS(tg.natsURL), agent.Standalone(), storeFor(t, tg, c), quiet(t))
		run := newRun(worker, "w1")
		got := make(chan event.Event, 4)
		sub, err := c.Subscribe(context.Background(), "agent."+worker+".w1."+run.Thread+"."+run.Display+"."+run.Run+".control_event.*.*", "",
			func(m *bus.Msg) {
				if ev, err := event.Unmarshal(m.Data); err == nil && (event.IsStop(ev) || event.IsException(ev)) {
					got <- ev
				}
			})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sub.Unsubscribe() }()
		start := `{"event_id":"` + event.NewID() + `","created_at":1755015358940833273,"_event_name":"UserMessageEvent",` +
			`"_parent_event_names":["UserMessageEvent","StartEvent","ControlAndDisplayEvent","ControlEvent","DisplayEvent"],` +
			`"messages":[{"role":"user","additional_kwargs":{},"blocks":[{"block_type":"text","text":"21"}]}],` +
			`"user":{"id":"u1","name":"U","email":"u@example.com","roles":["user"]}}`
		subjectID := event.NewID()
		subj, _ := run.Event(topic.Control, "UserMessageEvent", subjectID).Subject()
		if _, err := c.PublishStream(context.Background(), &bus.Msg{Subject: subj, Data: []byte(start)}, subjectID); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-got:
			r, ok := ev.(*Result)
			if !ok || r.Value != 42 {
				t.Fatalf("delegate answered %s %+v, want Result(42)", event.Name(ev), ev)
			}
		case <-time.After(waitLong):
			t.Fatal("the Go delegate never answered the reference caller")
		}
	})
}

// TestAITLCallerRestart: the caller's runner stops after delegating; the
// delegate answers while no caller runs; a new caller runner brings the
// answer into the run, which completes.
func TestAITLCallerRestart(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	caller, worker := uniqueClass("Orchestrator"), uniqueClass("RefWorker")
	d := startRefDelegate(t, c, worker, func(*bus.Msg, topic.Agent) (string, []byte) { return "", nil })
	store := agent.WithStore(newStore(t, target{natsURL: s.URL()}, c))
	first := startRunner(t, &orchestrator{class: caller, worker: worker}, agent.WithNATS(s.URL()), agent.Standalone(), store, quiet(t))
	w := watch(t, c, caller)
	run := newRun(caller, "boss")
	publish(t, c, run, userMessage("8"), nil)
	start := d.next(t)
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	// The delegate answers while no caller runs.
	tp, _ := topic.ParseAgent(start.Subject)
	id := event.NewID()
	subj, _ := tp.Event(topic.Control, "WorkerDoneStop", id).Subject()
	if _, err := c.PublishStream(context.Background(), &bus.Msg{Subject: subj, Data: []byte(strings.Replace(refStop, "EVENT_ID", id, 1))}, id); err != nil {
		t.Fatal(err)
	}
	startRunner(t, &orchestrator{class: caller, worker: worker}, agent.WithNATS(s.URL()), agent.Standalone(), store, quiet(t))
	res, evs := aitlOutcome(t, c, w, run)
	if res.From != "WorkerDoneStop" || count(evs, "AgentInTheLoopResponseEvent") != 1 {
		t.Errorf("after the restart: %+v, events %s", res, names(evs))
	}
}

// waitDrained waits until the durable consumer durable on stream has
// handled every message it holds.
func waitDrained(t *testing.T, c *natsbus.Bus, stream, durable string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	for {
		ci, err := c.JetStream().Consumer(ctx, stream, durable)
		if err != nil {
			t.Fatal(err)
		}
		info, err := ci.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumPending == 0 && info.NumAckPending == 0 {
			return
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("consumer %s never drained: pending %d, ack pending %d", durable, info.NumPending, info.NumAckPending)
		}
	}
}

// TestScenario40_AITLTimeout: a delegation with a timeout of 0.1 s to a
// silent delegate ends in exactly one AgentInTheLoopTimeoutEvent carrying
// request_event_id; the delegate's late answer is dropped. With a delegate
// that answers first, no timeout event is ever published.
func TestScenario40_AITLTimeout(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		c := client(t, tg.natsURL)
		caller, silent, quick := uniqueClass("Orchestrator"), uniqueClass("Silent"), uniqueClass("Quick")
		for _, cl := range []string{caller, silent, quick} {
			dropStream(t, c, cl)
		}
		d := startRefDelegate(t, c, silent, func(*bus.Msg, topic.Agent) (string, []byte) { return "", nil })
		startRefDelegate(t, c, quick, func(*bus.Msg, topic.Agent) (string, []byte) { return "WorkerDoneStop", []byte(refStop) })
		store := storeFor(t, tg, c)
		startRunner(t, &orchestrator{class: caller, worker: silent, opts: []hitl.DelegateOption{hitl.DelegateTimeout(100 * time.Millisecond)}},
			agent.WithNATS(tg.natsURL), agent.Standalone(), store, quiet(t))
		w := watch(t, c, caller)

		run := newRun(caller, "boss")
		publish(t, c, run, userMessage("8"), nil)
		start := d.next(t)
		res, evs := aitlOutcome(t, c, w, run)
		if res.Value != -2 || count(evs, "AgentInTheLoopTimeoutEvent") != 1 {
			t.Fatalf("silent delegate: Result(%d) from %s; events %s; want one AgentInTheLoopTimeoutEvent", res.Value, res.From, names(evs))
		}
		var req *event.AgentInTheLoopRequestEvent
		for _, e := range evs {
			switch x := e.(type) {
			case *event.AgentInTheLoopRequestEvent:
				req = x
			case *event.AgentInTheLoopTimeoutEvent:
				if req == nil || x.RequestEventID != req.EventID {
					t.Errorf("timeout carries request_event_id %q, want the request's", x.RequestEventID)
				}
				// A Python caller knows no timeout class: it reads the event
				// as the deepest class it knows, the AITL exception the
				// reference ends a silent delegation with.
				typ, _ := event.TypeOf(x)
				if len(typ.Parents) < 2 || typ.Parents[1] != "AgentInTheLoopExceptionEvent" {
					t.Errorf("timeout parents %v: a Python caller would not see an AITL exception", typ.Parents)
				}
				exc, ok := x.ExceptionEvent.(*event.ExceptionEvent)
				if !ok || !strings.Contains(exc.Message, "did not answer") || !strings.Contains(exc.Message, x.RequestEventID) {
					t.Errorf("timeout's exception_event %#v", x.ExceptionEvent)
				}
			}
		}
		tp, _ := topic.ParseAgent(start.Subject)
		// The request names the delegate run's thread, display and run, as
		// the reference's does.
		if req == nil {
			t.Fatal("no AgentInTheLoopRequestEvent in the caller's run")
		}
		if ot := req.OtherAgentTopic; ot == nil || ot.ThreadID == nil || *ot.ThreadID != tp.Thread ||
			ot.DisplayID == nil || *ot.DisplayID != tp.Display || ot.RunID == nil || *ot.RunID != tp.Run {
			t.Errorf("other_agent_topic %+v does not name the delegate run %s", req.OtherAgentTopic, start.Subject)
		}
		// The delegate answers late: nothing more reaches the caller's run.
		id := event.NewID()
		subj, _ := tp.Event(topic.Control, "WorkerDoneStop", id).Subject()
		if _, err := c.PublishStream(context.Background(), &bus.Msg{Subject: subj, Data: []byte(strings.Replace(refStop, "EVENT_ID", id, 1))}, id); err != nil {
			t.Fatal(err)
		}
		waitDrained(t, c, topic.StreamName(silent), "aitl_"+caller+"_"+silent)
		if after := controlEvents(t, c, caller, run.Run); count(after, "AgentInTheLoopResponseEvent") != 0 || count(after, "Result") != 1 {
			t.Errorf("after the late answer: %s, want no response and one Result", names(after))
		}

		// A delegate that answers first: one response, never a timeout.
		caller2 := uniqueClass("Orchestrator")
		dropStream(t, c, caller2)
		startRunner(t, &orchestrator{class: caller2, worker: quick, opts: []hitl.DelegateOption{hitl.DelegateTimeout(time.Second)}},
			agent.WithNATS(tg.natsURL), agent.Standalone(), store, quiet(t))
		w2 := watch(t, c, caller2)
		run2 := newRun(caller2, "boss")
		publish(t, c, run2, userMessage("8"), nil)
		res, _ = aitlOutcome(t, c, w2, run2)
		if res.From != "WorkerDoneStop" {
			t.Fatalf("quick delegate: Result from %s, want the delegate's stop", res.From)
		}
		// Absence can only be observed by waiting past the deadline.
		time.Sleep(1500 * time.Millisecond)
		if evs := controlEvents(t, c, caller2, run2.Run); count(evs, "AgentInTheLoopTimeoutEvent") != 0 ||
			count(evs, "AgentInTheLoopResponseEvent") != 1 {
			t.Errorf("quick delegate: %s, want one response and no timeout", names(evs))
		}
	})
}

// TestAITLUndeliverableRequest: a request whose delegate cannot be
// addressed gets an AgentInTheLoopExceptionEvent, so the run does not wait
// for ever.
func TestAITLUndeliverableRequest(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	caller := uniqueClass("Orchestrator")
	startRunner(t, &orchestrator{class: caller, worker: "", raw: true}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))
	w := watch(t, c, caller)
	run := newRun(caller, "boss")
	publish(t, c, run, userMessage("8"), nil)
	res, evs := aitlOutcome(t, c, w, run)
	if res.Value != -1 || count(evs, "AgentInTheLoopExceptionEvent") != 1 {
		t.Fatalf("Result(%d); events %s; want the exception path", res.Value, names(evs))
	}
	for _, e := range evs {
		if x, ok := e.(*event.AgentInTheLoopExceptionEvent); ok {
			if m := x.ExceptionEvent.(*event.ExceptionEvent).Message; !strings.Contains(m, "other_agent_topic") {
				t.Errorf("exception message %q does not say what was wrong", m)
			}
		}
	}
}

// TestAITLHistoryNotReplayed: AITL requests stored in the caller's stream
// before its runner ever ran (a Python runner's, say) start no delegate.
func TestAITLHistoryNotReplayed(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	caller, worker := uniqueClass("Orchestrator"), uniqueClass("RefWorker")
	d := startRefDelegate(t, c, worker, func(*bus.Msg, topic.Agent) (string, []byte) { return "WorkerDoneStop", []byte(refStop) })
	if err := c.EnsureStream(context.Background(), bus.AgentStream(caller)); err != nil {
		t.Fatal(err)
	}
	old, err := hitl.Delegate(worker, "w1", userMessage("old"))
	if err != nil {
		t.Fatal(err)
	}
	publish(t, c, newRun(caller, "boss"), old, nil)

	startRunner(t, &orchestrator{class: caller, worker: worker}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))
	w := watch(t, c, caller)
	run := newRun(caller, "boss")
	publish(t, c, run, userMessage("8"), nil)
	aitlOutcome(t, c, w, run)
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.starts) != 1 {
		t.Errorf("delegate started %d times, want once (the old request must not be replayed)", len(d.starts))
	}
}
