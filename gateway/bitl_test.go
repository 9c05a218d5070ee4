package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/engine"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
)

// botAgent asks a bot channel for approval and reports the answer it gets
// on got.
func botAgent(t *testing.T, class string, got chan<- *event.BotInTheLoopResponseEvent) *step.Workflow {
	t.Helper()
	ask := step.New(func(_ step.Context, m *event.UserMessageEvent) (*event.BotInTheLoopRequestEvent, error) {
		r := event.New[event.BotInTheLoopRequestEvent]()
		r.User, r.Question = m.User, "Approve the expense?"
		r.ChannelConfig = json.RawMessage(`{"channel_id":"C42"}`)
		// As the reference's factory: only the response side is set; the
		// runtime completes the rest.
		r.Topic = &event.Topic{EventType: event.Str("control_event"), EventName: event.Str("BotInTheLoopResponseEvent")}
		return r, nil
	}, step.Name("Ask"))
	done := step.New(func(_ step.Context, r *event.BotInTheLoopResponseEvent) (*event.StopEvent, error) {
		got <- r
		return &event.StopEvent{}, nil
	}, step.Name("Done"))
	w, err := step.NewWorkflow(class, ask, done)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// postSigned posts body to the bot answer route, signed with secret at ts.
func postSigned(t *testing.T, srv *httptest.Server, secret []byte, ts time.Time, body []byte) (int, string) {
	t.Helper()
	h := http.Header{}
	hitl.SignHeader(h, secret, ts, body)
	return postWith(t, srv, h, body)
}

func postWith(t *testing.T, srv *httptest.Server, h http.Header, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/api/v1/bitl/answers", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBotInTheLoopWebhook: a run asks a bot channel; the gateway records
// the question with its completed topic and posts it, signed, to the
// webhook; the bot's signed answer becomes the BotInTheLoopResponseEvent
// the run continues with. Bad signatures, stale timestamps and replays are
// refused with nothing published, and a second answer gets 409.
func TestBotInTheLoopWebhook(t *testing.T) {
	b := bustest.NewNATS(t)
	class := "Expense" + bustest.Unique()
	secret := []byte("s3cret-shared-with-the-bot")

	questions := make(chan hitl.WebhookQuestion, 4)
	verifier := &hitl.Verifier{Secret: secret}
	var calls atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if calls.Add(1) == 1 {
			// A brief outage of the channel: the gateway tries again.
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		if err := verifier.Verify(r.Header, body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var q hitl.WebhookQuestion
		if err := json.Unmarshal(body, &q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		questions <- q
	}))
	defer hook.Close()

	got := make(chan *event.BotInTheLoopResponseEvent, 4)
	engineAgent(t, b, botAgent(t, class, got))
	gw, err := gateway.New(gateway.Config{Bus: b, Auth: gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice}),
		DiscoveryWindow: 2 * time.Second, RateLimit: -1,
		Bot: &hitl.Webhook{URL: hook.URL, Secret: secret}, BotSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxTimeout(t)
	if _, err := gw.Discover(ctx, class); err != nil {
		t.Fatal(err)
	}
	stop := gw.WatchQuestionsOnce(ctx)
	defer stop()
	srv := httptest.NewServer(gw)
	defer srv.Close()

	type result struct {
		status int
		body   map[string]any
		thread string
	}
	started := make(chan result, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/agents/"+class+"/dev/UserMessageEvent", strings.NewReader(msgs))
		req.Header.Set("Authorization", "Bearer "+tokenAlice)
		resp, err := srv.Client().Do(req)
		if err != nil {
			started <- result{status: -1}
			return
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		started <- result{resp.StatusCode, m, resp.Header.Get("X-Thread-Id")}
	}()

	var q hitl.WebhookQuestion
	select {
	case q = <-questions:
	case <-ctx.Done():
		t.Fatal("the webhook got no question")
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the webhook was called %d times, want 2 (a refusal, then the question)", n)
	}
	if q.Question != "Approve the expense?" || q.User == nil || q.User.ID != "alice" || string(q.ChannelConfig) != `{"channel_id":"C42"}` {
		t.Errorf("question %+v", q)
	}
	var req struct {
		Topic map[string]string `json:"topic"`
	}
	if err := json.Unmarshal(q.RequestEvent, &req); err != nil {
		t.Fatal(err)
	}
	tp := req.Topic
	if tp["agent_class"] != class || tp["agent_id"] != "dev" || len(tp["run_id"]) != 24 || len(tp["thread_id"]) != 24 ||
		len(tp["display_id"]) != 24 || tp["event_id"] != q.RequestEventID || tp["event_name"] != "BotInTheLoopResponseEvent" ||
		tp["event_type"] != "control_event" {
		t.Errorf("topic %v: want it completed with the run's ids and the request's event id", tp)
	}

	answer := func(text string) []byte {
		b, _ := json.Marshal(hitl.WebhookAnswer{RequestEventID: q.RequestEventID, Response: text,
			Responder: event.BotInTheLoopResponderInfo{UserID: "U7", UserName: "Bob"}})
		return b
	}
	now := time.Now()
	good := answer("approved")
	if st, body := postSigned(t, srv, []byte("wrong secret"), now, good); st != http.StatusUnauthorized || !strings.Contains(body, "does not match") {
		t.Errorf("wrong secret: %d %s, want 401", st, body)
	}
	if st, body := postWith(t, srv, http.Header{}, good); st != http.StatusUnauthorized || !strings.Contains(body, "required") {
		t.Errorf("unsigned: %d %s, want 401", st, body)
	}
	if st, body := postSigned(t, srv, secret, now.Add(-10*time.Minute), good); st != http.StatusUnauthorized || !strings.Contains(body, "replay window") {
		t.Errorf("stale timestamp: %d %s, want 401", st, body)
	}
	tampered := http.Header{}
	hitl.SignHeader(tampered, secret, now, good)
	if st, _ := postWith(t, srv, tampered, answer("rejected")); st != http.StatusUnauthorized {
		t.Errorf("body changed after signing: %d, want 401", st)
	}
	unknown, _ := json.Marshal(hitl.WebhookAnswer{RequestEventID: event.NewID(), Response: "x",
		Responder: event.BotInTheLoopResponderInfo{UserID: "U7", UserName: "Bob"}})
	if st, _ := postSigned(t, srv, secret, now, unknown); st != http.StatusNotFound {
		t.Errorf("unknown question: %d, want 404", st)
	}
	select {
	case r := <-got:
		t.Fatalf("a refused answer reached the run: %+v", r)
	default:
	}

	h := http.Header{}
	hitl.SignHeader(h, secret, now, good)
	if st, body := postWith(t, srv, h, good); st != http.StatusAccepted {
		t.Fatalf("signed answer: %d %s, want 202", st, body)
	}
	if st, body := postWith(t, srv, h, good); st != http.StatusUnauthorized || !strings.Contains(body, "replay") {
		t.Errorf("replayed answer: %d %s, want 401", st, body)
	}
	if st, body := postSigned(t, srv, secret, now.Add(time.Second), answer("again")); st != http.StatusConflict || !strings.Contains(body, "already answered") {
		t.Errorf("second answer: %d %s, want 409", st, body)
	}

	select {
	case r := <-got:
		if r.Response != "approved" || r.Responder == nil || r.Responder.UserName != "Bob" || r.RequestEvent == nil ||
			r.RequestEvent.EventID != q.RequestEventID {
			t.Errorf("response %+v", r)
		}
	case <-ctx.Done():
		t.Fatal("the run got no BotInTheLoopResponseEvent")
	}
	res := <-started
	if res.status != http.StatusOK || res.body["_event_name"] != "StopEvent" || res.thread != tp["thread_id"] {
		t.Errorf("start request: %d %v thread %s, want the run's StopEvent in thread %s", res.status, res.body, res.thread, tp["thread_id"])
	}
	select {
	case r := <-got:
		t.Errorf("a second response reached the run: %+v", r)
	default:
	}
}

// TestBotInTheLoopTimeout: a bot question with a deadline that nobody
// answers in time: the run gets the BotInTheLoopTimeoutEvent, the gateway
// learns of it, and the bot's late answer gets 409 with nothing published.
func TestBotInTheLoopTimeout(t *testing.T) {
	b := bustest.NewNATS(t)
	class := "Deadline" + bustest.Unique()
	secret := []byte("s3cret")
	ctx := ctxTimeout(t)

	timedOut := make(chan *event.BotInTheLoopTimeoutEvent, 2)
	answered := make(chan *event.BotInTheLoopResponseEvent, 2)
	ask := step.New(func(_ step.Context, m *event.UserMessageEvent) (*event.BotInTheLoopRequestEvent, error) {
		return hitl.AskBot("Approve?", m.User, map[string]string{"channel_id": "C1"}, hitl.Timeout(200*time.Millisecond))
	}, step.Name("Ask"))
	done := step.New(func(_ step.Context, r *event.BotInTheLoopResponseEvent) (*event.StopEvent, error) {
		answered <- r
		return &event.StopEvent{}, nil
	}, step.Name("Done"))
	late := step.New(func(_ step.Context, x *event.BotInTheLoopTimeoutEvent) (*event.StopEvent, error) {
		timedOut <- x
		return &event.StopEvent{}, nil
	}, step.Name("Late"))
	w, err := step.NewWorkflow(class, ask, done, late)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureStream(ctx, bus.AgentStream(class)); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(w, b, memstore.New(), engine.WithHeartbeat(0))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if err := eng.StartTimeouts(ctx); err != nil {
		t.Fatal(err)
	}
	cons, err := b.Consume(ctx, bus.RunnerConsumer(class), func(d bus.Delivery) { eng.Handle(ctx, d) })
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Stop()
	resp, err := discovery.Build(w, discovery.Class{})
	if err != nil {
		t.Fatal(err)
	}
	qs := newSettleQuestions()
	gw, err := gateway.New(gateway.Config{Bus: b, Auth: gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice}),
		RateLimit: -1, BotSecret: secret, Questions: qs})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.AddClass(resp); err != nil {
		t.Fatal(err)
	}
	stop := gw.WatchQuestionsOnce(ctx)
	defer stop()
	srv := httptest.NewServer(gw)
	defer srv.Close()

	st := post(t, srv, tokenAlice, "/agents/"+class+"/dev/UserMessageEvent", msgs)
	if st.StatusCode != http.StatusOK {
		t.Fatalf("start: %d", st.StatusCode)
	}
	var x *event.BotInTheLoopTimeoutEvent
	select {
	case x = <-timedOut:
	case <-ctx.Done():
		t.Fatal("the run got no BotInTheLoopTimeoutEvent")
	}
	await(t, qs.settled, x.RequestEventID, "timeout")
	body, _ := json.Marshal(hitl.WebhookAnswer{RequestEventID: x.RequestEventID, Response: "yes",
		Responder: event.BotInTheLoopResponderInfo{UserID: "U1", UserName: "Bob"}})
	if code, text := postSigned(t, srv, secret, time.Now(), body); code != http.StatusConflict || !strings.Contains(text, "timed out") {
		t.Errorf("late bot answer: %d %s, want 409 naming the timeout", code, text)
	}
	select {
	case r := <-answered:
		t.Errorf("the late answer reached the run: %+v", r)
	default:
	}
}
