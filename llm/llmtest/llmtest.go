package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/saap-go/agent/llm"
)

// Turn is one scripted answer of the model: the events its stream yields
// and the Response a non-streaming call returns. Build it with NewTurn;
// every method returns the turn so calls chain.
type Turn struct {
	events    []llm.StreamEvent
	resp      llm.Response
	stopped   bool
	truncated bool
	hold      bool
	failAt    int // number of events before Fail's error; -1 for none
	fail      error
	openErr   error
	model     string
}

// NewTurn starts an empty turn.
func NewTurn() *Turn {
	return &Turn{failAt: -1, resp: llm.Response{Message: llm.Message{Role: llm.RoleAssistant}}}
}

// Reply is a turn answering text, one delta per piece, with a small usage
// and the end_turn stop.
func Reply(pieces ...string) *Turn { return NewTurn().Text(pieces...) }

func (t *Turn) next() int { return len(t.resp.Message.Content) }

// Model names the model on the first event, as providers do.
func (t *Turn) Model(name string) *Turn {
	t.model, t.resp.Model = name, name
	return t
}

// Text adds a text block streamed as one delta per piece.
func (t *Turn) Text(pieces ...string) *Turn {
	i := t.next()
	for _, p := range pieces {
		t.events = append(t.events, llm.StreamEvent{Kind: llm.EventText, Index: i, Text: p})
	}
	t.resp.Message.Content = append(t.resp.Message.Content, llm.Text(strings.Join(pieces, "")))
	return t
}

// Think adds a thinking block streamed as one delta per piece; signature,
// when not empty, comes on a last delta of its own.
func (t *Turn) Think(signature string, pieces ...string) *Turn {
	i := t.next()
	for _, p := range pieces {
		t.events = append(t.events, llm.StreamEvent{Kind: llm.EventThinking, Index: i, Text: p})
	}
	if signature != "" {
		t.events = append(t.events, llm.StreamEvent{Kind: llm.EventThinking, Index: i, Signature: signature})
	}
	t.resp.Message.Content = append(t.resp.Message.Content,
		llm.Block{Kind: llm.BlockThinking, Text: strings.Join(pieces, ""), Signature: signature})
	return t
}

// Tool adds a tool call: its start, the arguments in fragments (the whole
// of args as one fragment when none are given) and its end. Several Tool
// calls in one turn are parallel calls.
func (t *Turn) Tool(id, name, args string, fragments ...string) *Turn {
	i := t.next()
	if len(fragments) == 0 {
		fragments = []string{args}
	}
	t.events = append(t.events, llm.StreamEvent{Kind: llm.EventToolUseStart, Index: i, ToolUseID: id, ToolName: name})
	for _, f := range fragments {
		t.events = append(t.events, llm.StreamEvent{Kind: llm.EventToolUseDelta, Index: i, Text: f})
	}
	t.events = append(t.events, llm.StreamEvent{Kind: llm.EventToolUseEnd, Index: i, ToolUseID: id})
	in := json.RawMessage(args)
	if strings.TrimSpace(args) == "" {
		in = json.RawMessage("{}")
	}
	t.resp.Message.Content = append(t.resp.Message.Content, llm.ToolUse(id, name, in))
	return t
}

// Block adds an image or document the model made, streamed whole as
// one EventBlock.
func (t *Turn) Block(b llm.Block) *Turn {
	i := t.next()
	t.events = append(t.events, llm.StreamEvent{Kind: llm.EventBlock, Index: i, Block: &b})
	t.resp.Message.Content = append(t.resp.Message.Content, b)
	return t
}

// Usage adds a usage report.
func (t *Turn) Usage(input, output int) *Turn {
	u := llm.Usage{InputTokens: input, OutputTokens: output}
	t.events = append(t.events, llm.StreamEvent{Kind: llm.EventUsage, Usage: u})
	t.resp.Usage.InputTokens, t.resp.Usage.OutputTokens = input, output
	return t
}

// Stop ends the turn with reason; without it the turn ends with end_turn,
// or tool_use when it calls tools.
func (t *Turn) Stop(reason llm.StopReason) *Turn {
	t.events = append(t.events, llm.StreamEvent{Kind: llm.EventStop, StopReason: reason})
	t.resp.StopReason = reason
	t.stopped = true
	return t
}

// Truncate ends the stream after the events so far, without a stop, as a
// dropped connection does.
func (t *Turn) Truncate() *Turn {
	t.truncated = true
	return t
}

// Fail makes the stream fail with err after the events added so far.
func (t *Turn) Fail(err error) *Turn {
	t.failAt, t.fail = len(t.events), err
	return t
}

// FailToOpen makes the call itself fail with err, before any event.
func (t *Turn) FailToOpen(err error) *Turn {
	t.openErr = err
	return t
}

// Hold keeps the stream open after the events added so far, until the
// caller cancels the call's context.
func (t *Turn) Hold() *Turn {
	t.hold = true
	return t
}

// Events returns the turn's stream, including the stop it gets by
// default.
func (t *Turn) Events() []llm.StreamEvent {
	evs := append([]llm.StreamEvent(nil), t.events...)
	if !t.stopped && !t.truncated && !t.hold {
		evs = append(evs, llm.StreamEvent{Kind: llm.EventStop, StopReason: t.defaultStop()})
	}
	if t.model != "" && len(evs) > 0 {
		evs[0].Model = t.model
	}
	return evs
}

func (t *Turn) defaultStop() llm.StopReason {
	if len(t.resp.Message.ToolUses()) > 0 {
		return llm.StopToolUse
	}
	return llm.StopEndTurn
}

// Response returns the answer a non-streaming call gives, built from the
// turn's record of its blocks, not from its stream.
func (t *Turn) Response() *llm.Response {
	r := t.resp
	r.Message.Content = append([]llm.Block(nil), t.resp.Message.Content...)
	if !t.stopped {
		r.StopReason = t.defaultStop()
	}
	return &r
}

// Provider is the scripted model. Its zero value answers nothing; make
// one with New or Func.
type Provider struct {
	// ProviderName is what Name returns; "scripted" when empty.
	ProviderName string

	respond func(*llm.Request) (*Turn, error)

	mu       sync.Mutex
	turns    []*Turn
	requests []*llm.Request
}

// New returns a provider answering the turns in order; a call after the
// last turn fails.
func New(turns ...*Turn) *Provider {
	p := &Provider{turns: turns}
	p.respond = func(*llm.Request) (*Turn, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.turns) == 0 {
			return nil, ErrNoTurn
		}
		t := p.turns[0]
		p.turns = p.turns[1:]
		return t, nil
	}
	return p
}

// Func returns a provider that chooses each answer from the request. It
// keeps no state, so a restarted agent gets the same answers.
func Func(respond func(req *llm.Request) *Turn) *Provider {
	return &Provider{respond: func(r *llm.Request) (*Turn, error) {
		t := respond(r)
		if t == nil {
			return nil, ErrNoTurn
		}
		return t, nil
	}}
}

// ErrNoTurn reports a call the script has no answer for.
var ErrNoTurn = errors.New("llmtest: no scripted turn left for this call")

// Name implements llm.Provider.
func (p *Provider) Name() string {
	if p.ProviderName == "" {
		return "scripted"
	}
	return p.ProviderName
}

// Requests returns the requests made so far, in order.
func (p *Provider) Requests() []*llm.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*llm.Request(nil), p.requests...)
}

// Remaining is the number of turns New's script has left.
func (p *Provider) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.turns)
}

func (p *Provider) turn(ctx context.Context, req *llm.Request) (*Turn, error) {
	if p.respond == nil {
		return nil, ErrNoTurn
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req == nil {
		return nil, fmt.Errorf("llmtest: nil request")
	}
	cp := *req
	cp.Messages = append([]llm.Message(nil), req.Messages...)
	p.mu.Lock()
	p.requests = append(p.requests, &cp)
	p.mu.Unlock()
	t, err := p.respond(req)
	if err != nil {
		return nil, err
	}
	if t.openErr != nil {
		return nil, t.openErr
	}
	return t, nil
}

// Stream implements llm.Provider.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) (llm.Stream, error) {
	t, err := p.turn(ctx, req)
	if err != nil {
		return nil, err
	}
	return &stream{ctx: ctx, t: t, evs: t.Events(), i: -1}, nil
}

// Generate implements llm.Generator: the turn's answer without streaming.
func (p *Provider) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	t, err := p.turn(ctx, req)
	if err != nil {
		return nil, err
	}
	switch {
	case t.fail != nil:
		return nil, t.fail
	case t.hold:
		<-ctx.Done()
		return nil, ctx.Err()
	case t.truncated:
		return nil, llm.ErrTruncated
	}
	return t.Response(), nil
}

// stream replays a turn's events.
type stream struct {
	ctx    context.Context
	t      *Turn
	evs    []llm.StreamEvent
	i      int
	err    error
	closed bool
}

func (s *stream) Next() bool {
	if s.err != nil || s.closed {
		return false
	}
	if err := s.ctx.Err(); err != nil {
		s.err = err
		return false
	}
	if s.i+1 == s.t.failAt {
		s.err = s.t.fail
		return false
	}
	if s.i+1 >= len(s.evs) {
		if s.t.hold {
			<-s.ctx.Done()
			s.err = s.ctx.Err()
		}
		return false
	}
	s.i++
	return true
}

func (s *stream) Event() llm.StreamEvent {
	if s.i < 0 || s.i >= len(s.evs) {
		return llm.StreamEvent{}
	}
	return s.evs[s.i]
}

func (s *stream) Err() error { return s.err }

func (s *stream) Close() error {
	s.closed = true
	return nil
}
