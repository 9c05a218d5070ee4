package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/saap-go/agent/llm"
	"github.com/saap-go/agent/llm/internal/replaytest"
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

func benchClient(testing.TB) (oai.Client, *Provider, *llm.Request) {
	hc := &http.Client{Transport: replaytest.MemTransport{Body: benchBody()}}
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
