package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/config"
	"github.com/saap-go/agent/topic"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var classSeq atomic.Int64

// uniqueClass keeps tests on a shared server apart.
func uniqueClass() string {
	return fmt.Sprintf("ConfigTest%d_%d_%d", os.Getpid(), time.Now().UnixNano(), classSeq.Add(1))
}

// responder answers config requests as the reference API does
// (packages/api/.../rpc/agent_config_responder.py): it reads class and id
// from the body and replies with the stored config. reply returns the body
// to send, or nil to stay silent.
func responder(t *testing.T, b bus.Bus, class string, reply func(req config.Request) []byte) <-chan config.Request {
	t.Helper()
	seen := make(chan config.Request, 16)
	sub, err := b.Subscribe(t.Context(), topic.ConfigRequests(topic.KindAgent), "", func(m *bus.Msg) {
		var req config.Request
		if err := json.Unmarshal(m.Data, &req); err != nil {
			t.Errorf("responder: request body %q: %v", m.Data, err)
			return
		}
		if req.AgentClass != class {
			return // another test's request on a shared server
		}
		seen <- req
		if body := reply(req); body != nil {
			if err := bus.Respond(context.Background(), b, m, body, nil); err != nil {
				t.Errorf("responder: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return seen
}

func replyJSON(class, id string, cfg any, found bool, errMsg any) []byte {
	b, _ := json.Marshal(map[string]any{
		"agent_class": class, "agent_id": id, "config": cfg, "found": found, "error": errMsg,
	})
	return b
}

type agentConfig struct {
	Model       string   `json:"model"`
	Temperature float64  `json:"temperature"`
	Tools       []string `json:"tools"`
	Prompt      prompt   `json:"prompt"`
}

type prompt struct {
	System string `json:"system"`
	Locale string `json:"locale"`
}

var agentDefaults = agentConfig{
	Model: "gpt-4o", Temperature: 0.2, Tools: []string{"search"},
	Prompt: prompt{System: "You are helpful.", Locale: "de"},
}

func TestLoadOverRPC(t *testing.T) {
	bustest.EachNATS(t, func(t *testing.T, b *natsbus.Bus) {
		class := uniqueClass()
		seen := responder(t, b, class, func(req config.Request) []byte {
			return replyJSON(req.AgentClass, req.AgentID, map[string]any{
				"temperature": 0.9,
				"prompt":      map[string]any{"locale": "fr"},
			}, true, nil)
		})
		got, err := config.Load(t.Context(), config.NewClient(b), class, "wiki", agentDefaults)
		if err != nil {
			t.Fatal(err)
		}
		want := agentDefaults
		want.Temperature = 0.9
		want.Prompt.Locale = "fr"
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Load (-want +got):\n%s", diff)
		}
		if req := <-seen; req != (config.Request{AgentClass: class, AgentID: "wiki"}) {
			t.Errorf("request body = %+v", req)
		}
	})
}

func TestFetchSubjectAndBody(t *testing.T) {
	bustest.EachNATS(t, func(t *testing.T, b *natsbus.Bus) {
		class := uniqueClass()
		subject, _ := topic.AgentConfig(class, "wiki").Subject()
		got := make(chan *bus.Msg, 1)
		sub, err := b.Subscribe(t.Context(), subject, "", func(m *bus.Msg) {
			got <- m
			_ = bus.Respond(context.Background(), b, m, replyJSON(class, "wiki", map[string]any{}, true, nil), nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sub.Unsubscribe() }()
		raw, err := config.NewClient(b).Fetch(t.Context(), class, "wiki")
		if err != nil || string(raw) != "{}" {
			t.Fatalf("Fetch = %s, %v; want {}", raw, err)
		}
		m := <-got
		if m.Subject != "aihub.rpc.config.agent."+class+".wiki" {
			t.Errorf("subject = %q", m.Subject)
		}
		var body map[string]any
		if err := json.Unmarshal(m.Data, &body); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]any{"agent_class": class, "agent_id": "wiki"}, body); diff != "" {
			t.Errorf("body (-want +got):\n%s", diff)
		}
	})
}

// A process's configuration comes over the same RPC on the process
// subject, with the process's names in the body; found:false is
// ErrNotFound, as for agents.
func TestFetchProcess(t *testing.T) {
	bustest.EachNATS(t, func(t *testing.T, b *natsbus.Bus) {
		class := uniqueClass()
		subject, _ := topic.ProcessConfig(class, "acme").Subject()
		got := make(chan *bus.Msg, 2)
		var notFound atomic.Bool
		sub, err := b.Subscribe(t.Context(), subject, "", func(m *bus.Msg) {
			got <- m
			body := `{"config": {"limit": 3}, "found": true}`
			if notFound.Load() {
				body = `{"config": null, "found": false, "error": "no profile acme"}`
			}
			_ = bus.Respond(context.Background(), b, m, []byte(body), nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sub.Unsubscribe() }()
		c := config.NewClient(b)
		raw, err := c.FetchProcess(t.Context(), class, "acme")
		if err != nil || string(raw) != `{"limit": 3}` {
			t.Fatalf("FetchProcess = %s, %v", raw, err)
		}
		m := <-got
		if m.Subject != "aihub.rpc.config.process."+class+".acme" {
			t.Errorf("subject = %q", m.Subject)
		}
		var body map[string]any
		if err := json.Unmarshal(m.Data, &body); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]any{"process_class": class, "process_id": "acme"}, body); diff != "" {
			t.Errorf("body (-want +got):\n%s", diff)
		}
		notFound.Store(true)
		if _, err := c.FetchProcess(t.Context(), class, "acme"); !errors.Is(err, config.ErrNotFound) {
			t.Errorf("found:false: got %v, want ErrNotFound", err)
		}
	})
}

func TestFetchErrors(t *testing.T) {
	bustest.EachNATS(t, func(t *testing.T, b *natsbus.Bus) {
		class := uniqueClass()
		responder(t, b, class, func(req config.Request) []byte {
			switch req.AgentID {
			case "missing":
				return replyJSON(req.AgentClass, req.AgentID, map[string]any{}, false, "no profile wiki")
			case "raising":
				return []byte(`{"error": "database unreachable", "error_type": "ConnectionError"}`)
			case "null-config":
				return replyJSON(req.AgentClass, req.AgentID, nil, true, nil)
			case "array-config":
				return replyJSON(req.AgentClass, req.AgentID, []int{1}, true, nil)
			case "garbage":
				return []byte(`not json`)
			case "no-found-key":
				return []byte(`{"agent_class": "` + req.AgentClass + `", "agent_id": "no-found-key", "config": {"a": 1}}`)
			case "silent":
				return nil
			}
			return replyJSON(req.AgentClass, req.AgentID, map[string]any{}, true, nil)
		})
		c := config.NewClient(b, config.WithTimeout(300*time.Millisecond))
		ctx := t.Context()

		if _, err := c.Fetch(ctx, class, "missing"); !errors.Is(err, config.ErrNotFound) {
			t.Errorf("found:false: got %v, want ErrNotFound", err)
		}

		_, err := c.Fetch(ctx, class, "raising")
		var re *bus.RemoteError
		if !errors.As(err, &re) || re.Type != "ConnectionError" || re.Message != "database unreachable" {
			t.Errorf("error reply: got %v, want *bus.RemoteError ConnectionError", err)
		}

		if raw, err := c.Fetch(ctx, class, "null-config"); err != nil || string(raw) != "{}" {
			t.Errorf("config null: got %s, %v; want {} (defaults)", raw, err)
		}
		if _, err := c.Fetch(ctx, class, "array-config"); !errors.Is(err, config.ErrBadReply) {
			t.Errorf("config array: got %v, want ErrBadReply", err)
		}
		if raw, err := c.Fetch(ctx, class, "no-found-key"); err != nil || string(raw) != `{"a": 1}` {
			t.Errorf("reply without found: got %s, %v; want the config (counts as found)", raw, err)
		}
		if _, err := c.Fetch(ctx, class, "garbage"); !errors.Is(err, config.ErrBadReply) {
			t.Errorf("garbage: got %v, want ErrBadReply", err)
		}

		start := time.Now()
		_, err = c.Fetch(ctx, class, "silent")
		if !errors.Is(err, config.ErrTimeout) {
			t.Errorf("silent responder: got %v, want ErrTimeout", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("timeout took %v, the client's timeout is 300ms", d)
		}
	})
}

// TestFetchNoResponders runs on the embedded server only: on a shared
// server another test's wildcard config responder may be listening.
func TestFetchNoResponders(t *testing.T) {
	b := bustest.NewNATS(t)
	_, err := config.NewClient(b).Fetch(t.Context(), uniqueClass(), "wiki")
	if !errors.Is(err, bus.ErrNoResponders) {
		t.Fatalf("got %v, want bus.ErrNoResponders", err)
	}
	if errors.Is(err, config.ErrTimeout) {
		t.Fatalf("no responders reported as a timeout: %v", err)
	}
}

func TestFetchCallerCancel(t *testing.T) {
	bustest.EachNATS(t, func(t *testing.T, b *natsbus.Bus) {
		class := uniqueClass()
		seen := responder(t, b, class, func(config.Request) []byte { return nil })
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		var err error
		wg.Go(func() { _, err = config.NewClient(b).Fetch(ctx, class, "wiki") })
		<-seen // the request is in flight
		cancel()
		wg.Wait()
		if !errors.Is(err, context.Canceled) || errors.Is(err, config.ErrTimeout) {
			t.Fatalf("got %v, want context.Canceled (not ErrTimeout)", err)
		}
	})
}

func TestLoadValidationFailure(t *testing.T) {
	bustest.EachNATS(t, func(t *testing.T, b *natsbus.Bus) {
		class := uniqueClass()
		responder(t, b, class, func(req config.Request) []byte {
			return replyJSON(req.AgentClass, req.AgentID, map[string]any{
				"temperature": "sk-secret", "tools": "sk-secret",
			}, true, nil)
		})
		_, err := config.Load(t.Context(), config.NewClient(b), class, "wiki", agentDefaults)
		var ve *config.ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("got %v, want *ValidationError", err)
		}
		if diff := cmp.Diff([]string{"temperature", "tools"}, ve.Fields); diff != "" {
			t.Errorf("Fields (-want +got):\n%s", diff)
		}
	})
}

func TestFetchRejectsInvalidTokens(t *testing.T) {
	c := config.NewClient(nil)
	if _, err := c.Fetch(t.Context(), "Class", "id"); err == nil {
		t.Error("Fetch on a Client without a bus succeeded")
	}
	b := bustest.NewNATS(t)
	for _, tc := range []struct{ class, id string }{{"", "id"}, {"Class", ""}, {"A.B", "id"}, {"Class", "a b"}, {"*", "id"}} {
		_, err := config.NewClient(b).Fetch(t.Context(), tc.class, tc.id)
		if !errors.Is(err, topic.ErrInvalidToken) {
			t.Errorf("Fetch(%q, %q) = %v, want topic.ErrInvalidToken", tc.class, tc.id, err)
		}
	}
}

func TestStandalone(t *testing.T) {
	got, err := config.Load(t.Context(), config.Standalone(), "AnyClass", "any", agentDefaults)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(agentDefaults, got); diff != "" {
		t.Errorf("Standalone (-want +got):\n%s", diff)
	}
}
