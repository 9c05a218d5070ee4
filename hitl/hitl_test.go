package hitl_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/engine"

	"github.com/saap-go/agent/agenttest"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Decision ends an approval run.
type Decision struct {
	event.StopEvent
	Outcome string `json:"outcome"`
}

// Noted records an outcome without ending the run, so that a late answer
// still meets the run's fence.
type Noted struct {
	event.ControlEvent
	Outcome string `json:"outcome"`
}

func init() {
	event.MustRegister[Decision]()
	event.MustRegister[Noted]()
}

// noting is approval whose outcomes do not end the run.
func noting(t *testing.T) *step.Workflow {
	t.Helper()
	ask := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.HumanInTheLoopConfirmationRequestEvent, error) {
		return hitl.Confirm("Approve?", hitl.Timeout(30*time.Second))
	}, step.Name("ask"))
	decide := step.New(func(ctx step.Context, r *event.HumanInTheLoopConfirmationResponseEvent) (*Noted, error) {
		return &Noted{Outcome: "answered"}, nil
	}, step.Name("decide"))
	expire := step.New(func(ctx step.Context, to *event.HumanInTheLoopTimeoutEvent) (*Noted, error) {
		return &Noted{Outcome: "timed out"}, nil
	}, step.Name("expire"))
	// Ends the run at a second outcome, which the fence never lets happen.
	finish := step.New(func(ctx step.Context, _ [2]*Noted) (*Decision, error) {
		return &Decision{}, nil
	}, step.Name("finish"))
	w, err := step.NewWorkflow("Notes", ask, decide, expire, finish)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// approval asks for a confirmation with a timeout and ends with what
// happened: approved, rejected or timed out.
func approval(t *testing.T, timeout time.Duration) *step.Workflow {
	t.Helper()
	ask := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.HumanInTheLoopConfirmationRequestEvent, error) {
		return hitl.Confirm("Approve the expense of 1200 CHF?", hitl.Timeout(timeout))
	}, step.Name("ask"))
	decide := step.New(func(ctx step.Context, r *event.HumanInTheLoopConfirmationResponseEvent) (*Decision, error) {
		if r.Response {
			return &Decision{Outcome: "approved"}, nil
		}
		return &Decision{Outcome: "rejected"}, nil
	}, step.Name("decide"))
	expire := step.New(func(ctx step.Context, to *event.HumanInTheLoopTimeoutEvent) (*Decision, error) {
		return &Decision{Outcome: "timed out after " + time.Duration(to.TimeoutSeconds*float64(time.Second)).String()}, nil
	}, step.Name("expire"))
	w, err := step.NewWorkflow("Expenses", ask, decide, expire)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func outcome(t *testing.T, res *agenttest.Result) string {
	t.Helper()
	d, ok := res.Terminal().(*Decision)
	if !ok {
		t.Fatalf("terminal = %#v, want a Decision", res.Terminal())
	}
	return d.Outcome
}

func request(t *testing.T, res *agenttest.Result) *event.HumanInTheLoopConfirmationRequestEvent {
	t.Helper()
	reqs := res.Get("HumanInTheLoopConfirmationRequestEvent")
	if len(reqs) != 1 {
		t.Fatalf("%d requests published, want 1", len(reqs))
	}
	return reqs[0].(*event.HumanInTheLoopConfirmationRequestEvent)
}

// The engine completes the request's topic with the run's ids and the
// request's event id; the factory's event type and name and the timeout
// travel on the wire.
func TestTopicCompletion(t *testing.T) {
	h := agenttest.New(t, approval(t, time.Minute))
	res := h.Start(&event.StartEvent{}, agenttest.Thread("thread-1"))
	req := request(t, res)
	tp := res.Topic()
	got := req.Topic
	for _, f := range []struct{ name, got, want string }{
		{"agent_class", *got.AgentClass, "Expenses"},
		{"agent_id", *got.AgentID, tp.ID},
		{"thread_id", *got.ThreadID, "thread-1"},
		{"display_id", *got.DisplayID, tp.Display},
		{"run_id", *got.RunID, tp.Run},
		{"event_id", *got.EventID, req.EventID},
		{"event_type", *got.EventType, "control_event"},
		{"event_name", *got.EventName, "HumanInTheLoopConfirmationResponseEvent"},
	} {
		if f.got != f.want {
			t.Errorf("topic.%s = %q, want %q", f.name, f.got, f.want)
		}
	}
	if req.HITLType != event.HITLConfirmation {
		t.Errorf("hitl_type = %q", req.HITLType)
	}
	if d, ok := hitl.TimeoutOf(req); !ok || d != time.Minute {
		t.Errorf("timeout of the published request = %v, %v; want 1m", d, ok)
	}
	data, err := event.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"timeout_seconds": 60`) {
		t.Errorf("request on the wire lacks timeout_seconds: %s", data)
	}
	if res.Terminal() != nil {
		t.Fatalf("run ended while waiting: %v", res.Terminal())
	}
}

// With no answer, exactly one timeout event enters the run when the
// deadline passes, and not before; its id is derived from the request.
func TestTimeoutFires(t *testing.T) {
	h := agenttest.New(t, approval(t, 30*time.Second))
	res := h.Start(&event.StartEvent{})
	req := request(t, res)
	if n := h.PendingTimeouts(); n != 1 {
		t.Fatalf("%d pending timeouts, want 1", n)
	}
	h.Advance(29 * time.Second)
	if n := res.Count("HumanInTheLoopTimeoutEvent"); n != 0 || res.Terminal() != nil {
		t.Fatalf("before the deadline: %d timeouts, terminal %v", n, res.Terminal())
	}
	h.Advance(time.Second)
	tos := res.Get("HumanInTheLoopTimeoutEvent")
	if len(tos) != 1 {
		t.Fatalf("%d timeout events, want 1", len(tos))
	}
	to := tos[0].(*event.HumanInTheLoopTimeoutEvent)
	if to.RequestEventID != req.EventID || to.TimeoutSeconds != 30 {
		t.Errorf("timeout = %+v, want request %s and 30 s", to.WaitTimeoutEvent, req.EventID)
	}
	if got := outcome(t, res); got != "timed out after 30s" {
		t.Errorf("outcome %q", got)
	}
	h.Advance(time.Hour)
	if n := res.Count("HumanInTheLoopTimeoutEvent"); n != 1 {
		t.Errorf("%d timeout events after an hour more, want 1", n)
	}
	if n := h.PendingTimeouts(); n != 0 {
		t.Errorf("%d pending timeouts after firing, want 0", n)
	}
	keys, err := engine.PendingDeadlines(context.Background(), h.Store(), "Expenses")
	if err != nil || len(keys) != 0 {
		t.Errorf("deadlines left in the store: %v %v", keys, err)
	}
}

// An answer in time removes the deadline: nothing fires later.
func TestAnswerCancelsTimeout(t *testing.T) {
	h := agenttest.New(t, approval(t, 30*time.Second))
	res := h.Start(&event.StartEvent{})
	req := request(t, res)
	h.Advance(10 * time.Second)
	h.Send(res, &event.HumanInTheLoopConfirmationResponseEvent{Response: true, RequestEvent: req})
	if got := outcome(t, res); got != "approved" {
		t.Fatalf("outcome %q", got)
	}
	if n := h.PendingTimeouts(); n != 0 {
		t.Errorf("%d pending timeouts after the answer", n)
	}
	keys, _ := engine.PendingDeadlines(context.Background(), h.Store(), "Expenses")
	if len(keys) != 0 {
		t.Errorf("deadline kept after the answer: %v", keys)
	}
	h.Advance(time.Minute)
	if n := res.Count("HumanInTheLoopTimeoutEvent"); n != 0 {
		t.Errorf("%d timeout events after an answer", n)
	}
}

// An answer and a timeout both in the stream before either is handled: the
// first handled wins, the other is dead-lettered with a reason, and the
// run has exactly one outcome, in both orders.
func TestAnswerTimeoutRace(t *testing.T) {
	for _, first := range []string{"HumanInTheLoopConfirmationResponseEvent", "HumanInTheLoopTimeoutEvent"} {
		t.Run(first, func(t *testing.T) {
			h := agenttest.New(t, noting(t), agenttest.Order(func(p []agenttest.Pending) int {
				for i, x := range p {
					if x.Topic.Name == first {
						return i
					}
				}
				return 0
			}))
			res := h.Start(&event.StartEvent{})
			req := res.Get("HumanInTheLoopConfirmationRequestEvent")[0].(*event.HumanInTheLoopConfirmationRequestEvent)
			// The answer goes into the stream unhandled; the deadline
			// passes; both are handed to the engine in the chosen order.
			ans := &event.HumanInTheLoopConfirmationResponseEvent{Response: false, RequestEvent: req}
			ans.EventID, ans.CreatedAt = h.NewID(), agenttest.Epoch.UnixNano()
			a := res.Topic().Event(topic.Control, event.Name(ans), ans.EventID)
			if _, err := bus.PublishEvent(context.Background(), h.Bus(), a, ans, nil); err != nil {
				t.Fatal(err)
			}
			h.Advance(30 * time.Second)
			want := map[string]string{
				"HumanInTheLoopConfirmationResponseEvent": "answered",
				"HumanInTheLoopTimeoutEvent":              "timed out",
			}[first]
			notes := res.Get("Noted")
			if len(notes) != 1 || notes[0].(*Noted).Outcome != want {
				t.Fatalf("outcomes %v, want one %q", notes, want)
			}
			if n := len(res.Executions()); n != 2 {
				t.Errorf("%d executions (%v), want 2: the question and one outcome", n, res.Steps())
			}
			dead := res.DeadLetters()
			if len(dead) != 1 || !strings.Contains(dead[0].Reason, "answered already") {
				t.Errorf("dead letters %+v, want the loser refused as answered already", dead)
			}
		})
	}
}

// A restarted engine loads the pending deadline from the store and fires
// it; the run completes once.
func TestRestartWithPendingDeadline(t *testing.T) {
	h := agenttest.New(t, approval(t, 30*time.Second))
	res := h.Start(&event.StartEvent{})
	request(t, res)
	// Stub replaces the engine: a new one on the same store and bus.
	h.Stub("decide", func(ctx step.Context, r *event.HumanInTheLoopConfirmationResponseEvent) (*Decision, error) {
		return &Decision{Outcome: "stubbed"}, nil
	})
	h.Advance(0) // the restarted engine lists the bucket due now
	if n := h.PendingTimeouts(); n != 1 {
		t.Fatalf("restarted engine holds %d deadlines, want 1", n)
	}
	h.Advance(30 * time.Second)
	if got := outcome(t, res); got != "timed out after 30s" {
		t.Fatalf("outcome %q", got)
	}
	if n := res.Count("HumanInTheLoopTimeoutEvent"); n != 1 {
		t.Errorf("%d timeouts", n)
	}
}

// Two engines (replicas) on one store and bus both hold the deadline; the
// run still gets exactly one timeout event and one outcome.
func TestTwoReplicasOneTimeout(t *testing.T) {
	h := agenttest.New(t, approval(t, 30*time.Second))
	res := h.Start(&event.StartEvent{})
	request(t, res)
	clock := h.Bus().Clock()
	second, err := engine.New(approval(t, 30*time.Second), h.Bus(), h.Store(),
		engine.WithTimeoutClock(manual{clock}), engine.WithTimeoutWorkers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if err := second.StartTimeouts(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.Advance(0)
	if n := second.PendingTimeouts(); n != 1 {
		t.Fatalf("second replica holds %d deadlines", n)
	}
	h.Advance(time.Minute)
	if n := res.Count("HumanInTheLoopTimeoutEvent"); n != 1 {
		t.Errorf("%d timeout events, want 1", n)
	}
	if n := res.Count("Decision"); n != 1 {
		t.Errorf("%d outcomes, want 1", n)
	}
}

// Invalid input gets a clear error, not a request.
func TestInvalid(t *testing.T) {
	if _, err := hitl.Input(" "); err == nil {
		t.Error("blank question accepted")
	}
	if _, err := hitl.Confirm("ok?", hitl.Timeout(0)); err == nil || !strings.Contains(err.Error(), "positive") {
		t.Errorf("zero timeout: %v", err)
	}
	if _, err := hitl.ToolApproval("run it?", hitl.Tool{Name: "x"}); err == nil {
		t.Error("tool without call id accepted")
	}
	if err := hitl.SetTimeout(&event.StopEvent{}, time.Second); err == nil {
		t.Error("timeout on a stop event accepted")
	}
	ai := &event.AgentInTheLoopRequestEvent{}
	if err := hitl.SetTimeout(ai, 1500*time.Millisecond); err != nil || ai.TimeoutSeconds == nil || *ai.TimeoutSeconds != 1.5 {
		t.Errorf("AITL timeout: %v %v", err, ai.TimeoutSeconds)
	}
}

type manual struct{ c memory.Clock }

func (m manual) Now() time.Time { return m.c.Now() }
func (m manual) AfterFunc(d time.Duration, f func()) interface{ Stop() bool } {
	return m.c.AfterFunc(d, f)
}

// A BITL question times out with a BotInTheLoopTimeoutEvent and an AITL
// question with an AgentInTheLoopTimeoutEvent, each naming its request.
func TestTimeoutTypes(t *testing.T) {
	bot := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.BotInTheLoopRequestEvent, error) {
		req := &event.BotInTheLoopRequestEvent{
			User:          &event.UserIdentity{ID: "u1", Name: "Ursula", Email: "u@example.com", Roles: []string{"user"}},
			Question:      "Deploy?",
			ChannelConfig: []byte(`{"channel_id": "C1", "service_url": "https://example.com"}`),
			Topic:         &event.Topic{},
		}
		return req, hitl.SetTimeout(req, 5*time.Second)
	}, step.Name("bot"))
	botLate := step.New(func(ctx step.Context, to *event.BotInTheLoopTimeoutEvent) (*Decision, error) {
		return &Decision{Outcome: "bot timeout " + to.RequestEventID}, nil
	}, step.Name("botLate"))
	botAns := step.New(func(ctx step.Context, _ *event.BotInTheLoopResponseEvent) (*Decision, error) {
		return &Decision{Outcome: "bot answer"}, nil
	}, step.Name("botAns"))
	w, err := step.NewWorkflow("BotAsker", bot, botLate, botAns)
	if err != nil {
		t.Fatal(err)
	}
	h := agenttest.New(t, w)
	res := h.Start(&event.StartEvent{})
	req := res.Get("BotInTheLoopRequestEvent")
	if len(req) != 1 {
		t.Fatalf("requests %v", res.Names())
	}
	h.Advance(5 * time.Second)
	if got := outcome(t, res); got != "bot timeout "+req[0].EventBase().EventID {
		t.Errorf("BITL outcome %q", got)
	}

	ask := step.New(func(ctx step.Context, _ *event.StartEvent) (*event.AgentInTheLoopRequestEvent, error) {
		secs := 2.5
		start := &event.StartEvent{}
		return &event.AgentInTheLoopRequestEvent{
			StartEvent:      start,
			OtherAgentTopic: &event.Topic{AgentClass: event.Str("Helper"), AgentID: event.Str("h1")},
			ShareThreadID:   true, ShareDisplayID: true,
			TimeoutSeconds: &secs,
		}, nil
	}, step.Name("delegate"))
	agentLate := step.New(func(ctx step.Context, to *event.AgentInTheLoopTimeoutEvent) (*Decision, error) {
		return &Decision{Outcome: fmt.Sprint("agent timeout ", to.TimeoutSeconds)}, nil
	}, step.Name("agentLate"))
	agentAns := step.New(func(ctx step.Context, _ *event.AgentInTheLoopResponseEvent) (*Decision, error) {
		return &Decision{Outcome: "agent answer"}, nil
	}, step.Name("agentAns"))
	w2, err := step.NewWorkflow("Delegator", ask, agentLate, agentAns)
	if err != nil {
		t.Fatal(err)
	}
	h2 := agenttest.New(t, w2)
	res2 := h2.Start(&event.StartEvent{})
	h2.Advance(2 * time.Second)
	if res2.Terminal() != nil {
		t.Fatalf("AITL run ended before its timeout: %v", res2.Names())
	}
	h2.Advance(500 * time.Millisecond)
	if got := outcome(t, res2); got != "agent timeout 2.5" {
		t.Errorf("AITL outcome %q", got)
	}
}
