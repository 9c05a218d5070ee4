package llm

import (
	"errors"
	"fmt"

	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/step"
)

// StreamOption changes how StreamTo publishes a call.
type StreamOption func(*streamConfig)

type streamConfig struct {
	prices     Prices
	noTags     bool
	chunkModel string
	held       *[]event.Event
}

// WithPrices prices each call with p and publishes its LLMCostEvent; a
// model p has no price for publishes none.
func WithPrices(p Prices) StreamOption { return func(c *streamConfig) { c.prices = p } }

// WithoutThinkTags publishes text as it comes, <think> tags included, for
// models whose answers may contain the tag literally.
func WithoutThinkTags() StreamOption { return func(c *streamConfig) { c.noTags = true } }

// WithChunkModel sets the model_name of the ChunkEvents (the request's
// model by default).
func WithChunkModel(name string) StreamOption { return func(c *streamConfig) { c.chunkModel = name } }

// Call is a finished model call made by StreamTo.
type Call struct {
	// Provider is the provider's registry name.
	Provider string
	// Request is the request as sent.
	Request *Request
	// Response is the assembled answer; <think> sections of its text are
	// thinking blocks.
	Response *Response
	// Event records the call. It is a control event, so the step returns
	// it (Emit refuses control events); StopEvent turns it into the run's
	// answer instead.
	Event *event.LLMEvent
	// Cost is the LLMCostEvent already published, nil without a price.
	Cost *event.LLMCostEvent
}

// StopEvent is the run's answer from this call: an LLMStopEvent whose
// output_messages end with the assistant's message.
func (c *Call) StopEvent() *event.LLMStopEvent { return StopEvent(c.Event) }

// StreamTo makes one call to p and streams it into the step's run as it
// arrives: each text delta becomes a ChunkEvent and each piece of
// reasoning a ThoughtEvent (native thinking, and the <think>…</think>
// sections some models inline in their text, also when a tag is split
// across deltas), published at once with ctx.Emit. It returns the
// finished call with its LLMEvent, and publishes its LLMCostEvent when
// WithPrices prices the model.
//
// Cancelling ctx (the run is torn down, the process stops) cancels the
// call and closes its connection. A provider's failure comes back as an
// error the engine turns into an ExceptionEvent with the *Error's HTTP
// status and a message for the user naming the kind of failure; a stream
// that ends without its stop is an ErrUnavailable *Error wrapping
// ErrTruncated.
func StreamTo(ctx step.Context, p Provider, req *Request, opts ...StreamOption) (*Call, error) {
	var cfg streamConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if p == nil || req == nil {
		return nil, errors.New("llm: StreamTo needs a provider and a request")
	}
	s, err := p.Stream(ctx, req)
	if err != nil {
		return nil, callError(ctx, p, err)
	}
	defer s.Close()
	em := emitter{ctx: ctx, model: cmpOr(cfg.chunkModel, req.Model), tags: !cfg.noTags, held: cfg.held}
	var acc Accumulator
	for s.Next() {
		ev := s.Event()
		if err := acc.Add(ev); err != nil {
			return nil, callError(ctx, p, &Error{Kind: ErrUnavailable, Provider: p.Name(), Message: "inconsistent stream", Err: err})
		}
		if err := em.event(&ev); err != nil {
			return nil, err
		}
	}
	if err := s.Err(); err != nil {
		return nil, callError(ctx, p, err)
	}
	if err := em.flush(); err != nil {
		return nil, err
	}
	if !acc.Stopped() {
		return nil, callError(ctx, p, &Error{Kind: ErrUnavailable, Provider: p.Name(), Message: "the stream ended before the model finished", Err: ErrTruncated})
	}
	resp := acc.Response()
	if em.split.Seen() {
		resp.Message = SplitThinkTags(resp.Message)
	}
	call := &Call{Provider: p.Name(), Request: req, Response: resp, Event: NewLLMEvent(p.Name(), req, resp)}
	if cfg.prices != nil {
		if c, ok := cfg.prices.CostEvent(cmpOr(resp.Model, req.Model), resp.Usage); ok {
			if err := ctx.Emit(c); err != nil {
				return nil, fmt.Errorf("llm: publish the call's cost: %w", err)
			}
			call.Cost = c
		}
	}
	return call, nil
}

// callError makes a failed call a step error: the run's cancellation as
// it is, a provider's *Error with its user message (its HTTP status goes
// to the ExceptionEvent through step.HTTPStatus).
func callError(ctx step.Context, p Provider, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("llm: %s call cancelled: %w", p.Name(), cerr)
	}
	var le *Error
	if errors.As(err, &le) {
		return step.WithUserMessage(err, le.UserMessage())
	}
	return fmt.Errorf("llm: %s call: %w", p.Name(), err)
}

// emitter turns stream events into display events.
type emitter struct {
	ctx   step.Context
	model string
	tags  bool
	split ThinkSplitter
	index int
	segs  []Segment
	held  *[]event.Event
}

func (e *emitter) event(ev *StreamEvent) error {
	switch ev.Kind {
	case EventText:
		if !e.tags {
			return e.chunk(ev.Text)
		}
		if ev.Index != e.index {
			if err := e.flush(); err != nil {
				return err
			}
			e.split, e.index = ThinkSplitter{seen: e.split.seen}, ev.Index
		}
		e.segs = e.split.Split(ev.Text, e.segs[:0])
		return e.segments()
	case EventThinking:
		if ev.Text != "" {
			return e.thought(ev.Text)
		}
	}
	return nil
}

func (e *emitter) flush() error {
	e.segs = e.split.Flush(e.segs[:0])
	return e.segments()
}

func (e *emitter) segments() error {
	for _, s := range e.segs {
		var err error
		if s.Thought {
			err = e.thought(s.Text)
		} else {
			err = e.chunk(s.Text)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (e *emitter) chunk(s string) error {
	if s == "" {
		return nil
	}
	c := &event.ChunkEvent{Content: s, ModelName: e.model}
	if c.ModelName == "" {
		c.ModelName = "aihub"
	}
	if e.held != nil {
		*e.held = append(*e.held, c)
		return nil
	}
	if err := e.ctx.Emit(c); err != nil {
		return fmt.Errorf("llm: publish a chunk: %w", err)
	}
	return nil
}

func (e *emitter) thought(s string) error {
	if err := e.ctx.Emit(&event.ThoughtEvent{ReasoningContent: &s}); err != nil {
		return fmt.Errorf("llm: publish a thought: %w", err)
	}
	return nil
}
