package gateway_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func classNames(gw *gateway.Gateway) []string {
	var out []string
	for _, c := range gw.Classes() {
		out = append(out, c.Name())
	}
	return out
}

func testDiscoveryCycle(t *testing.T, nb newBusFunc) {
	b := nb(t)
	startResponder(t, b, "EchoAgent")
	startResponder(t, b, "OtherAgent")
	// A malformed answer, or an event of another type, is ignored, not fatal:
	// answers pass the event codec as AgentClassDiscoveryResponseEvent.
	sub, err := b.Subscribe(context.Background(), "class_discovery.agent.*.*.request.*", "", func(m *bus.Msg) {
		callID := m.Subject[len("class_discovery.agent.*.*.request."):]
		_ = b.Publish(context.Background(), &bus.Msg{Subject: "class_discovery.agent.Broken.*.response." + callID, Data: []byte(`{"agent_class":`)})
		_ = b.Publish(context.Background(), &bus.Msg{Subject: "class_discovery.agent.Impostor.*.response." + callID,
			Data: []byte(`{"_event_name":"ChunkEvent","agent_class":"Impostor","content":"x"}`)})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	gw, err := gateway.New(gateway.Config{Bus: b, Auth: gateway.Anonymous(alice), DiscoveryWindow: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.AddClass(&event.AgentClassDiscoveryResponseEvent{AgentClass: "Ghost"}); err != nil {
		t.Fatal(err)
	}
	// Waiting for named classes ends the cycle early and removes nothing.
	got, err := gw.Discover(ctxTimeout(t), "EchoAgent")
	if err != nil || !slices.Contains(got, "EchoAgent") {
		t.Fatalf("Discover(EchoAgent) = %v, %v", got, err)
	}
	if !slices.Contains(classNames(gw), "Ghost") {
		t.Errorf("an early-ended cycle removed Ghost: %v", classNames(gw))
	}
	// A full window removes classes that did not answer.
	got, err = gw.Discover(ctxTimeout(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"EchoAgent", "OtherAgent"}; !containsAll(got, want) || !slices.Equal(got, classNames(gw)) || slices.Contains(got, "Ghost") || slices.Contains(got, "Impostor") {
		t.Fatalf("after a full cycle: answered %v, serving %v; want %v", got, classNames(gw), want)
	}
	c, _ := gw.Class("EchoAgent")
	// The answer is the library type, decoded by the codec: declared fields
	// and the event's identity survive.
	r := c.Response
	if !r.IsConversational || len(r.StartEvents) != 1 || r.StartEvents[0].EventName != "UserMessageEvent" ||
		len(r.HITLResponseEvents) != 1 || r.Name == nil || r.Name.En != "EchoAgent" || r.Icon != "mage:robot" ||
		r.EventID == "" || event.Name(r) != "AgentClassDiscoveryResponseEvent" || c.Discovered.IsZero() {
		t.Errorf("class = %+v", r)
	}
	if _, ok := r.StartEvents[0].EventSchema["properties"]; !ok {
		t.Errorf("start event schema lost: %s", r.StartEvents[0].EventSchema)
	}
	// A wanted class that never answers is an error naming it.
	if _, err := gw.Discover(ctxTimeout(t), "Nobody"); err == nil {
		t.Error("Discover(Nobody) succeeded")
	}
	if err := gw.AddClass(&event.AgentClassDiscoveryResponseEvent{AgentClass: "bad.name"}); err == nil {
		t.Error("AddClass accepted an invalid class token")
	}
	if err := gw.AddClass(nil); err == nil {
		t.Error("AddClass accepted nil")
	}
}

func testRunDiscoversUntilCancelled(t *testing.T, nb newBusFunc) {
	b := nb(t)
	startResponder(t, b, "EchoAgent")
	seen := make(chan struct{})
	// The responder answers; we observe the request the loop publishes.
	sub, err := b.Subscribe(context.Background(), "class_discovery.agent.*.*.response.*", "", func(*bus.Msg) {
		select {
		case seen <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	gw, err := gateway.New(gateway.Config{Bus: b, Auth: gateway.Anonymous(alice),
		DiscoveryWindow: 50 * time.Millisecond, DiscoveryPeriod: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- gw.Run(ctx) }()
	select {
	case <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("Run published no discovery request")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := gateway.New(gateway.Config{}); err == nil {
		t.Error("New without a bus succeeded")
	}
	if _, err := gateway.New(gateway.Config{Bus: bustest.NewMemory(t)}); err == nil {
		t.Error("New without an authenticator succeeded")
	}
	_ = event.NewID
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
