package replaytest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/saap-go/agent/llm"
)

// MemTransport replays one body from memory, so that benchmarks measure
// decoding and translation, not the loopback network.
type MemTransport struct{ Body []byte }

// RoundTrip implements http.RoundTripper.
func (m MemTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"text/event-stream"}},
		Body:    io.NopCloser(bytes.NewReader(m.Body)),
		Request: r,
	}, nil
}

// UnifiedStream reads an answer through p's llm.Stream and returns the
// number of text deltas, touching each; with untilFirst it stops at the
// first.
func UnifiedStream(p llm.Provider, req *llm.Request, untilFirst bool) int {
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

// BenchStream compares the unified stream with the SDK's own on the same
// replayed answer of deltas text deltas: whole answers (reported per
// chunk) and the time to the first text delta.
func BenchStream(b *testing.B, deltas int, sdk, unified func(untilFirst bool) int) {
	for _, bc := range []struct {
		name string
		run  func(bool) int
	}{{"sdk", sdk}, {"unified", unified}} {
		b.Run("whole/"+bc.name, func(b *testing.B) {
			if n := bc.run(false); n != deltas {
				b.Fatalf("read %d deltas, want %d", n, deltas)
			}
			allocs := testing.AllocsPerRun(5, func() { bc.run(false) })
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				bc.run(false)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(deltas), "ns/chunk")
			b.ReportMetric(allocs/float64(deltas), "allocs/delta")
		})
		b.Run("first/"+bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bc.run(true)
			}
		})
	}
}

// BenchOverhead runs the SDK's stream and the unified one in turn within
// each iteration (alternating which goes first), so both see the same
// machine load, and reports the unified/SDK time ratio for a whole answer
// and for the first text delta.
func BenchOverhead(b *testing.B, deltas int, sdk, unified func(untilFirst bool) int) {
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
					sdk(first)
					t1 := time.Now()
					unified(first)
					sdkTime += t1.Sub(t0)
					uniTime += time.Since(t1)
				} else {
					unified(first)
					t1 := time.Now()
					sdk(first)
					uniTime += t1.Sub(t0)
					sdkTime += time.Since(t1)
				}
				i++
			}
			per := float64(b.N)
			if !first {
				per *= float64(deltas)
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
