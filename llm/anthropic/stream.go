package anthropic

import (
	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"

	"github.com/saap-go/agent/llm"
)

// stream adapts the SDK's event stream to llm.Stream. One SDK event may
// make several events (or none); they wait in pending, whose backing
// array is reused.
type stream struct {
	sdk     *ssestream.Stream[sdk.MessageStreamEventUnion]
	tr      translator
	pending []llm.StreamEvent
	pos     int
	cur     llm.StreamEvent
	err     error
	done    bool
}

func (s *stream) Next() bool {
	for s.pos >= len(s.pending) {
		if s.done {
			return false
		}
		s.pending, s.pos = s.pending[:0], 0
		if s.sdk.Next() {
			e := s.sdk.Current()
			s.pending = s.tr.event(&e, s.pending)
			continue
		}
		s.done = true
		if err := s.sdk.Err(); err != nil {
			s.err = mapError(err, true)
		}
		return false
	}
	s.cur = s.pending[s.pos]
	s.pos++
	return true
}

func (s *stream) Event() llm.StreamEvent { return s.cur }
func (s *stream) Err() error             { return s.err }
func (s *stream) Close() error           { return s.sdk.Close() }
