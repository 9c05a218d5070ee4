package gemini

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

	"google.golang.org/genai"

	"github.com/saap-go/agent/llm"
)

// benchDeltas is the number of text deltas in the benchmark's answer.
const benchDeltas = 256

// benchBody is a recorded-style streamGenerateContent answer of
// benchDeltas text chunks, the last with the finish reason.
func benchBody() []byte {
	var b strings.Builder
	for i := range benchDeltas {
		finish := ""
		if i == benchDeltas-1 {
			finish = `,"finishReason":"STOP"`
		}
		fmt.Fprintf(&b, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\" word%d\"}],\"role\":\"model\"},\"index\":0%s}],\"usageMetadata\":{\"promptTokenCount\":9,\"candidatesTokenCount\":%d,\"totalTokenCount\":%d},\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"r1\"}\r\n\r\n", i, finish, i+1, i+10)
	}
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

func benchClient(b testing.TB) (*genai.Client, *Provider, *llm.Request) {
	hc := &http.Client{Transport: memTransport{body: benchBody()}}
	p, err := New(WithBaseURL("http://replay.invalid/"), WithAPIKey("k"), WithHTTPClient(hc), noRetries)
	if err != nil {
		b.Fatal(err)
	}
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI, HTTPClient: hc, HTTPOptions: genai.HTTPOptions{BaseURL: "http://replay.invalid/"}})
	if err != nil {
		b.Fatal(err)
	}
	return c, p, &llm.Request{Model: "gemini-2.5-flash", Messages: []llm.Message{llm.UserText("Count.")}}
}

// sdkStream reads the whole answer with the SDK alone; it returns the
// number of text deltas, touching each.
func sdkStream(c *genai.Client, req *llm.Request, untilFirst bool) int {
	call, _ := NewCall(req, "")
	n := 0
	for r, err := range c.Models.GenerateContentStream(context.Background(), call.Model, call.Contents, call.Config) {
		if err != nil {
			panic(err)
		}
		if len(r.Candidates) > 0 && r.Candidates[0].Content != nil && len(r.Candidates[0].Content.Parts) > 0 && r.Candidates[0].Content.Parts[0].Text != "" {
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
// of the benchmark answer, decoded once into the SDK's types, translated
// into events (reported per chunk, with the allocations per text delta).
func BenchmarkTranslate(b *testing.B) {
	var chunks []*genai.GenerateContentResponse
	for _, line := range strings.Split(string(benchBody()), "\n") {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok {
			continue
		}
		var r genai.GenerateContentResponse
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			b.Fatal(err)
		}
		chunks = append(chunks, &r)
	}
	var out []llm.StreamEvent
	run := func() {
		tr := newTranslator()
		for _, c := range chunks {
			out = tr.chunk(c, out[:0])
		}
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
