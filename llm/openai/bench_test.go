package openai

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

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/saap-go/agent/llm"
)

// benchDeltas is the number of text deltas in the benchmark's answer.
const benchDeltas = 256

// benchBody is a recorded-style stream of benchDeltas text chunks, a
// finish chunk and a usage chunk.
func benchBody() []byte {
	const c = `"id":"chatcmpl-1","object":"chat.completion.chunk","created":1767225600,"model":"gpt-4.1-mini-2025-04-14","system_fingerprint":"fp_1"`
	var b strings.Builder
	fmt.Fprintf(&b, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", c)
	for i := range benchDeltas {
		fmt.Fprintf(&b, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word%d\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", c, i)
	}
	fmt.Fprintf(&b, "data: {%s,\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":null}\n\n", c)
	fmt.Fprintf(&b, "data: {%s,\"choices\":[],\"usage\":{\"prompt_tokens\":14,\"completion_tokens\":256,\"total_tokens\":270}}\n\n", c)
	b.WriteString("data: [DONE]\n\n")
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

func benchClient(testing.TB) (oai.Client, *Provider, *llm.Request) {
	hc := &http.Client{Transport: memTransport{body: benchBody()}}
	opts := []option.RequestOption{option.WithBaseURL("http://replay.invalid/v1"), option.WithAPIKey("k"), option.WithHTTPClient(hc), option.WithMaxRetries(0)}
	p, _ := New(WithRequestOptions(opts...))
	req := &llm.Request{Model: "gpt-4.1-mini", Messages: []llm.Message{llm.UserText("Count.")}}
	return oai.NewClient(opts...), p, req
}

// sdkStream reads the whole answer with the SDK alone; it returns the
// number of text deltas, touching each.
func sdkStream(c oai.Client, req *llm.Request, untilFirst bool) int {
	params, _ := NewParams(req, "", false)
	params.StreamOptions.IncludeUsage = oai.Bool(true)
	s := c.Chat.Completions.NewStreaming(context.Background(), params)
	defer s.Close()
	n := 0
	for s.Next() {
		ch := s.Current()
		if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
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

// BenchmarkTranslate measures this package's own work alone: the chunks
// of the benchmark answer, decoded once by the SDK's types, translated
// into events (reported per chunk, with the allocations per text delta).
func BenchmarkTranslate(b *testing.B) {
	var chunks []oai.ChatCompletionChunk
	for _, line := range strings.Split(string(benchBody()), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c oai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			b.Fatal(err)
		}
		chunks = append(chunks, c)
	}
	var out []llm.StreamEvent
	run := func() {
		tr := newTranslator()
		for i := range chunks {
			out = tr.chunk(&chunks[i], out[:0])
		}
		out = tr.end(out[:0])
	}
	run()
	allocs := testing.AllocsPerRun(10, run)
	b.ReportAllocs()
	for b.Loop() {
		run()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(chunks)), "ns/chunk")
	b.ReportMetric(allocs/benchDeltas, "allocs/delta")
}
