package agent_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/engine"
	"github.com/saap-go/agent/store"

	"github.com/nats-io/nats.go/jetstream"

	agent "github.com/saap-go/agent"
	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/config"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

// Settings is the typed configuration of the configured agent.
type Settings struct {
	Model       string  `json:"model"`
	Temperature float64 `json:"temperature"`
	APIKey      string  `json:"api_key"`
}

// Validate refuses a configuration without an API key.
func (s Settings) Validate() error {
	if s.APIKey == "" {
		return config.Invalid("api_key", "is required")
	}
	return nil
}

// configured is the linear agent with a typed configuration; Finish copies
// the run's configuration into the StopEvent's extra field "config"... as
// Answered's text, which the test reads from the stream.
type configured struct {
	linear
}

func (c *configured) DefaultConfig() any {
	return Settings{Model: "gpt-default", Temperature: 0.2}
}

func (c *configured) Steps() []*step.Step {
	return []*step.Step{step.New(c.Ask), step.New(c.Answer), step.New(c.Finish)}
}

func (c *configured) Answer(ctx step.Context, a *Asked) (*Answered, error) {
	s, ok := step.Config[Settings](ctx)
	if !ok {
		return &Answered{Text: "no config"}, nil
	}
	b, _ := json.Marshal(s)
	return &Answered{Text: string(b)}, nil
}

// respondConfig answers config requests of class as the platform's API
// does; it records the requests.
func respondConfig(t testing.TB, b bus.Bus, class string, reply func(req config.Request) any) *[]config.Request {
	t.Helper()
	var mu sync.Mutex
	reqs := &[]config.Request{}
	sub, err := b.Subscribe(context.Background(), "aihub.rpc.config.agent."+class+".*", "", func(m *bus.Msg) {
		var req config.Request
		_ = json.Unmarshal(m.Data, &req)
		mu.Lock()
		*reqs = append(*reqs, req)
		mu.Unlock()
		data, _ := json.Marshal(reply(req))
		_ = b.Publish(context.Background(), &bus.Msg{Subject: m.Reply, Data: data})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return reqs
}

func found(req config.Request, cfg map[string]any) map[string]any {
	return map[string]any{"agent_class": req.AgentClass, "agent_id": req.AgentID, "config": cfg, "found": true, "error": nil}
}

func TestConfigRPCEndToEnd(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		c := client(t, tg.natsURL)
		class := uniqueClass("Configured")
		dropStream(t, c, class)
		reqs := respondConfig(t, c, class, func(req config.Request) any {
			return found(req, map[string]any{"model": "gpt-wiki", "api_key": "k", "unknown_key": 1})
		})
		w := watch(t, c, class)
		startRunner(t, &configured{linear{class: class}}, agent.WithNATS(tg.natsURL), storeFor(t, tg, c), quiet(t))

		run := newRun(class, "wiki")
		publish(t, c, run, userMessage("hi"), nil)
		if term := w.terminal(t, run.Run); !event.IsStop(term) {
			t.Fatalf("terminal %s; events %s", event.Name(term), names(w.of(run.Run)))
		}
		var answered *Answered
		for _, e := range controlEvents(t, c, class, run.Run) {
			if a, ok := e.(*Answered); ok {
				answered = a
			}
		}
		if answered == nil {
			t.Fatal("no Answered in the stream")
		}
		var got Settings
		if err := json.Unmarshal([]byte(answered.Text), &got); err != nil {
			t.Fatalf("step saw %q: %v", answered.Text, err)
		}
		want := Settings{Model: "gpt-wiki", Temperature: 0.2, APIKey: "k"}
		if got != want {
			t.Errorf("step saw config %+v, want %+v (profile merged over defaults)", got, want)
		}
		if len(*reqs) != 1 || (*reqs)[0] != (config.Request{AgentClass: class, AgentID: "wiki"}) {
			t.Errorf("config requests %+v, want one for %s/wiki", *reqs, class)
		}
	})
}

func TestStandaloneUsesDefaultsWithoutRPC(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("Standalone")
	reqs := respondConfig(t, c, class, func(req config.Request) any { return found(req, map[string]any{"model": "remote"}) })
	w := watch(t, c, class)
	a := &configured{linear{class: class}}
	startRunner(t, &standaloneConfigured{a}, agent.WithNATS(s.URL()), agent.Standalone(), quiet(t))
	run := newRun(class, "x")
	publish(t, c, run, userMessage("hi"), nil)
	if term := w.terminal(t, run.Run); !event.IsStop(term) {
		t.Fatalf("terminal %s", names(w.of(run.Run)))
	}
	for _, e := range controlEvents(t, c, class, run.Run) {
		if a, ok := e.(*Answered); ok && !strings.Contains(a.Text, `"model":"gpt-default"`) {
			t.Errorf("step saw %s, want the defaults", a.Text)
		}
	}
	if len(*reqs) != 0 {
		t.Errorf("standalone runner sent %d config requests", len(*reqs))
	}
}

// standaloneConfigured has defaults that pass validation.
type standaloneConfigured struct{ *configured }

func (s *standaloneConfigured) DefaultConfig() any {
	return Settings{Model: "gpt-default", APIKey: "local"}
}

// TestScenario29_TeardownIgnoresInvalidConfig: a run whose stored
// configuration is invalid receives an ExceptionEvent: it is torn down
// (crashed marker) and nothing is published.
func TestScenario29_TeardownIgnoresInvalidConfig(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		c := client(t, tg.natsURL)
		class := uniqueClass("S29")
		dropStream(t, c, class)
		st := openStore(t, tg, c)
		startRunner(t, &configured{linear{class: class}}, agent.WithNATS(tg.natsURL), agent.WithStore(st), quiet(t))

		run := newRun(class, "wiki")
		key := store.RunKey{Class: class, Run: run.Run}
		if err := st.Set(context.Background(), key.RunContext(), engine.KeyAgentConfig, []byte(`{"temperature":"hot"}`)); err != nil {
			t.Fatal(err)
		}
		publish(t, c, run, &event.ExceptionEvent{Message: "boom"}, nil)
		waitAcked(t, c.JetStream(), class)

		v, ok, err := engine.RunEnd(context.Background(), st, key)
		if err != nil || !ok || v != store.Crashed {
			t.Errorf("end marker %q, %v, %v; want crashed", v, ok, err)
		}
		if evs := controlEvents(t, c, class, run.Run); len(evs) != 1 {
			t.Errorf("stream holds %s for the run, want only the ExceptionEvent sent", names(evs))
		}
	})
}

// TestScenario30_MissingConfigEndsRun: a non-start event of a live run that
// has no stored configuration ends the run with "No agent config found".
func TestScenario30_MissingConfigEndsRun(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		c := client(t, tg.natsURL)
		class := uniqueClass("S30")
		dropStream(t, c, class)
		w := watch(t, c, class)
		startRunner(t, &linear{class: class}, agent.WithNATS(tg.natsURL), storeFor(t, tg, c), quiet(t))

		run := newRun(class, "wiki")
		publish(t, c, run, &Asked{Text: "orphan"}, nil)
		term := w.terminal(t, run.Run)
		exc, ok := term.(*event.ExceptionEvent)
		if !ok || !strings.Contains(exc.Message, "No agent config found") {
			t.Fatalf("terminal %s, want an ExceptionEvent with \"No agent config found\"", names([]event.Event{term}))
		}
	})
}

// TestScenario31_InvalidConfigAtStart: a profile that fails validation ends
// the run with one ExceptionEvent that names the failing fields and never
// their values.
func TestScenario31_InvalidConfigAtStart(t *testing.T) {
	cases := []struct {
		name    string
		cfg     map[string]any
		fields  []string
		secrets []string
	}{
		{"type mismatch", map[string]any{"temperature": "very-hot-secret", "api_key": "sk-secret-1"}, []string{"temperature"}, []string{"very-hot-secret", "sk-secret-1"}},
		{"Validate", map[string]any{"model": "gpt-secret-model"}, []string{"api_key"}, []string{"gpt-secret-model"}},
		// Every failing field is named, not only the first: a type mismatch
		// and a null where the type cannot hold one.
		{"several fields", map[string]any{"temperature": "hot-secret", "model": nil, "api_key": "sk-secret-2"}, []string{"temperature", "model"}, []string{"hot-secret", "sk-secret-2"}},
	}
	eachTarget(t, func(t *testing.T, tg target) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				c := client(t, tg.natsURL)
				class := uniqueClass("S31")
				dropStream(t, c, class)
				respondConfig(t, c, class, func(req config.Request) any { return found(req, tc.cfg) })
				w := watch(t, c, class)
				startRunner(t, &configured{linear{class: class}}, agent.WithNATS(tg.natsURL), storeFor(t, tg, c), quiet(t))

				run := newRun(class, "wiki")
				publish(t, c, run, userMessage("hi"), nil)
				exc, ok := w.terminal(t, run.Run).(*event.ExceptionEvent)
				if !ok {
					t.Fatalf("terminal events %s, want an ExceptionEvent", names(w.of(run.Run)))
				}
				if !strings.Contains(exc.Message, "configuration is invalid") {
					t.Errorf("message %q does not say the configuration is invalid", exc.Message)
				}
				for _, f := range tc.fields {
					if !strings.Contains(exc.Message, f) {
						t.Errorf("message %q does not name field %s", exc.Message, f)
					}
				}
				for _, s := range tc.secrets {
					if strings.Contains(exc.Message, s) {
						t.Errorf("message %q leaks the value %q", exc.Message, s)
					}
				}
				waitAcked(t, c.JetStream(), class)
				n := 0
				for _, e := range controlEvents(t, c, class, run.Run) {
					if event.IsException(e) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%d ExceptionEvents in the stream, want 1", n)
				}
			})
		}
	})
}

// PayloadStart is a custom start event with a payload, as the reference's
// context workflow uses.
type PayloadStart struct {
	event.StartEvent
	Payload map[string]any      `json:"payload"`
	Locale  string              `json:"locale"`
	User    *event.UserIdentity `json:"user"`
}

func init() { event.MustRegister[PayloadStart]() }

// pausing starts on PayloadStart, emits Asked, and then waits for an
// Answered that never comes. Its second step, on Asked, reports the run
// context it sees on seen (once per run: the channel has room for one).
type pausing struct {
	class string
	seen  chan map[string]json.RawMessage
}

func (p *pausing) Class() string { return p.class }
func (p *pausing) Steps() []*step.Step {
	return []*step.Step{
		step.New(func(ctx step.Context, s *PayloadStart) (*Asked, error) { return &Asked{}, nil }, step.Name("begin")),
		step.New(func(ctx step.Context, a *Asked, r step.Maybe[*Answered]) (*event.StopEvent, error) {
			keys, err := ctx.RunState().Keys(ctx)
			if err != nil {
				return nil, err
			}
			seen := map[string]json.RawMessage{}
			for _, k := range keys {
				var v json.RawMessage
				if _, err := ctx.RunState().Get(ctx, k, &v); err != nil {
					return nil, err
				}
				seen[k] = v
			}
			p.seen <- seen
			return joinAnswer(ctx, a, r)
		}, step.Name("end")),
	}
}

// TestScenario32_StartFieldsAndHeadersSeedRunContext: a step of the run (on
// its second event) sees the start event's public fields, the configuration
// and the X-AIHub-* headers in the run context; without headers,
// _aihub_headers is unset. Only the headers are written to the store: the
// fields are read from the start event in the stream.
func TestScenario32_StartFieldsAndHeadersSeedRunContext(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		c := client(t, tg.natsURL)
		class := uniqueClass("S32")
		dropStream(t, c, class)
		st := openStore(t, tg, c)
		p := &pausing{class: class, seen: make(chan map[string]json.RawMessage, 1)}
		startRunner(t, p, agent.WithNATS(tg.natsURL), agent.WithStore(st), agent.Standalone(), quiet(t))

		for _, withHeaders := range []bool{true, false} {
			run := newRun(class, "ctx")
			start := &PayloadStart{
				Payload: map[string]any{"k": "v"}, Locale: "fr",
				User: &event.UserIdentity{ID: "u1", Name: "U", Email: "u@x", Roles: []string{}},
			}
			var h bus.Header
			if withHeaders {
				h = bus.Header{"X-AIHub-User-Token": {"tok"}}
			}
			publish(t, c, run, start, h)
			var seen map[string]json.RawMessage
			select {
			case seen = <-p.seen:
			case <-time.After(30 * time.Second):
				t.Fatal("the second step never ran")
			}
			for _, k := range []string{"payload", "locale", "user", engine.KeyAgentConfig} {
				if _, ok := seen[k]; !ok {
					t.Errorf("headers %v: run context %v lacks %q", withHeaders, slices.Collect(maps.Keys(seen)), k)
				}
			}
			raw, ok := seen[engine.KeyAIHubHeaders]
			switch {
			case withHeaders && (!ok || !strings.Contains(string(raw), `"x-aihub-user-token":"tok"`)):
				t.Errorf("_aihub_headers = %s (present %v), want the lower-cased header", raw, ok)
			case !withHeaders && ok:
				t.Errorf("_aihub_headers = %s without headers, want unset", raw)
			}
			var payload map[string]any
			if err := json.Unmarshal(seen["payload"], &payload); err != nil || payload["k"] != "v" {
				t.Errorf("payload = %s, want {\"k\": \"v\"}", seen["payload"])
			}
			// The store holds the headers, not the fields.
			keys, err := st.Keys(context.Background(), store.RunKey{Class: class, Run: run.Run}.RunContext())
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(keys, "payload") {
				t.Errorf("run context in the store %v: the start's fields were copied", keys)
			}
		}
	})
}

// joinAnswer ends the run once an Answered (sent from outside) joins the
// Asked. The input is optional so that validation accepts an event no step
// produces; without it the step does nothing.
func joinAnswer(ctx step.Context, a *Asked, r step.Maybe[*Answered]) (*event.StopEvent, error) {
	if !r.OK {
		return nil, nil
	}
	return &event.StopEvent{}, nil
}

// history is a two-step agent whose second step needs an event of the
// run's past: a runner that never saw the run must load its history.
type history struct{ class string }

func (h *history) Class() string { return h.class }
func (h *history) Steps() []*step.Step {
	return []*step.Step{
		step.New(func(ctx step.Context, m *event.UserMessageEvent) (*Asked, error) { return &Asked{Text: "q"}, nil }, step.Name("ask")),
		step.New(joinAnswer, step.Name("join")),
	}
}

// TestScenario35_NoReplayConsumers: start-up creates no consumer that
// replays the class's stream, and loading one run's history leaves no
// consumer behind (this SDK reads it with direct gets).
func TestScenario35_NoReplayConsumers(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		c := client(t, tg.natsURL)
		class := uniqueClass("S35")
		dropStream(t, c, class)
		storeOpt := storeFor(t, tg, c)
		w := watch(t, c, class)

		// A first runner handles 50 completed runs and one that waits.
		first := startRunner(t, &history{class: class}, agent.WithNATS(tg.natsURL), storeOpt, agent.Standalone(), quiet(t))
		var done []string
		for range 50 {
			run := newRun(class, "h")
			asked := awaitControl(t, c, run, "Asked")
			publish(t, c, run, userMessage("x"), nil)
			<-asked
			publish(t, c, run, &Answered{}, nil)
			done = append(done, run.Run)
		}
		for _, id := range done {
			w.terminal(t, id)
		}
		waiting := newRun(class, "h")
		asked := awaitControl(t, c, waiting, "Asked")
		publish(t, c, waiting, userMessage("x"), nil)
		<-asked
		waitAcked(t, c.JetStream(), class)
		if err := first.stop(); err != nil {
			t.Fatal(err)
		}

		// A fresh runner: only the runner durable exists after start-up.
		startRunner(t, &history{class: class}, agent.WithNATS(tg.natsURL), storeOpt, agent.Standalone(), quiet(t))
		want := []string{"agent_runner_" + class}
		if got := consumerNames(t, c, class); !slices.Equal(got, want) {
			t.Errorf("consumers after start-up %v, want %v", got, want)
		}
		// The waiting run's answer needs its history (the Asked).
		publish(t, c, waiting, &Answered{}, nil)
		if term := w.terminal(t, waiting.Run); !event.IsStop(term) {
			t.Fatalf("terminal %s", names(w.of(waiting.Run)))
		}
		waitAcked(t, c.JetStream(), class)
		if got := consumerNames(t, c, class); !slices.Equal(got, want) {
			t.Errorf("consumers after loading a run's history %v, want %v", got, want)
		}
	})
}

// TestScenario36_RunnerConsumerConfig: a new runner consumer gets AckWait
// 30 s and MaxDeliver -1 (the runner, not the server, gives up on failing
// events) with explicit acks from the start of the stream; a drifted one is
// updated in place.
func TestScenario36_RunnerConsumerConfig(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		c := client(t, tg.natsURL)
		for _, drift := range []bool{false, true} {
			class := uniqueClass("S36")
			dropStream(t, c, class)
			ctx := context.Background()
			if drift {
				if err := c.EnsureStream(ctx, bus.AgentStream(class)); err != nil {
					t.Fatal(err)
				}
				_, err := c.JetStream().CreateConsumer(ctx, topic.StreamName(class), jetstream.ConsumerConfig{
					Durable: "agent_runner_" + class, AckPolicy: jetstream.AckExplicitPolicy,
					FilterSubject: "agent." + class + ".*.*.*.*.control_event.*.*",
					AckWait:       7 * time.Second, MaxDeliver: 2,
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			r := startRunner(t, &linear{class: class}, agent.WithNATS(tg.natsURL), storeFor(t, tg, c), quiet(t))
			cons, err := c.JetStream().Consumer(ctx, topic.StreamName(class), r.Info().Consumer)
			if err != nil {
				t.Fatal(err)
			}
			cfg := cons.CachedInfo().Config
			if cfg.AckWait != 30*time.Second || cfg.MaxDeliver != agent.DefaultMaxDeliver || cfg.AckPolicy != jetstream.AckExplicitPolicy ||
				cfg.DeliverPolicy != jetstream.DeliverAllPolicy || cfg.FilterSubject != "agent."+class+".*.*.*.*.control_event.*.*" {
				t.Errorf("drift %v: consumer config ack_wait %v, max_deliver %d, ack %v, deliver %v, filter %q",
					drift, cfg.AckWait, cfg.MaxDeliver, cfg.AckPolicy, cfg.DeliverPolicy, cfg.FilterSubject)
			}
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// openStore returns a store for the target, for tests that inspect it.
func openStore(t testing.TB, tg target, c *natsbus.Bus) store.Store { return newStore(t, tg, c) }

// TestScenario36_FailedUpdateIsLoggedAndStartContinues: a drifted runner
// consumer that the server refuses to update (here: a stream limit on
// MaxAckPending below the runner's 1000) is logged, and the runner starts
// with the consumer's current settings.
func TestScenario36_FailedUpdateIsLoggedAndStartContinues(t *testing.T) {
	s := embedded(t)
	c := client(t, s.URL())
	class := uniqueClass("S36F")
	ctx := context.Background()
	_, err := c.JetStream().CreateStream(ctx, jetstream.StreamConfig{
		Name: topic.StreamName(class), Subjects: []string{topic.StreamSubject(class)},
		Storage: jetstream.FileStorage, Duplicates: time.Minute,
		ConsumerLimits: jetstream.StreamConsumerLimits{MaxAckPending: 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.JetStream().CreateConsumer(ctx, topic.StreamName(class), jetstream.ConsumerConfig{
		Durable: "agent_runner_" + class, AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubject: "agent." + class + ".*.*.*.*.control_event.*.*",
		AckWait:       7 * time.Second, MaxDeliver: 2, MaxAckPending: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	warned := make(chan struct{})
	w := watch(t, c, class)
	startRunner(t, &linear{class: class}, agent.WithNATS(s.URL()), agent.Standalone(),
		signalOn(t, "agent: could not reconcile the runner consumer; continuing with its current settings", warned))
	select {
	case <-warned:
	default:
		t.Error("no warning about the consumer that could not be updated")
	}
	run := newRun(class, "f")
	publish(t, c, run, userMessage("hi"), nil)
	if !event.IsStop(w.terminal(t, run.Run)) {
		t.Fatal("the runner does not serve")
	}
	cons, err := c.JetStream().Consumer(ctx, topic.StreamName(class), "agent_runner_"+class)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := cons.CachedInfo().Config; cfg.AckWait != 7*time.Second || cfg.MaxDeliver != 2 {
		t.Errorf("consumer ack_wait %v max_deliver %d, want its settings kept", cfg.AckWait, cfg.MaxDeliver)
	}
}
