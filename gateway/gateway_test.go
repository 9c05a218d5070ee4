package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/gateway"
)

const (
	tokenAlice = "alice-token"
	tokenBob   = "bob-token"
	msgs       = `{"messages":[{"role":"user","content":"Hello"}]}`
)

// post sends body to path as the user of token.
func post(t *testing.T, srv *httptest.Server, token, path, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// sseFrame is one server-sent event or comment as it was framed.
type sseFrame struct {
	comment bool
	data    string
}

// readSSE reads the whole stream and checks its framing: every frame is a
// block of lines ended by a blank line; data frames have exactly one
// `data: ` line; comments start with ':'.
func readSSE(t *testing.T, r io.Reader) []sseFrame {
	t.Helper()
	var frames []sseFrame
	var block []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line != "" {
			block = append(block, line)
			continue
		}
		if len(block) != 1 {
			t.Fatalf("SSE frame with %d lines, want 1: %q", len(block), block)
		}
		switch l := block[0]; {
		case strings.HasPrefix(l, ":"):
			frames = append(frames, sseFrame{comment: true, data: l})
		case strings.HasPrefix(l, "data: "):
			frames = append(frames, sseFrame{data: strings.TrimPrefix(l, "data: ")})
		default:
			t.Fatalf("unexpected SSE line %q", l)
		}
		block = nil
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading SSE: %v", err)
	}
	if len(block) != 0 {
		t.Fatalf("SSE stream ends inside a frame: %q", block)
	}
	return frames
}

// dataFrames drops comments.
func dataFrames(fs []sseFrame) []string {
	var out []string
	for _, f := range fs {
		if !f.comment {
			out = append(out, f.data)
		}
	}
	return out
}

// names decodes each SSE data line as an event and returns its name ([DONE] as is).
func names(t *testing.T, datas []string) []string {
	t.Helper()
	out := make([]string, len(datas))
	for i, d := range datas {
		if d == "[DONE]" {
			out[i] = d
			continue
		}
		e, err := event.Unmarshal([]byte(d))
		if err != nil {
			t.Fatalf("data %d is not an event: %v: %s", i, err, d)
		}
		out[i] = event.Name(e)
	}
	return out
}

func decodeJSON(t *testing.T, r io.Reader) map[string]any {
	t.Helper()
	var m map[string]any
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, data)
	}
	return m
}

func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var _ = bytes.NewReader
var _ = gateway.New
