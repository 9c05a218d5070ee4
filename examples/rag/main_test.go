package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/exectest"
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
	out, stderr, err := exectest.Run(t, bin, time.Minute, exectest.Env())
	if err != nil {
		t.Fatalf("exit: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	for _, want := range []string{
		"control CondenseQuestionEvent", `condensed_question="Which stream stores NATS's control events?"`,
		"control RetrieveEvent", "nats#1", "display LLMStopEvent",
		"the client's stream: UserMessageEvent, LLMStopEvent\n",
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
