package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/bus/bustest"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/topic"
)

// benchBuses are the transports of the benchmarks.
var benchBuses = []struct {
	name string
	new  func(testing.TB) bus.Bus
}{
	{"memory", func(tb testing.TB) bus.Bus { return bustest.NewMemory(tb) }},
	{"nats", func(tb testing.TB) bus.Bus { return bustest.NewNATS(tb) }},
}

// BenchmarkRequest measures one request through the gateway against the
// same exchange done directly on the bus (the baseline): publish a
// UserMessageEvent to the agent's stream, let the responder answer with two
// chunks and a stop, and wait for the stop on the thread's display subjects.
// The difference is the gateway's cost: HTTP, authentication, building and
// checking the event, membership, the echo and SSE framing.
func BenchmarkRequest(b *testing.B) {
	for _, bb := range benchBuses {
		b.Run(bb.name+"/raw-bus", func(b *testing.B) {
			bs := bb.new(b)
			startResponder(b, bs, "EchoAgent")
			ctx := context.Background()
			user := alice
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				thread, display, run := event.NewID(), event.NewID(), event.NewID()
				pattern, _ := topic.ThreadDisplay(thread, display)
				done := make(chan struct{}, 1)
				sub, err := bs.Subscribe(ctx, pattern, "", func(m *bus.Msg) {
					if strings.Contains(m.Subject, ".StopEvent.") {
						done <- struct{}{}
					}
				})
				if err != nil {
					b.Fatal(err)
				}
				e := event.Stamp(&event.UserMessageEvent{User: &user, Messages: []event.ChatMessage{event.Text("user", "Hello")}})
				at := topic.Agent{Class: "EchoAgent", ID: "dev", Thread: thread, Display: display, Run: run}
				if _, err := bus.PublishEvent(ctx, bs, at, e, nil); err != nil {
					b.Fatal(err)
				}
				<-done
				_ = sub.Unsubscribe()
			}
		})
		for _, mode := range []string{"blocking", "sse"} {
			b.Run(bb.name+"/gateway-"+mode, func(b *testing.B) {
				bs := bb.new(b)
				startResponder(b, bs, "EchoAgent")
				gw, err := gateway.New(gateway.Config{Bus: bs, Auth: gateway.StaticTokens(map[string]event.UserIdentity{tokenAlice: alice})})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if _, err := gw.Discover(ctx, "EchoAgent"); err != nil {
					b.Fatal(err)
				}
				srv := httptest.NewServer(gw)
				defer srv.Close()
				path := srv.URL + blockPath
				if mode == "sse" {
					path = srv.URL + streamPath
				}
				client := srv.Client()
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodPost, path, strings.NewReader(msgs))
					req.Header.Set("Authorization", "Bearer "+tokenAlice)
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || !strings.Contains(string(body), "StopEvent") {
						b.Fatalf("status %d: %s", resp.StatusCode, body)
					}
				}
			})
		}
	}
}
