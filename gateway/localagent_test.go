package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/engine"
	memstore "github.com/saap-go/agent/store/memory"

	"github.com/openai/openai-go/v3"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/discovery"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/step"
)

// engineAgent runs w with the real dispatch engine on b until the test ends
// and returns the class's discovery answer, built as the agent builds it.
func engineAgent(t *testing.T, b bus.Bus, w *step.Workflow, opts ...engine.Option) *event.AgentClassDiscoveryResponseEvent {
	t.Helper()
	ctx := context.Background()
	class := w.Class()
	if err := b.EnsureStream(ctx, bus.AgentStream(class)); err != nil {
		t.Fatalf("ensure stream: %v", err)
	}
	eng, err := engine.New(w, b, memstore.New(), append([]engine.Option{engine.WithHeartbeat(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := b.Consume(ctx, bus.RunnerConsumer(class), func(d bus.Delivery) { eng.Handle(ctx, d) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cons.Stop()
		eng.Close()
		deleteStream(b, bus.AgentStream(class).Name)
	})
	resp, err := discovery.Build(w, discovery.Class{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := discovery.Serve(ctx, b, resp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop() })
	return resp
}

// workflow is a one-step conversational agent whose step is fn.
func workflow(t *testing.T, class string, fn func(step.Context, *event.UserMessageEvent) (*event.StopEvent, error)) *step.Workflow {
	t.Helper()
	w, err := step.NewWorkflow(class, step.New(fn, step.Name("Answer")))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// announce publishes resp as an agent announces its class when it starts.
func announce(t *testing.T, b bus.Bus, resp *event.AgentClassDiscoveryResponseEvent) {
	t.Helper()
	data, err := event.Marshal(event.Stamp(resp))
	if err != nil {
		t.Fatal(err)
	}
	subj := fmt.Sprintf("class_discovery.agent.%s.*.announce.%s", resp.AgentClass, resp.EventID)
	if err := b.Publish(context.Background(), &bus.Msg{Subject: subj, Data: data}); err != nil {
		t.Fatal(err)
	}
}

// An agent started after the gateway is served as soon as it announces
// itself, well before the next discovery cycle; a 404 before that says
// what the gateway knows.
func testAnnouncedClassIsServedAtOnce(t *testing.T, nb newBusFunc) {
	b := nb(t)
	class := "Late" + bustest.Unique()
	requests := make(chan struct{}, 1)
	sub, err := b.Subscribe(context.Background(), "class_discovery.agent.*.*.request.*", "", func(*bus.Msg) {
		select {
		case requests <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	gw, err := gateway.New(gateway.Config{Bus: b, Auth: gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice}),
		DiscoveryWindow: 50 * time.Millisecond, DiscoveryPeriod: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- gw.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	srv := httptest.NewServer(gw)
	defer srv.Close()
	// The gateway listens for announcements before its first request.
	select {
	case <-requests:
	case <-ctxTimeout(t).Done():
		t.Fatal("Run published no discovery request")
	}
	path := "/agents/" + class + "/dev/UserMessageEvent"
	resp := post(t, srv, tokenAlice, path, msgs)
	body := decodeJSON(t, resp.Body)
	detail, _ := body["detail"].(string)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(detail, "known classes: none") {
		t.Fatalf("before the announcement: %d %v, want 404 listing the known classes", resp.StatusCode, body)
	}

	answer := engineAgent(t, b, workflow(t, class, func(step.Context, *event.UserMessageEvent) (*event.StopEvent, error) {
		return &event.StopEvent{}, nil
	}))
	announce(t, b, answer)
	wait, cancelWait := context.WithTimeout(t.Context(), time.Second)
	defer cancelWait()
	if _, err := gw.WaitClass(wait, class); err != nil {
		t.Fatalf("announced class not served within 1 s: %v", err)
	}
	resp = post(t, srv, tokenAlice, path, msgs)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("first request after the announcement: %d %v", resp.StatusCode, decodeJSON(t, resp.Body))
	}
	// A full cycle keeps the class, which answers discovery too.
	if _, err := gw.Discover(ctxTimeout(t)); err != nil {
		t.Fatal(err)
	}
	resp = post(t, srv, tokenAlice, "/agents/Nobody/dev/UserMessageEvent", msgs)
	body = decodeJSON(t, resp.Body)
	detail, _ = body["detail"].(string)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(detail, "known classes: "+class) ||
		!strings.Contains(detail, "discovery cycle ended at") {
		t.Fatalf("unknown class: %d %v, want 404 listing %s and the last discovery", resp.StatusCode, body, class)
	}
}

// A step's error text never reaches the end user: not in the published
// ExceptionEvent, not in the gateway's SSE stream, not in its JSON or
// OpenAI answers. They carry a reference instead.
func testStepErrorsDoNotLeak(t *testing.T, nb newBusFunc) {
	const secret = "sk-live-0123456789"
	b := nb(t)
	class := "Leaky" + bustest.Unique()
	answer := engineAgent(t, b, workflow(t, class, func(step.Context, *event.UserMessageEvent) (*event.StopEvent, error) {
		return nil, errors.New("calling the model with key " + secret + ": 401")
	}))
	gw, err := gateway.New(gateway.Config{Bus: b, Auth: gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice})})
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.AddClass(answer); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()

	resp := post(t, srv, tokenAlice, "/agents/"+class+"/dev/UserMessageEvent/stream", msgs)
	datas := dataFrames(readSSE(t, resp.Body))
	var exc *event.ExceptionEvent
	for _, d := range datas {
		if strings.Contains(d, secret) {
			t.Errorf("SSE data carries the secret: %s", d)
		}
		if d == "[DONE]" {
			continue
		}
		if e, err := event.Unmarshal([]byte(d)); err == nil {
			if x, ok := e.(*event.ExceptionEvent); ok {
				exc = x
			}
		}
	}
	if exc == nil || exc.Message != "the agent failed; reference "+exc.EventID {
		t.Fatalf("stream %q: want an ExceptionEvent with a reference", datas)
	}

	resp = post(t, srv, tokenAlice, "/agents/"+class+"/dev/UserMessageEvent", msgs)
	body := decodeJSON(t, resp.Body)
	if detail, _ := body["detail"].(string); resp.StatusCode != http.StatusInternalServerError ||
		strings.Contains(detail, secret) || !strings.Contains(detail, "reference") {
		t.Errorf("blocking answer %d %v: want 500 with a reference and no secret", resp.StatusCode, body)
	}

	client := openai.NewClient(optionsFor(srv, tokenAlice)...)
	_, err = client.Chat.Completions.New(ctxTimeout(t), openai.ChatCompletionNewParams{
		Model:    class + "/dev",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || strings.Contains(apiErr.Message, secret) || !strings.Contains(apiErr.Message, "reference") {
		t.Errorf("OpenAI answer: %v, want an API error with a reference and no secret", err)
	}
}
