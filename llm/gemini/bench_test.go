package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/internal/replaytest"
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

func benchClient(b testing.TB) (*genai.Client, *Provider, *llm.Request) {
	hc := &http.Client{Transport: replaytest.MemTransport{Body: benchBody()}}
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
