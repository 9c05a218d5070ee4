package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/saap-go/agent/gateway"
)

// stream is one of the gateway's own SSE answers, read in the process: the
// adapter starts and resumes runs through the gateway's agent endpoints,
// so every check of those endpoints (membership, open questions, limits)
// holds for A2A exactly as for REST.
type stream struct {
	status  int
	header  http.Header
	body    *bufio.Reader
	pr      *io.PipeReader
	done    chan struct{}
	errBody []byte
}

// pipeWriter is the http.ResponseWriter the gateway writes its answer to.
type pipeWriter struct {
	h      http.Header
	pw     *io.PipeWriter
	status chan int
	wrote  bool
}

func (p *pipeWriter) Header() http.Header { return p.h }

func (p *pipeWriter) WriteHeader(code int) {
	if p.wrote {
		return
	}
	p.wrote = true
	p.status <- code
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return p.pw.Write(b)
}

// Flush implements http.Flusher: every write already reaches the reader.
func (p *pipeWriter) Flush() {}

// call sends body to the gateway's streaming agent endpoint for event as
// the user ctx acts for, and returns the answer once its headers are in.
func (s *Server) call(ctx context.Context, class, id, eventName, thread, display string, history bool, body any) (*stream, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("a2a: encode %s: %w", eventName, err)
	}
	q := url.Values{}
	if thread != "" {
		q.Set("thread_id", thread)
	}
	if display != "" {
		q.Set("display_id", display)
	}
	if history {
		q.Set("reconstruct_history", "true")
	}
	path := "/agents/" + url.PathEscape(class) + "/" + url.PathEscape(id) + "/" + url.PathEscape(eventName) + "/stream?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("a2a: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if u, ok := gateway.UserFrom(ctx); !ok || u == nil {
		return nil, fmt.Errorf("a2a: no user for the call to %s", path)
	}
	pr, pw := io.Pipe()
	w := &pipeWriter{h: http.Header{}, pw: pw, status: make(chan int, 1)}
	st := &stream{pr: pr, done: make(chan struct{})}
	go func() {
		defer close(st.done)
		s.gw.ServeHTTP(w, req)
		w.WriteHeader(http.StatusOK) // a handler that wrote nothing
		_ = pw.Close()
	}()
	select {
	case st.status = <-w.status:
	case <-ctx.Done():
		_ = pr.CloseWithError(ctx.Err())
		return nil, ctx.Err()
	}
	st.header = w.h.Clone()
	st.body = bufio.NewReaderSize(pr, 64<<10)
	if st.status != http.StatusOK {
		st.errBody, _ = io.ReadAll(io.LimitReader(st.body, 64<<10))
		st.close()
	}
	return st, nil
}

// detail is the error text of a failed call.
func (st *stream) detail() string {
	var e struct {
		Detail string `json:"detail"`
	}
	if json.Unmarshal(st.errBody, &e) == nil && e.Detail != "" {
		return e.Detail
	}
	return string(st.errBody)
}

// next returns the payload of the next `data:` line, or io.EOF at the end
// of the stream. Comments (keep-alives) are skipped.
func (st *stream) next() ([]byte, error) {
	for {
		line, err := st.body.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if payload, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			if string(payload) == "[DONE]" {
				return nil, io.EOF
			}
			return payload, nil
		}
	}
}

// close stops reading; the gateway's handler ends when its context does.
func (st *stream) close() {
	_ = st.pr.Close()
}
