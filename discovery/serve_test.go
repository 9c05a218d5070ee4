package discovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/bus/natsbus"
	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/internal/natsserver"
	"github.com/saap-go/agent/step"
	"github.com/saap-go/agent/topic"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var seq atomic.Int64

// uniqueWorkflow is chatWorkflow under a class name no other test on a
// shared server uses.
func uniqueWorkflow(t *testing.T) *step.Workflow {
	t.Helper()
	class := fmt.Sprintf("DiscoveryTest%d_%d_%d", os.Getpid(), time.Now().UnixNano(), seq.Add(1))
	wf, err := step.NewWorkflow(class, step.New(askHuman, step.Name("AskHuman")), step.New(answer, step.Name("Answer")))
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

// gateway plays the reference gateway's side of one discovery cycle
// (agent_endpoints_discovery_service.py): it listens on the responses to
// call ids and publishes an empty ClassDiscoveryRequestEvent.
type gateway struct {
	t   *testing.T
	b   bus.Bus
	got chan *bus.Msg
}

func newGateway(t *testing.T, b bus.Bus) *gateway {
	g := &gateway{t: t, b: b, got: make(chan *bus.Msg, 64)}
	sub, err := b.Subscribe(t.Context(), "class_discovery.agent.*.*.response.*", "", func(m *bus.Msg) { g.got <- m })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return g
}

// ask publishes a request addressed to class (topic.AnyClass for all) and
// returns its call id.
func (g *gateway) ask(class string) string {
	g.t.Helper()
	callID := event.NewID()
	subject, err := topic.Discovery{Kind: topic.KindAgent, Class: class, Dir: topic.DirRequest, CallID: callID}.Subject()
	if err != nil {
		g.t.Fatal(err)
	}
	req, err := event.Marshal(event.Stamp(&event.ClassDiscoveryRequestEvent{}))
	if err != nil {
		g.t.Fatal(err)
	}
	if err := g.b.Publish(g.t.Context(), &bus.Msg{Subject: subject, Data: req}); err != nil {
		g.t.Fatal(err)
	}
	return callID
}

// next returns the next response for one of callIDs; responses to other
// tests' calls on a shared server are skipped.
func (g *gateway) next(callIDs ...string) *bus.Msg {
	g.t.Helper()
	timeout := time.After(10 * time.Second) // the gateway's collection window
	for {
		select {
		case m := <-g.got:
			for _, id := range callIDs {
				if strings.HasSuffix(m.Subject, ".response."+id) {
					return m
				}
			}
		case <-timeout:
			g.t.Fatalf("no discovery response for %v within the gateway's 10 s window", callIDs)
			return nil
		}
	}
}

func TestServeAnswersTheGateway(t *testing.T) {
	bustest.EachNATS(t, func(t *testing.T, b *natsbus.Bus) {
		wf := uniqueWorkflow(t)
		resp, err := discovery.Build(wf, discovery.Class{Name: event.L("Test", "Test", "Test", "Test"), Config: agentSettings{Model: "m"}})
		if err != nil {
			t.Fatal(err)
		}
		gw := newGateway(t, b)
		r, err := discovery.Serve(t.Context(), b, resp)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Stop()

		callID := gw.ask(topic.AnyClass)
		m := gw.next(callID)
		if want := "class_discovery.agent." + wf.Class() + ".*.response." + callID; m.Subject != want {
			t.Errorf("response subject = %q, want %q", m.Subject, want)
		}
		ev, err := event.Unmarshal(m.Data)
		if err != nil {
			t.Fatalf("the response does not decode with the event codec: %v", err)
		}
		got, ok := ev.(*event.AgentClassDiscoveryResponseEvent)
		if !ok {
			t.Fatalf("decoded %T, want *event.AgentClassDiscoveryResponseEvent", ev)
		}
		if missing := event.Missing(got); len(missing) > 0 {
			t.Errorf("the response lacks required fields %v", missing)
		}
		if got.AgentClass != wf.Class() || !got.IsConversational || got.Icon != "mage:robot" {
			t.Errorf("class %q conversational %v icon %q", got.AgentClass, got.IsConversational, got.Icon)
		}
		if got.EventID == resp.EventID || !event.IsObjectID(got.EventID) {
			t.Errorf("event_id %q: each answer gets a fresh ObjectId", got.EventID)
		}
		if len(got.StartEvents) != 1 || got.StartEvents[0].EventName != "UserMessageEvent" {
			t.Fatalf("start_events = %v", names(got.StartEvents))
		}

		// The UserMessageEvent schema as the API's jambo converter gets it:
		// $defs present, messages referencing ChatMessage, nullables as anyOf.
		schema := decode(t, got.StartEvents[0].EventSchema)
		checkRefs(t, schema)
		def(t, schema, "ChatMessage")
		if ref := prop(t, schema, "messages")["items"].(obj)["$ref"]; ref != "#/$defs/ChatMessage" {
			t.Errorf("messages items = %v", ref)
		}
		files := prop(t, schema, "files")
		if any, ok := files["anyOf"].([]any); !ok || len(any) != 2 || any[1].(obj)["type"] != "null" {
			t.Errorf("files = %v, want anyOf [array, null]", files)
		}
		if len(got.HITLResponseEvents) != 1 || len(got.StopEvents) != 1 {
			t.Errorf("hitl_response_events %v stop_events %v", names(got.HITLResponseEvents), names(got.StopEvents))
		}
		var graph map[string]any
		if err := json.Unmarshal(got.NetworkGraph, &graph); err != nil || graph["directed"] != true {
			t.Errorf("network_graph = %s (%v)", got.NetworkGraph, err)
		}
		if got.AgentConfigSpecs == nil || got.AgentConfigSpecs.ConfigClass != "agentSettings" {
			t.Errorf("agent_config_specs = %+v", got.AgentConfigSpecs)
		}

		// A request addressed to the class by name is answered too.
		callID = gw.ask(wf.Class())
		if m := gw.next(callID); !strings.HasPrefix(m.Subject, "class_discovery.agent."+wf.Class()+".") {
			t.Errorf("response subject = %q", m.Subject)
		}
	})
}

func TestServeIgnoresOtherClasses(t *testing.T) {
	bustest.EachNATS(t, func(t *testing.T, b *natsbus.Bus) {
		wf := uniqueWorkflow(t)
		resp, err := discovery.Build(wf, discovery.Class{})
		if err != nil {
			t.Fatal(err)
		}
		gw := newGateway(t, b)
		r, err := discovery.Serve(t.Context(), b, resp)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Stop()
		other := gw.ask("SomeOtherClass")
		// A subject the pattern matches but the grammar rejects (the
		// fourth token must be "*") is skipped, not answered.
		bad := event.NewID()
		if err := b.Publish(t.Context(), &bus.Msg{Subject: "class_discovery.agent." + wf.Class() + ".x.request." + bad, Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		mine := gw.ask(wf.Class())
		// The responder handles requests in order, so had it answered an
		// earlier request, that answer would have come first.
		if m := gw.next(other, bad, mine); !strings.HasSuffix(m.Subject, mine) {
			t.Fatalf("answered a request it should have skipped: %s", m.Subject)
		}
	})
}

// TestServeStops runs on the embedded server only: it checks that no
// subscriber is left, which a shared server cannot tell.
func TestServeStops(t *testing.T) {
	b := bustest.NewNATS(t)
	resp, err := discovery.Build(uniqueWorkflow(t), discovery.Class{})
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := discovery.Serve(t.Context(), b, resp)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	ended, err := discovery.Serve(ctx, b, resp)
	if err != nil {
		t.Fatal(err)
	}
	if err := stopped.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := stopped.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	<-stopped.Done()
	cancel()
	<-ended.Done()
	// With both responders gone, nobody listens on request subjects: a
	// request gets "no responders" at once instead of an answer.
	subject, _ := topic.Discovery{Kind: topic.KindAgent, Class: topic.AnyClass, Dir: topic.DirRequest, CallID: event.NewID()}.Subject()
	_, err = b.Request(t.Context(), &bus.Msg{Subject: subject, Data: []byte(`{}`)})
	if !errors.Is(err, bus.ErrNoResponders) {
		t.Fatalf("request after stop: %v, want bus.ErrNoResponders", err)
	}
}

func TestServeRejectsOversizeResponses(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{MaxPayload: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	b, err := natsbus.Connect(natsbus.Config{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	resp, err := discovery.Build(uniqueWorkflow(t), discovery.Class{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := discovery.Serve(t.Context(), b, resp); !errors.Is(err, discovery.ErrTooLarge) {
		t.Fatalf("Serve of a large response on a 4 KiB server: %v, want ErrTooLarge", err)
	}
}

func TestServeRejectsBadInput(t *testing.T) {
	b := bustest.NewNATS(t)
	if _, err := discovery.Serve(t.Context(), b, nil); err == nil {
		t.Error("Serve(nil response) succeeded")
	}
	if _, err := discovery.Serve(t.Context(), nil, &event.AgentClassDiscoveryResponseEvent{AgentClass: "A"}); err == nil {
		t.Error("Serve(nil bus) succeeded")
	}
	if _, err := discovery.Serve(t.Context(), b, &event.AgentClassDiscoveryResponseEvent{AgentClass: "A.B"}); !errors.Is(err, topic.ErrInvalidToken) {
		t.Errorf("Serve with class A.B: %v, want topic.ErrInvalidToken", err)
	}
}
