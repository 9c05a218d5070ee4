package gemini

import (
	"google.golang.org/genai"

	"github.com/saap-go/agent/llm"
)

// stream adapts the SDK's iterator of chunks to llm.Stream. One chunk
// makes several events; they wait in pending, whose backing array is
// reused.
type stream struct {
	next    func() (*genai.GenerateContentResponse, error, bool)
	stop    func()
	tr      *translator
	pending []llm.StreamEvent
	pos     int
	cur     llm.StreamEvent
	rawErr  error // the SDK's error, before mapping
	err     error
	done    bool
}

// pull reads one chunk into pending. It reports false at the end of the
// stream or on an error, which it keeps in rawErr.
func (s *stream) pull() bool {
	if s.tr == nil {
		s.tr = newTranslator()
	}
	s.pending, s.pos = s.pending[:0], 0
	r, err, ok := s.next()
	if !ok {
		s.done = true
		return false
	}
	if err != nil {
		s.done, s.rawErr = true, err
		return false
	}
	s.pending = s.tr.chunk(r, s.pending)
	return true
}

func (s *stream) Next() bool {
	for s.pos >= len(s.pending) {
		if s.done || !s.pull() {
			if s.rawErr != nil && s.err == nil {
				s.err = mapError(s.rawErr, true)
			}
			return false
		}
	}
	s.cur = s.pending[s.pos]
	s.pos++
	return true
}

func (s *stream) Event() llm.StreamEvent { return s.cur }
func (s *stream) Err() error             { return s.err }

// Close stops the SDK's iterator, which closes the response body.
func (s *stream) Close() error {
	s.stop()
	return nil
}
