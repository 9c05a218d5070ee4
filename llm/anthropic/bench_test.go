package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/saap-go/agent/llm"
)

// benchDeltas is the number of text deltas in the benchmark's answer.
const benchDeltas = 256

// benchBody is a recorded-style stream: message_start, one text block of
// benchDeltas deltas (with a ping), message_delta and message_stop.
func benchBody() []byte {
	var b strings.Builder
	ev := func(name, data string) { fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, data) }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	ev("ping", `{"type": "ping"}`)
	for i := range benchDeltas {
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word%d"}}`, i))
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":256}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	return []byte(b.String())
}

// memTransport replays one body from memory, so the benchmark measures
// decoding and translation, not the loopback network.
type memTransport struct{ body []byte }

func (m memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"text/event-stream"}},
		Body:    io.NopCloser(bytes.NewReader(m.body)),
		Request: r,
	}, nil
}

func benchClient(testing.TB) (sdk.Client, *Provider, *llm.Request) {
	hc := &http.Client{Transport: memTransport{body: benchBody()}}
	opts := []option.RequestOption{option.WithBaseURL("http://replay.invalid/"), option.WithAPIKey("k"), option.WithHTTPClient(hc), option.WithMaxRetries(0)}
	p, _ := New(WithRequestOptions(opts...))
	req := &llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{llm.UserText("Count.")}}
	return sdk.NewClient(opts...), p, req
}

// sdkStream reads the whole answer with the SDK alone; it returns the
// number of text deltas, touching each.
func sdkStream(c sdk.Client, req *llm.Request, untilFirst bool) int {
	params, _ := NewParams(req, "")
	s := c.Messages.NewStreaming(context.Background(), params)
	defer s.Close()
	n := 0
	for s.Next() {
		e := s.Current()
		if e.Type == "content_block_delta" && e.Delta.Text != "" {
			n++
			if untilFirst {
				break
			}
		}
	}
	return n
}

// unifiedStream reads the same answer through the llm.Stream.
func unifiedStream(p *Provider, req *llm.Request, untilFirst bool) int {
	s, err := p.Stream(context.Background(), req)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	n := 0
	for s.Next() {
		if ev := s.Event(); ev.Kind == llm.EventText && ev.Text != "" {
			n++
			if untilFirst {
				break
			}
		}
	}
	return n
}

// BenchmarkStream compares the unified stream with the SDK's own on the
// same replayed answer: whole answers (reported per chunk) and the time
// to the first text delta.
func BenchmarkStream(b *testing.B) {
	c, p, req := benchClient(b)
	for _, bc := range []struct {
		name string
		run  func(bool) int
	}{
		{"sdk", func(first bool) int { return sdkStream(c, req, first) }},
		{"unified", func(first bool) int { return unifiedStream(p, req, first) }},
	} {
		b.Run("whole/"+bc.name, func(b *testing.B) {
			if n := bc.run(false); n != benchDeltas {
				b.Fatalf("read %d deltas, want %d", n, benchDeltas)
			}
			allocs := testing.AllocsPerRun(5, func() { bc.run(false) })
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				bc.run(false)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchDeltas, "ns/chunk")
			b.ReportMetric(allocs/benchDeltas, "allocs/delta")
		})
		b.Run("first/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.run(true)
			}
		})
	}
}

// BenchmarkOverhead runs the SDK's stream and the unified one in turn
// within each iteration (alternating which goes first), so both see the
// same machine load, and reports the unified/SDK time ratio for a whole
// answer and for the first text delta.
func BenchmarkOverhead(b *testing.B) {
	c, p, req := benchClient(b)
	for _, first := range []bool{false, true} {
		name := "whole"
		if first {
			name = "first"
		}
		b.Run(name, func(b *testing.B) {
			var sdkTime, uniTime time.Duration
			i := 0
			for b.Loop() {
				t0 := time.Now()
				if i%2 == 0 {
					sdkStream(c, req, first)
					t1 := time.Now()
					unifiedStream(p, req, first)
					sdkTime += t1.Sub(t0)
					uniTime += time.Since(t1)
				} else {
					unifiedStream(p, req, first)
					t1 := time.Now()
					sdkStream(c, req, first)
					uniTime += t1.Sub(t0)
					sdkTime += time.Since(t1)
				}
				i++
			}
			per := float64(b.N)
			if !first {
				per *= benchDeltas
				b.ReportMetric(float64(sdkTime.Nanoseconds())/per, "sdk-ns/chunk")
				b.ReportMetric(float64(uniTime.Nanoseconds())/per, "unified-ns/chunk")
			} else {
				b.ReportMetric(float64(sdkTime.Nanoseconds())/per, "sdk-ns/first")
				b.ReportMetric(float64(uniTime.Nanoseconds())/per, "unified-ns/first")
			}
			b.ReportMetric(float64(uniTime)/float64(sdkTime), "unified/sdk")
		})
	}
}

// BenchmarkTranslate measures this package's own work alone: the events
// of the benchmark answer, decoded once by the SDK's types, translated
// (reported per SDK event, with the allocations per text delta).
func BenchmarkTranslate(b *testing.B) {
	var events []sdk.MessageStreamEventUnion
	for _, line := range strings.Split(string(benchBody()), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || strings.Contains(data, `"ping"`) {
			continue
		}
		var e sdk.MessageStreamEventUnion
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			b.Fatal(err)
		}
		events = append(events, e)
	}
	var out []llm.StreamEvent
	run := func() {
		var tr translator
		for i := range events {
			out = tr.event(&events[i], out[:0])
		}
	}
	run()
	allocs := testing.AllocsPerRun(10, run)
	b.ReportAllocs()
	for b.Loop() {
		run()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(events)), "ns/chunk")
	b.ReportMetric(allocs/benchDeltas, "allocs/delta")
}
