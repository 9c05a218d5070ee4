package a2a_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/internal/cputime"
)

// timed posts body to url as alice and reads the streamed answer to its
// end, returning when the first line containing first arrived and when the
// stream ended.
func timed(tb testing.TB, client *http.Client, url, body, first string) (toFirst, toEnd time.Duration) {
	start := time.Now()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tokenAlice)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
		if toFirst == 0 && strings.Contains(sc.Text(), first) {
			toFirst = time.Since(start)
		}
	}
	toEnd = time.Since(start)
	if resp.StatusCode != http.StatusOK || toFirst == 0 {
		tb.Fatalf("%s: status %d, %d lines, no %q", url, resp.StatusCode, lines, first)
	}
	return toFirst, toEnd
}

// BenchmarkStream measures one run of the greeter (three ChunkEvents and a
// stop, a real agent on an embedded nats-server) streamed through the
// gateway's plain SSE endpoint and through A2A message/stream, in the same
// process, alternating which goes first. It reports the time to the first
// text (the first ChunkEvent; the first artifact update) and to the end of
// the stream for both, the process's CPU time per request of each, and the
// A2A/SSE ratios.
func BenchmarkStream(b *testing.B) {
	e := newEnv(b)
	client := e.srv.Client()
	sseURL := e.srv.URL + "/agents/" + e.class + "/" + agentID + "/UserMessageEvent/stream"
	sseBody := `{"messages":[{"role":"user","content":"world"}]}`
	rpcBody := `{"jsonrpc":"2.0","id":1,"method":"message/stream","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"world"}]}}}`
	var sseFirst, sseEnd, a2aFirst, a2aEnd, sseCPU, a2aCPU time.Duration
	i := 0
	for b.Loop() {
		sse := func() {
			c := cputime.Now()
			f, d := timed(b, client, sseURL, sseBody, `"ChunkEvent"`)
			sseFirst, sseEnd, sseCPU = sseFirst+f, sseEnd+d, sseCPU+cputime.Now()-c
		}
		a2a := func() {
			c := cputime.Now()
			f, d := timed(b, client, e.url, rpcBody, `"artifact-update"`)
			a2aFirst, a2aEnd, a2aCPU = a2aFirst+f, a2aEnd+d, a2aCPU+cputime.Now()-c
		}
		if i%2 == 0 {
			sse()
			a2a()
		} else {
			a2a()
			sse()
		}
		i++
	}
	n := float64(i)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
	b.ReportMetric(ms(sseFirst), "sse-first-ms")
	b.ReportMetric(ms(a2aFirst), "a2a-first-ms")
	b.ReportMetric(ms(sseEnd), "sse-done-ms")
	b.ReportMetric(ms(a2aEnd), "a2a-done-ms")
	b.ReportMetric(float64(a2aFirst)/float64(sseFirst), "first-ratio")
	b.ReportMetric(float64(a2aEnd)/float64(sseEnd), "done-ratio")
	b.ReportMetric(ms(sseCPU), "sse-cpu-ms")
	b.ReportMetric(ms(a2aCPU), "a2a-cpu-ms")
	b.ReportMetric(float64(a2aCPU)/float64(sseCPU), "cpu-ratio")
}
