package openai

import (
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/saap-go/agent/llm"
)

// stream adapts the SDK's chunk stream to llm.Stream. One chunk may make
// several events; they wait in pending, whose backing array is reused.
type stream struct {
	sdk      *ssestream.Stream[oai.ChatCompletionChunk]
	provider string
	tr       *translator
	pending  []llm.StreamEvent
	pos      int
	cur      llm.StreamEvent
	err      error
	done     bool
}

func (s *stream) Next() bool {
	if s.tr == nil {
		s.tr = newTranslator()
	}
	for s.pos >= len(s.pending) {
		if s.done {
			return false
		}
		s.pending, s.pos = s.pending[:0], 0
		if s.sdk.Next() {
			c := s.sdk.Current()
			s.pending = s.tr.chunk(&c, s.pending)
			continue
		}
		s.done = true
		if err := s.sdk.Err(); err != nil {
			s.err = mapError(s.provider, err)
			return false
		}
		s.pending = s.tr.end(s.pending)
	}
	s.cur = s.pending[s.pos]
	s.pos++
	return true
}

func (s *stream) Event() llm.StreamEvent { return s.cur }
func (s *stream) Err() error             { return s.err }
func (s *stream) Close() error           { return s.sdk.Close() }
