package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"

	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/hitl"
	"github.com/saap-go/agent/step"
)

// historyNATS is an embedded nats-server and, with NATS_URL, the external
// one: each test dials fresh connections to it, as a restarted gateway
// would.
var historyNATS = []struct {
	name string
	dial func(t *testing.T) func() *natsbus.Bus
}{
	{"embedded", func(t *testing.T) func() *natsbus.Bus {
		url := bustest.NewNATS(t).Conn().ConnectedUrl()
		return func() *natsbus.Bus { return dialNATS(t, natsbus.Config{URL: url}) }
	}},
	{"external", func(t *testing.T) func() *natsbus.Bus {
		if os.Getenv("NATS_URL") == "" {
			t.Skip("NATS_URL not set: skipping tests against an external nats-server")
		}
		cfg, err := natsbus.ConfigFromEnv()
		if err != nil {
			t.Fatal(err)
		}
		return func() *natsbus.Bus { return dialNATS(t, cfg) }
	}},
}

func dialNATS(t *testing.T, cfg natsbus.Config) *natsbus.Bus {
	t.Helper()
	cfg.Name = t.Name()
	b, err := natsbus.Connect(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// historyConfig names a stream and subjects of the test's own, deleted when
// it ends (the external server is shared).
func historyConfig(t *testing.T, b *natsbus.Bus, limits gateway.HistoryLimits) gateway.HistoryConfig {
	u := bustest.Unique()
	cfg := gateway.HistoryConfig{Stream: "SAAP_HISTORY_" + u, Subject: "saap.history" + u, Limits: limits}
	t.Cleanup(func() { _ = b.JetStream().DeleteStream(context.Background(), cfg.Stream) })
	return cfg
}

func entry(id, role, text string) gateway.HistoryEntry {
	raw, err := event.MarshalValue(event.Text(role, text))
	if err != nil {
		panic(err)
	}
	return gateway.HistoryEntry{ID: id, Message: raw, CreatedAt: 1}
}

func texts(t *testing.T, es []gateway.HistoryEntry) []string {
	t.Helper()
	out := make([]string, len(es))
	for i, e := range es {
		m, err := e.ChatMessage()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = m.Role + ":" + m.Content()
	}
	return out
}

// TestHistoryStores: the memory and JetStream histories append, page,
// drop retried appends, keep threads apart, apply the per-thread bound and
// refuse bad input; a JetStream read leaves no goroutine behind.
func TestHistoryStores(t *testing.T) {
	type store struct {
		name string
		new  func(t *testing.T, limits gateway.HistoryLimits) gateway.History
	}
	stores := []store{{"memory", func(t *testing.T, l gateway.HistoryLimits) gateway.History { return gateway.NewMemoryHistory(l) }}}
	for _, n := range historyNATS {
		stores = append(stores, store{n.name, func(t *testing.T, l gateway.HistoryLimits) gateway.History {
			b := n.dial(t)()
			h, err := gateway.NewJetStreamHistory(ctxTimeout(t), b.JetStream(), historyConfig(t, b, l))
			if err != nil {
				t.Fatal(err)
			}
			return h
		}})
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			ctx := ctxTimeout(t)
			h := s.new(t, gateway.HistoryLimits{MaxPerThread: 5})
			thread, other := event.NewID(), event.NewID()
			for i := range 4 {
				if err := h.Append(ctx, thread, entry(fmt.Sprint("e", i), event.RoleUser, fmt.Sprint("m", i))); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.Append(ctx, other, entry("x", event.RoleUser, "other")); err != nil {
				t.Fatal(err)
			}
			// A retried append is dropped.
			if err := h.Append(ctx, thread, entry("e3", event.RoleUser, "m3")); err != nil {
				t.Fatal(err)
			}
			before := goleak.IgnoreCurrent()
			all, err := h.Read(ctx, thread, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			goleak.VerifyNone(t, before)
			if got := strings.Join(texts(t, all), ","); got != "user:m0,user:m1,user:m2,user:m3" {
				t.Fatalf("history %s", got)
			}
			page, err := h.Read(ctx, thread, all[1].Seq, 1)
			if err != nil || len(page) != 1 || page[0].Seq != all[2].Seq {
				t.Fatalf("page after %d: %v %v", all[1].Seq, page, err)
			}
			if rest, err := h.Read(ctx, thread, all[3].Seq, 10); err != nil || len(rest) != 0 {
				t.Fatalf("after the last: %v %v", rest, err)
			}
			if none, err := h.Read(ctx, event.NewID(), 0, 0); err != nil || len(none) != 0 {
				t.Fatalf("unknown thread: %v %v", none, err)
			}
			// Beyond MaxPerThread the oldest go.
			for i := 4; i < 7; i++ {
				if err := h.Append(ctx, thread, entry(fmt.Sprint("e", i), event.RoleAssistant, fmt.Sprint("m", i))); err != nil {
					t.Fatal(err)
				}
			}
			all, err = h.Read(ctx, thread, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(texts(t, all), ","); got != "user:m2,user:m3,assistant:m4,assistant:m5,assistant:m6" {
				t.Fatalf("bounded history %s", got)
			}
			if o, err := h.Read(ctx, other, 0, 0); err != nil || len(o) != 1 {
				t.Fatalf("other thread: %v %v", o, err)
			}
			for _, bad := range []struct {
				thread string
				e      gateway.HistoryEntry
			}{{"a.b", entry("y", "user", "x")}, {"", entry("y", "user", "x")}, {thread, gateway.HistoryEntry{ID: "y"}}, {thread, entry("", "user", "x")}} {
				if err := h.Append(ctx, bad.thread, bad.e); err == nil {
					t.Errorf("Append(%q, %+v): no error", bad.thread, bad.e)
				}
			}
			if _, err := h.Read(ctx, "a b", 0, 0); s.name != "memory" && err == nil {
				t.Error("Read of a bad thread id: no error")
			}
		})
	}
}

// historyAgent is a conversational agent that records the messages each
// start event brings and answers "answer <n>".
type historyAgent struct {
	mu   sync.Mutex
	seen [][]string
}

func (a *historyAgent) answer(_ step.Context, e *event.UserMessageEvent) (*event.LLMStopEvent, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var got []string
	for _, m := range e.Messages {
		got = append(got, m.Role+":"+m.Content())
	}
	a.seen = append(a.seen, got)
	stop := &event.LLMStopEvent{}
	stop.OutputMessages = []event.Message{event.MessageFromString(event.RoleAssistant, fmt.Sprint("answer ", len(a.seen)))}
	return stop, nil
}

func (a *historyAgent) last() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.seen[len(a.seen)-1]
}

// TestHistoryLongChatAcrossRestarts is the acceptance test: a client sends
// only its newest message each turn, through the agent endpoint and the
// OpenAI endpoint in turn, to a gateway that is restarted (new process
// state, new connection) before every turn; the agent sees the whole
// conversation every time, and the members read it back, paged.
func TestHistoryLongChatAcrossRestarts(t *testing.T) {
	for _, n := range historyNATS {
		t.Run(n.name, func(t *testing.T) {
			dial := n.dial(t)
			agentBus := dial()
			class := "Historian" + bustest.Unique()
			a := &historyAgent{}
			w, err := step.NewWorkflow(class, step.New(a.answer, step.Name("Answer")))
			if err != nil {
				t.Fatal(err)
			}
			resp := engineAgent(t, agentBus, w)
			kv := gateway.KVConfig{Bucket: "saap_gw_" + bustest.Unique()}
			t.Cleanup(func() { _ = agentBus.JetStream().DeleteKeyValue(context.Background(), kv.Bucket) })
			hcfg := historyConfig(t, agentBus, gateway.HistoryLimits{})

			// start is one gateway process: its own connection and stores.
			var gw *gateway.Gateway
			start := func() *httptest.Server {
				b := dial()
				ctx := ctxTimeout(t)
				threads, err := gateway.NewKVStore(ctx, b.JetStream(), kv)
				if err != nil {
					t.Fatal(err)
				}
				hist, err := gateway.NewJetStreamHistory(ctx, b.JetStream(), hcfg)
				if err != nil {
					t.Fatal(err)
				}
				gw, err = gateway.New(gateway.Config{Bus: b, Threads: threads, History: hist, RateLimit: -1, StatusRateLimit: -1,
					Auth: gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice, tokenBob: bob})})
				if err != nil {
					t.Fatal(err)
				}
				if err := gw.AddClass(resp); err != nil {
					t.Fatal(err)
				}
				return httptest.NewServer(gw)
			}

			const turns = 12
			thread := event.NewID()
			var want []string
			for i := 1; i <= turns; i++ {
				srv := start()
				text := fmt.Sprint("question ", i)
				if i%2 == 1 {
					body := fmt.Sprintf(`{"messages":[{"role":"user","content":%q}]}`, text)
					r := post(t, srv, tokenAlice, "/agents/"+class+"/dev/UserMessageEvent?reconstruct_history=true&thread_id="+thread, body)
					if r.StatusCode != http.StatusOK {
						t.Fatalf("turn %d: %d %v", i, r.StatusCode, decodeJSON(t, r.Body))
					}
				} else {
					client := openai.NewClient(optionsFor(srv, tokenAlice)...)
					_, err := client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
						Model:    class + "/dev",
						Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
					}, option.WithJSONSet("metadata", map[string]any{"thread_id": thread, "reconstruct_history": true}))
					if err != nil {
						t.Fatalf("turn %d: %v", i, err)
					}
				}
				srv.Close()
				want = append(want, "user:"+text)
				if got := strings.Join(a.last(), "|"); got != strings.Join(want, "|") {
					t.Fatalf("turn %d: the agent saw\n%s\nwant\n%s", i, got, strings.Join(want, "|"))
				}
				want = append(want, fmt.Sprint("assistant:answer ", i))
			}

			// An empty messages list gets the whole history, as the
			// reference fills it.
			srv := start()
			defer srv.Close()
			r := post(t, srv, tokenAlice, "/agents/"+class+"/dev/UserMessageEvent?thread_id="+thread, `{"messages":[]}`)
			if r.StatusCode != http.StatusOK {
				t.Fatalf("empty messages: %d", r.StatusCode)
			}
			if got := strings.Join(a.last(), "|"); got != strings.Join(want, "|") {
				t.Fatalf("empty messages: the agent saw\n%s\nwant\n%s", got, strings.Join(want, "|"))
			}
			want = append(want, fmt.Sprint("assistant:answer ", turns+1))

			// The members read it back, paged.
			var read []string
			after := ""
			for pages := 0; ; pages++ {
				url := srv.URL + "/api/v1/saap/threads/" + thread + "/messages?limit=5"
				if after != "" {
					url += "&after=" + after
				}
				code, page := getJSON(t, url, tokenAlice)
				if code != http.StatusOK {
					t.Fatalf("page %d: %d %v", pages, code, page)
				}
				var p struct {
					Messages []gateway.HistoryEntry `json:"messages"`
					Next     string                 `json:"next"`
				}
				if err := json.Unmarshal(page, &p); err != nil {
					t.Fatal(err)
				}
				read = append(read, texts(t, p.Messages)...)
				if p.Next == "" {
					break
				}
				if pages > 10 {
					t.Fatal("too many pages")
				}
				after = p.Next
			}
			if got := strings.Join(read, "|"); got != strings.Join(want, "|") {
				t.Fatalf("GET messages:\n%s\nwant\n%s", got, strings.Join(want, "|"))
			}

			for _, q := range []string{"limit=0", "limit=501", "limit=x", "after=-1", "after=abc"} {
				if code, body := getJSON(t, srv.URL+"/api/v1/saap/threads/"+thread+"/messages?"+q, tokenAlice); code != http.StatusBadRequest {
					t.Errorf("?%s: %d %s, want 400", q, code, body)
				}
			}
			if code, body := getJSON(t, srv.URL+"/api/v1/saap/threads/not.a.thread/messages", tokenAlice); code != http.StatusBadRequest {
				t.Errorf("bad thread id: %d %s, want 400", code, body)
			}
			r = post(t, srv, tokenAlice, "/agents/"+class+"/dev/UserMessageEvent?reconstruct_history=maybe&thread_id="+thread, msgs)
			if r.StatusCode != http.StatusBadRequest {
				t.Errorf("reconstruct_history=maybe: %d, want 400", r.StatusCode)
			}

			// Bob is no member: the same 404 as an unknown thread, on the
			// route and on every endpoint that would fill his start.
			for _, th := range []string{thread, event.NewID()} {
				if code, body := getJSON(t, srv.URL+"/api/v1/saap/threads/"+th+"/messages", tokenBob); code != http.StatusNotFound {
					t.Errorf("bob reads thread %s: %d %s", th, code, body)
				}
			}
			r = post(t, srv, tokenBob, "/agents/"+class+"/dev/UserMessageEvent?reconstruct_history=true&thread_id="+thread, msgs)
			if r.StatusCode != http.StatusForbidden {
				t.Errorf("bob starts in alice's thread: %d", r.StatusCode)
			}
			client := openai.NewClient(optionsFor(srv, tokenBob)...)
			_, err = client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
				Model:    class + "/dev",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("leak?")},
			}, option.WithJSONSet("metadata", map[string]any{"thread_id": thread, "reconstruct_history": true}))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden {
				t.Errorf("bob's OpenAI request in alice's thread: %v", err)
			}
			// The adapters (AG-UI, A2A, MCP, WebSocket) start runs through
			// Gateway.Start: bob gets 403 there too, with or without
			// reconstruct_history, and nothing runs.
			for _, body := range []string{`{"messages":[]}`, msgs} {
				var raw map[string]json.RawMessage
				if err := json.Unmarshal([]byte(body), &raw); err != nil {
					t.Fatal(err)
				}
				s, err := gw.Start(ctxTimeout(t), gateway.RunRequest{User: &bob, Class: class, AgentID: "dev", Thread: thread,
					Body: raw, ReconstructHistory: true})
				if s != nil {
					s.Close()
				}
				if gateway.ErrorStatus(err) != http.StatusForbidden {
					t.Errorf("bob's Gateway.Start in alice's thread: %v", err)
				}
			}
			if got := len(a.last()); got != len(want)-1 {
				t.Errorf("an agent run started for bob: it saw %d messages", got)
			}
		})
	}
}

// getJSON gets url as the user of token.
func getJSON(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

// TestHistoryFillFitsAMessage: a thread longer than a start event can carry
// fills it with its newest messages only, the sent one last.
func TestHistoryFillFitsAMessage(t *testing.T) {
	h := gateway.NewMemoryHistory(gateway.HistoryLimits{})
	gw, err := gateway.New(gateway.Config{Bus: bustest.NewMemory(t), Auth: gateway.Anonymous(alice), History: h})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxTimeout(t)
	thread := event.NewID()
	big := strings.Repeat("x", 50<<10)
	for i := range 40 {
		if err := h.Append(ctx, thread, entry(fmt.Sprint("e", i), event.RoleUser, fmt.Sprint(i, big))); err != nil {
			t.Fatal(err)
		}
	}
	body := map[string]json.RawMessage{"messages": json.RawMessage(`[{"role":"user","content":"now"}]`)}
	if ok, err := gw.FillMessages(ctx, thread, body); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if len(body["messages"]) > 1<<20 {
		t.Fatalf("filled messages are %d bytes", len(body["messages"]))
	}
	var got []event.ChatMessage
	if err := event.UnmarshalValue(body["messages"], &got); err != nil {
		t.Fatal(err)
	}
	if len(got) < 2 || len(got) > 20 || got[len(got)-1].Content() != "now" || !strings.HasPrefix(got[len(got)-2].Content(), "39") {
		t.Fatalf("%d messages, the last %q", len(got), got[len(got)-1].Content())
	}
}

// TestHistoryHITLTurns: a question the agent asks and the user's answer
// (sent as the next chat message, the chat flow) are history too, as the
// reference projects them; the streamed chunks and the stop's remainder
// make one assistant message.
func TestHistoryHITLTurns(t *testing.T) {
	for _, n := range historyNATS {
		t.Run(n.name, func(t *testing.T) {
			b := n.dial(t)()
			class := "Asker" + bustest.Unique()
			hello := func(ctx step.Context, e *event.UserMessageEvent) (event.Event, error) {
				if e.Messages[len(e.Messages)-1].Content() == "hi" {
					return hitl.Input("What is your name?")
				}
				return &event.StopEvent{}, nil
			}
			welcome := func(ctx step.Context, r *event.HumanInTheLoopInputResponseEvent) (*event.LLMStopEvent, error) {
				if err := ctx.Emit(&event.ChunkEvent{Content: "Welcome, "}); err != nil {
					return nil, err
				}
				stop := &event.LLMStopEvent{}
				stop.OutputMessages = []event.Message{event.MessageFromString(event.RoleAssistant, "Welcome, "+r.Response+"!")}
				return stop, nil
			}
			w, err := step.NewWorkflow(class,
				step.New(hello, step.Name("Hello"), step.Emits((*event.StopEvent)(nil), (*event.HumanInTheLoopInputRequestEvent)(nil))),
				step.New(welcome, step.Name("Welcome")))
			if err != nil {
				t.Fatal(err)
			}
			resp := engineAgent(t, b, w)
			hist, err := gateway.NewJetStreamHistory(ctxTimeout(t), b.JetStream(), historyConfig(t, b, gateway.HistoryLimits{}))
			if err != nil {
				t.Fatal(err)
			}
			gw, err := gateway.New(gateway.Config{Bus: b, History: hist, RateLimit: -1,
				Auth: gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice})})
			if err != nil {
				t.Fatal(err)
			}
			if err := gw.AddClass(resp); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(gw)
			defer srv.Close()
			thread := event.NewID()
			path := "/agents/" + class + "/dev/UserMessageEvent?thread_id=" + thread
			r := post(t, srv, tokenAlice, path, `{"messages":[{"role":"user","content":"hi"}]}`)
			if q := decodeJSON(t, r.Body); r.StatusCode != http.StatusOK || q["question"] != "What is your name?" {
				t.Fatalf("first turn: %d %v", r.StatusCode, q)
			}
			r = post(t, srv, tokenAlice, path, `{"messages":[{"role":"user","content":"Ada"}]}`)
			if r.StatusCode != http.StatusOK {
				t.Fatalf("answer: %d %v", r.StatusCode, decodeJSON(t, r.Body))
			}
			es, err := hist.Read(ctxTimeout(t), thread, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(texts(t, es), "|")
			if want := "user:hi|assistant:What is your name?|user:Ada|assistant:Welcome, Ada!"; got != want {
				t.Fatalf("history\n%s\nwant\n%s", got, want)
			}
			if !strings.Contains(string(es[0].Message), `"blocks"`) {
				t.Errorf("the user's message is not kept in wire form: %s", es[0].Message)
			}
			if es[0].User != alice.ID || es[1].Class != class || es[1].Run == "" || es[0].Display == "" {
				t.Errorf("entries lack their context: %+v %+v", es[0], es[1])
			}
		})
	}
}
