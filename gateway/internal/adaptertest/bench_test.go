package adaptertest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
	"github.com/saap-go/agent/gateway/agui"
	"github.com/saap-go/agent/gateway/internal/adaptertest"
	"github.com/saap-go/agent/gateway/mcp"
	"github.com/saap-go/agent/gateway/ws"
)

// BenchmarkAdapters runs the same run (a thought, a tool call, two chunks
// and a stop) through the plain SSE endpoint and each adapter, in one
// process on an embedded nats-server, and reports the time to the first
// text and to completion (ms-first-text, ms-done per run).
func BenchmarkAdapters(b *testing.B) {
	e := adaptertest.Start(b, nil, func(g *gateway.Gateway) {
		agui.Mount(g)
		mcp.Mount(g, mcp.Options{AgentID: "dev"})
		ws.Mount(g, ws.Options{})
	})
	client := e.Server.Client()
	// stream posts body to path and times the first line containing first
	// and the first containing done.
	stream := func(b *testing.B, path, body, first, done string) (time.Duration, time.Duration) {
		t0 := time.Now()
		req, _ := http.NewRequest(http.MethodPost, e.Server.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+adaptertest.TokenAlice)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var ttft time.Duration
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if ttft == 0 && strings.Contains(line, first) {
				ttft = time.Since(t0)
			}
			if strings.Contains(line, done) {
				return ttft, time.Since(t0)
			}
		}
		b.Fatalf("%s: stream ended early (status %d)", path, resp.StatusCode)
		return 0, 0
	}
	sseBody := `{"messages":[{"role":"user","content":"hi"}]}`
	ssePath := "/agents/" + adaptertest.Class + "/dev/UserMessageEvent/stream"
	sse := func(b *testing.B) (time.Duration, time.Duration) {
		return stream(b, ssePath, sseBody, "ChunkEvent", "[DONE]")
	}
	// report alternates the adapter's run with the SSE endpoint's, so both
	// see the same load, and reports both and their ratios.
	report := func(b *testing.B, run func() (time.Duration, time.Duration)) {
		var first, done, sseFirst, sseDone time.Duration
		for b.Loop() {
			f, d := sse(b)
			sseFirst += f
			sseDone += d
			f, d = run()
			first += f
			done += d
		}
		n := float64(b.N)
		b.ReportMetric(float64(first.Microseconds())/1000/n, "ms-first-text")
		b.ReportMetric(float64(done.Microseconds())/1000/n, "ms-done")
		b.ReportMetric(float64(sseFirst.Microseconds())/1000/n, "sse-ms-first-text")
		b.ReportMetric(float64(sseDone.Microseconds())/1000/n, "sse-ms-done")
		b.ReportMetric(float64(first)/float64(sseFirst), "x-sse-first-text")
		b.ReportMetric(float64(done)/float64(sseDone), "x-sse-done")
		b.ReportMetric(0, "ns/op")
	}

	b.Run("agui", func(b *testing.B) {
		body := `{"threadId":"bench","runId":"r","messages":[{"id":"m","role":"user","content":"hi"}]}`
		report(b, func() (time.Duration, time.Duration) {
			// A new thread per run, as the SSE endpoint's.
			return stream(b, "/agui/"+adaptertest.Class+"/dev", strings.Replace(body, "bench", gatewayID(), 1), "TEXT_MESSAGE_CONTENT", "RUN_FINISHED")
		})
	})
	b.Run("mcp", func(b *testing.B) {
		progress := make(chan time.Time, 16)
		c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, &sdk.ClientOptions{
			ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) { progress <- time.Now() },
		})
		s, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: e.Server.URL + "/mcp",
			HTTPClient: &http.Client{Transport: bearer(adaptertest.TokenAlice)}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		report(b, func() (time.Duration, time.Duration) {
			t0 := time.Now()
			p := &sdk.CallToolParams{Name: adaptertest.Class, Arguments: map[string]any{"message": "hi"}}
			p.SetProgressToken("bench")
			res, err := s.CallTool(context.Background(), p)
			done := time.Since(t0)
			if err != nil || res.IsError {
				b.Fatalf("call: %v %+v", err, res)
			}
			first := (<-progress).Sub(t0)
			<-progress
			return first, done
		})
	})
	b.Run("ws", func(b *testing.B) {
		// The WebSocket stream shows the run started on the SSE endpoint.
		url := "ws" + strings.TrimPrefix(e.Server.URL, "http") + "/events/ws"
		conn, _, err := websocket.Dial(context.Background(), url, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.CloseNow()
		if err := conn.Write(context.Background(), websocket.MessageText, []byte(`{"token":"Bearer `+adaptertest.TokenAlice+`"}`)); err != nil {
			b.Fatal(err)
		}
		// Runs until the stream shows one: then it is on.
		on := make(chan struct{})
		warmed := make(chan struct{})
		go func() {
			defer close(warmed)
			for {
				select {
				case <-on:
					return
				default:
					stream(b, ssePath, sseBody, "ChunkEvent", "[DONE]")
				}
			}
		}()
		waitFor(b, conn, `"event_name":"Answered"`)
		close(on)
		<-warmed
		report(b, func() (time.Duration, time.Duration) {
			thread := event.NewID()
			t0 := time.Now()
			done := make(chan struct{})
			go func() {
				defer close(done)
				stream(b, ssePath+"?thread_id="+thread, sseBody, "ChunkEvent", "[DONE]")
			}()
			first := waitFor(b, conn, `"thread_id":"`+thread+`"`, `"event_name":"ChunkEvent"`).Sub(t0)
			end := waitFor(b, conn, `"thread_id":"`+thread+`"`, `"event_name":"Answered"`).Sub(t0)
			<-done
			return first, end
		})
	})
}

// waitFor reads messages until one contains every string of all and
// returns when it came.
func waitFor(b *testing.B, conn *websocket.Conn, all ...string) time.Time {
next:
	for {
		_, data, err := conn.Read(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range all {
			if !strings.Contains(string(data), s) {
				continue next
			}
		}
		return time.Now()
	}
}

type bearer string

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(t))
	return http.DefaultTransport.RoundTrip(r)
}

func gatewayID() string { return "bench-" + time.Now().Format("150405.000000000") }

// BenchmarkMCPInMemory calls the MCP tool over the SDK's in-memory
// transports, alternating with the same run through Gateway.Start, and
// reports the call's time against the direct run (x-direct) and the tool
// handler's own time against it (x-direct-handler): the difference is
// the SDK's JSON-RPC round trip.
func BenchmarkMCPInMemory(b *testing.B) {
	e := adaptertest.Start(b, nil, nil)
	srv := mcp.NewServer(e.Gateway, &adaptertest.Alice, mcp.Options{AgentID: "dev"})
	var inner atomic.Int64 // ns in the tools/call handler
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			t0 := time.Now()
			r, err := next(ctx, method, req)
			if method == "tools/call" {
				inner.Add(int64(time.Since(t0)))
			}
			return r, err
		}
	})
	ct, st := sdk.NewInMemoryTransports()
	go func() { _ = srv.Run(context.Background(), st) }()
	c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	s, err := c.Connect(context.Background(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var mcpT, direct time.Duration
	msgs, _ := event.MarshalValue([]event.ChatMessage{{Role: "user", Blocks: []event.Block{&event.TextBlock{Text: "hi"}}, AdditionalKwargs: map[string]json.RawMessage{}}})
	for b.Loop() {
		t0 := time.Now()
		if _, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: adaptertest.Class, Arguments: map[string]any{"message": "hi"}}); err != nil {
			b.Fatal(err)
		}
		mcpT += time.Since(t0)
		t0 = time.Now()
		st, err := e.Gateway.Start(context.Background(), gateway.RunRequest{User: &adaptertest.Alice, Class: adaptertest.Class, AgentID: "dev", Body: map[string]json.RawMessage{"messages": msgs}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.Follow(context.Background(), func(gateway.StreamEvent) error { return nil }, nil); err != nil {
			b.Fatal(err)
		}
		st.Close()
		direct += time.Since(t0)
	}
	b.ReportMetric(float64(mcpT)/float64(direct), "x-direct")
	b.ReportMetric(float64(inner.Load())/float64(direct), "x-direct-handler")
}
