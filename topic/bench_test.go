package topic

import (
	"strings"
	"testing"
)

// Real-shaped agent subject: ObjectId ids, as the platform produces.
var benchAgent = Agent{"RAGAgent", "wiki", "66b9f0a1c2d3e4f5a6b7c8d0", "66b9f0a1c2d3e4f5a6b7c8d1",
	"66b9f0a1c2d3e4f5a6b7c8d2", Control, "UserMessageEvent", "66b9f0a1c2d3e4f5a6b7c8d3"}

var benchSubject = benchAgent.String()

var sinkString string
var sinkAgent Agent

// BenchmarkAgentSubject builds a validated agent subject.
func BenchmarkAgentSubject(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkString, _ = benchAgent.Subject()
	}
}

// BenchmarkAgentSubjectBaseline is the same string with strings.Join and
// no validation: the cost floor Subject is compared against.
func BenchmarkAgentSubjectBaseline(b *testing.B) {
	b.ReportAllocs()
	a := benchAgent
	for b.Loop() {
		sinkString = strings.Join([]string{"agent", a.Class, a.ID, a.Thread, a.Display, a.Run,
			string(a.Type), a.Name, a.EventID}, ".")
	}
}

// BenchmarkParseAgent parses and validates an agent subject.
func BenchmarkParseAgent(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkAgent, _ = ParseAgent(benchSubject)
	}
}

// BenchmarkParseAgentBaseline splits with strings.Split and checks only the
// count and root, as the reference does.
func BenchmarkParseAgentBaseline(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		t := strings.Split(benchSubject, ".")
		if len(t) != 9 || t[0] != "agent" {
			b.Fatal("bad subject")
		}
		sinkAgent = Agent{t[1], t[2], t[3], t[4], t[5], EventType(t[6]), t[7], t[8]}
	}
}

// BenchmarkClassControl builds the runner's subscription pattern.
func BenchmarkClassControl(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sinkString, _ = ClassControl("RAGAgent")
	}
}
