package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/internal/replaytest"
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

func benchClient(testing.TB) (sdk.Client, *Provider, *llm.Request) {
	hc := &http.Client{Transport: replaytest.MemTransport{Body: benchBody()}}
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

// BenchmarkStream compares the unified stream with the SDK's own on the
// same replayed answer: whole answers (reported per chunk) and the time
// to the first text delta.
func BenchmarkStream(b *testing.B) {
	c, p, req := benchClient(b)
	replaytest.BenchStream(b, benchDeltas,
		func(first bool) int { return sdkStream(c, req, first) },
		func(first bool) int { return replaytest.UnifiedStream(p, req, first) })
}

// BenchmarkOverhead reports the unified/SDK time ratio, both read in turn
// within each iteration so that both see the same machine load.
func BenchmarkOverhead(b *testing.B) {
	c, p, req := benchClient(b)
	replaytest.BenchOverhead(b, benchDeltas,
		func(first bool) int { return sdkStream(c, req, first) },
		func(first bool) int { return replaytest.UnifiedStream(p, req, first) })
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
