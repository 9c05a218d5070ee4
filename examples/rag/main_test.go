package main

import (
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/saap-go/agent/internal/exectest"
	"github.com/saap-go/agent/internal/oispec"
)

func TestBM25Ranking(t *testing.T) {
	ix := NewIndex([]Passage{
		{ID: "a", Content: "nats nats nats stream"},
		{ID: "b", Content: "stream of events about the agent gateway and many other words that make it long"},
		{ID: "c", Content: "the gateway"},
		{ID: "d", Content: "agent agent agent agent"},
	})
	// A rare term outweighs a common one; the passage with more occurrences
	// of the rare term wins.
	hits := ix.Search("nats gateway", 4)
	if len(hits) != 3 || hits[0].ID != "a" {
		t.Fatalf("hits = %+v", hits)
	}
	// Length normalisation: the short passage beats the long one for the
	// same single occurrence.
	hits = ix.Search("gateway", 4)
	if len(hits) != 2 || hits[0].ID != "c" || hits[1].ID != "b" {
		t.Fatalf("gateway hits = %+v", hits)
	}
	// Saturation: four occurrences score less than four times one.
	one := ix.Search("stream", 4)
	four := ix.Search("agent", 4)
	if four[0].ID != "d" || four[0].Score >= 4*one[len(one)-1].Score {
		t.Errorf("no saturation: %+v vs %+v", four, one)
	}
	if got := ix.Search("zebra", 3); len(got) != 0 {
		t.Errorf("unknown term matched %+v", got)
	}
	for _, h := range ix.Search("stream gateway agent", 4) {
		if math.IsNaN(h.Score) || h.Score <= 0 {
			t.Errorf("score %v", h.Score)
		}
	}
}

func TestCorpusRetrieval(t *testing.T) {
	ix, err := LoadCorpus()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"Which stream stores NATS's control events?":    "nats#1",
		"How does the gateway speak to OpenAI clients?": "gateway#2",
		"What does a paused run cost while it waits?":   "hitl#1",
		"How does BM25 ranking weigh query terms?":      "rag#2",
	}
	for q, want := range cases {
		hits := ix.Search(q, 3)
		if len(hits) == 0 || hits[0].ID != want {
			t.Errorf("%q: best %v, want %s", q, hits, want)
		}
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
