package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/saap-go/agent/event"
)

// sse writes Server-Sent Events and flushes after each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
	// deadline extends the write deadline per event, so http.Server's
	// WriteTimeout does not cut a long stream.
	rc *http.ResponseController
}

func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-store, must-revalidate, no-transform")
	h.Set("X-Accel-Buffering", "no")
	h.Set("Connection", "keep-alive")
	h.Set("Content-Encoding", "identity")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	s := &sse{w: w, f: f, rc: http.NewResponseController(w)}
	s.flush()
	return s
}

func (s *sse) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

func (s *sse) write(parts ...[]byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(time.Minute))
	for _, p := range parts {
		if _, err := s.w.Write(p); err != nil {
			return err
		}
	}
	s.flush()
	return nil
}

var (
	dataPrefix = []byte("data: ")
	eventEnd   = []byte("\n\n")
	doneLine   = []byte("data: [DONE]\n\n")
	keepAlive  = []byte(": keep-alive\n\n")
)

func (s *sse) data(payload []byte) error { return s.write(dataPrefix, payload, eventEnd) }
func (s *sse) done() error               { return s.write(doneLine) }
func (s *sse) comment() error            { return s.write(keepAlive) }

// streamSSE streams every display event of the watched thread and display
// as `data: <event JSON>` until the terminal event, then `data: [DONE]`. A
// keep-alive comment goes out every KeepAlive. On timeout the stream ends
// with an ExceptionEvent (http_status_code 504) made by the gateway, so
// clients that only read data lines see why it ended.
func (g *Gateway) streamSSE(w http.ResponseWriter, r *http.Request, wt *watch, p primary) {
	s := newSSE(w)
	_, err := g.follow(r.Context(), wt, p, func(x *seen) error { return s.data(x.raw) }, s.comment)
	if errors.Is(err, errTimeout) {
		ex := &event.ExceptionEvent{
			Message:        fmt.Sprintf("gateway: no answer from %s/%s within %s", p.class, p.id, g.cfg.Timeout),
			HTTPStatusCode: http.StatusGatewayTimeout,
		}
		event.Stamp(ex)
		if data, merr := event.Marshal(ex); merr == nil {
			err = s.data(data)
		} else {
			err = nil
		}
	}
	if err != nil {
		return // client gone or write failed: nothing more to say
	}
	_ = s.done()
}
