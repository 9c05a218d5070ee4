package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/saap-go/agent/internal/exectest"
	"github.com/saap-go/agent/internal/oispec"
	"github.com/saap-go/agent/knowledge"
)

// corpusQueries are questions about the corpus and the paragraph that
// answers each: the first four are the demo's, the others ask in words of
// their own.
var corpusQueries = []struct{ q, want string }{
	{"Which stream stores NATS's control events?", "nats#1"},
	{"How does the gateway speak to OpenAI clients?", "gateway#2"},
	{"What does a paused run cost while it waits?", "hitl#1"},
	{"How does BM25 ranking weigh query terms?", "rag#2"},
	{"How often are agent classes discovered?", "gateway#1"},
	{"Are display events kept anywhere?", "nats#2"},
	{"Where is an event's class name written?", "protocol#1"},
	{"When does a step run?", "protocol#2"},
	{"Do my conversations leave the company?", "swiss-ai-hub#1"},
	{"Who gets the user's message?", "swiss-ai-hub#2"},
	{"What does the client receive when a person must answer?", "hitl#2"},
	{"How does an agent answer from documents rather than memory?", "rag#1"},
	{"Which events are sent twice?", "nats#2"},
	{"How does the reply reach the run that waits for it?", "hitl#1"},
	{"What ends a run?", "protocol#2"},
	{"What format does the streaming endpoint reply in?", "gateway#1"},
}

func corpusChunks(t *testing.T) []knowledge.Chunk {
	t.Helper()
	docs, err := LoadCorpus()
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := Chunks(docs)
	if err != nil {
		t.Fatal(err)
	}
	// The chunker keeps each paragraph whole and alone.
	if len(chunks) != 12 {
		t.Fatalf("%d chunks, want the corpus's 12 paragraphs", len(chunks))
	}
	return chunks
}

// recallAt is the share of the corpus queries whose answering paragraph
// is among the first k results.
func recallAt(t *testing.T, r knowledge.Retriever, k int) float64 {
	t.Helper()
	hit := 0
	for _, c := range corpusQueries {
		res, err := r.Retrieve(context.Background(), knowledge.Query{Text: c.q, K: k})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res {
			if h.ID == c.want {
				hit++
				break
			}
		}
	}
	return float64(hit) / float64(len(corpusQueries))
}

func TestCorpusRetrieval(t *testing.T) {
	corpusChunks(t)
	retrievers := map[Retrieval]knowledge.Retriever{}
	for _, how := range []Retrieval{ByBM25, ByVector, ByHybrid} {
		r, ix, err := Retriever(context.Background(), how, "", func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		if ix != nil {
			t.Cleanup(func() { ix.Close() })
		}
		retrievers[how] = r
	}
	// The demo's questions find their paragraph first, whichever way.
	for how, r := range retrievers {
		for _, c := range corpusQueries[:4] {
			hits, err := r.Retrieve(context.Background(), knowledge.Query{Text: c.q, K: 3})
			if err != nil || len(hits) == 0 || hits[0].ID != c.want {
				t.Errorf("%s: %q: best %v (%v), want %s", how, c.q, hits, err, c.want)
			}
		}
	}
	// recall@k of every query, against BM25 as the baseline.
	recall := map[Retrieval]map[int]float64{}
	for _, k := range []int{1, 3} {
		line := fmt.Sprintf("recall@%d over %d corpus queries:", k, len(corpusQueries))
		for _, how := range []Retrieval{ByBM25, ByVector, ByHybrid} {
			if recall[how] == nil {
				recall[how] = map[int]float64{}
			}
			recall[how][k] = recallAt(t, retrievers[how], k)
			line += fmt.Sprintf(" %s %.2f", how, recall[how][k])
		}
		fmt.Println(line)
	}
	// Floors the offline embedder clears on this corpus; a retrieval that
	// broke (wrong chunks, a lost title, unfused lists) falls below them.
	if recall[ByHybrid][3] < 0.9 || recall[ByVector][3] < 0.75 || recall[ByHybrid][1] < recall[ByBM25][1]-0.15 {
		t.Errorf("recall below its floor: %v", recall)
	}
}

func TestCondenseResolvesReferences(t *testing.T) {
	if got := resolve("Which stream stores its control events?", subject("What is NATS?")); got != "Which stream stores NATS's control events?" {
		t.Errorf("resolve = %q", got)
	}
	if got := resolve("How is it deployed?", subject("Tell me about the gateway")); got != "How is the gateway deployed?" {
		t.Errorf("resolve = %q", got)
	}
	if got := resolve("What is BM25?", "x"); got != "What is BM25?" {
		t.Errorf("resolve changed a standalone question: %q", got)
	}
}

// The example runs as a process: the internal steps show as control events,
// the client's stream holds only its message and the final stop.
func TestRAGExample(t *testing.T) {
	bin := exectest.Build(t)
	t.Run("demo", func(t *testing.T) { testDemo(t, bin) })
	t.Run("trace", func(t *testing.T) { testTrace(t, bin) })
	t.Run("restart", func(t *testing.T) { testRestart(t, bin) })
}

// With -index the vector index is kept in files: the first start embeds
// the corpus, the second finds it there and embeds nothing, and answers
// the same.
func testRestart(t *testing.T, bin string) {
	dir := t.TempDir()
	var answers []string
	for i, want := range []string{"embedded and indexed 12 chunks", "holds the corpus's 12 chunks: nothing to embed"} {
		out, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env(), "-index", dir, "-ask", "Which stream stores NATS's control events?")
		if err != nil {
			t.Fatalf("start %d: %v\n%s\n%s", i+1, err, out, stderr)
		}
		if !strings.Contains(stderr, want) {
			t.Errorf("start %d: stderr lacks %q:\n%s", i+1, want, stderr)
		}
		_, answer, _ := strings.Cut(out, "answer (LLMStopEvent): ")
		answers = append(answers, answer)
	}
	if answers[0] == "" || answers[0] != answers[1] {
		t.Errorf("answers differ across the restart: %q, %q", answers[0], answers[1])
	}
}

func testDemo(t *testing.T, bin string) {
	out, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env())
	if err != nil {
		t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	for _, want := range []string{
		"control CondenseQuestionEvent", `condensed_question="Which stream stores NATS's control events?"`,
		"control RetrieveEvent", "nats#1", "display LLMStopEvent",
		"the client's stream: UserMessageEvent, RetrieverEvent, LLMStopEvent\n",
		"answer (LLMStopEvent): NATS is the messaging system",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "display CondenseQuestionEvent") || strings.Contains(out, "display RetrieveEvent") {
		t.Errorf("an internal step published a display event:\n%s", out)
	}
}

// With -trace, the retrieve step's span has a RETRIEVER child listing the
// passages it ranked, as the OpenInference specification has it.
func testTrace(t *testing.T, bin string) {
	rcv := &oispec.Receiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	out, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env("OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL),
		"-trace", "-ask", "Which stream stores NATS's control events?")
	if err != nil {
		t.Fatalf("exit: %v\n%s\n%s", err, out, stderr)
	}
	spans, errs := rcv.Spans()
	if errs != nil {
		t.Fatalf("receiver: %v", errs)
	}
	var step, retriever *tracepb.Span
	for _, sp := range spans {
		for _, bad := range oispec.Check(sp) {
			t.Errorf("span %q: %s", sp.Name, bad)
		}
		switch {
		case sp.Name == "step Retrieve":
			step = sp
		case oispec.Kind(sp) == "RETRIEVER":
			if retriever != nil {
				t.Errorf("a second RETRIEVER span %q", sp.Name)
			}
			retriever = sp
		}
	}
	if step == nil || retriever == nil {
		names := make([]string, len(spans))
		for i, sp := range spans {
			names[i] = sp.Name
		}
		t.Fatalf("no step Retrieve span or no RETRIEVER span among %v\nstderr:\n%s", names, stderr)
	}
	if string(retriever.ParentSpanId) != string(step.SpanId) {
		t.Errorf("RETRIEVER span not under step Retrieve")
	}
	attrs := map[string]*commonpb.AnyValue{}
	for _, kv := range retriever.Attributes {
		attrs[kv.Key] = kv.Value
	}
	// The step ranks the top 3 passages, the best first.
	if v := attrs["retrieval.documents.0.document.id"].GetStringValue(); v != "nats#1" {
		t.Errorf("document 0 id %q, want nats#1", v)
	}
	var prev float64
	for i, n := range []string{"0", "1", "2"} {
		p := "retrieval.documents." + n + ".document."
		if attrs[p+"id"].GetStringValue() == "" || attrs[p+"content"].GetStringValue() == "" {
			t.Errorf("document %s without id or content: %v", n, attrs)
		}
		score, ok := attrs[p+"score"].GetValue().(*commonpb.AnyValue_DoubleValue)
		if !ok || score.DoubleValue <= 0 || i > 0 && score.DoubleValue > prev {
			t.Errorf("document %s score %v, want a positive double, no higher than the one before", n, attrs[p+"score"])
		} else {
			prev = score.DoubleValue
		}
	}
	if _, ok := attrs["retrieval.documents.3.document.id"]; ok {
		t.Errorf("more than the top 3 documents")
	}
}
