package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Accumulator folds a stream into the Response a non-streaming call
// would have returned. The zero value is ready to use.
type Accumulator struct {
	resp    Response
	blocks  []*accBlock
	stopped bool
}

type accBlock struct {
	kind  BlockKind
	text  strings.Builder
	sig   string
	id    string
	name  string
	ended bool
	whole *Block // an EventBlock's block
}

// Add folds one event. It fails on events that contradict the stream so
// far (a delta for a block of another kind, events after the stop).
func (a *Accumulator) Add(ev StreamEvent) error {
	if ev.Model != "" && a.resp.Model == "" {
		a.resp.Model = ev.Model
	}
	switch ev.Kind {
	case EventText:
		b, err := a.block(ev.Index, BlockText)
		if err != nil {
			return err
		}
		b.text.WriteString(ev.Text)
	case EventThinking:
		b, err := a.block(ev.Index, BlockThinking)
		if err != nil {
			return err
		}
		b.text.WriteString(ev.Text)
		if ev.Signature != "" {
			b.sig = ev.Signature
		}
	case EventToolUseStart:
		b, err := a.block(ev.Index, BlockToolUse)
		if err != nil {
			return err
		}
		b.id, b.name = ev.ToolUseID, ev.ToolName
	case EventToolUseDelta:
		b, err := a.block(ev.Index, BlockToolUse)
		if err != nil {
			return err
		}
		b.text.WriteString(ev.Text)
	case EventToolUseEnd:
		b, err := a.block(ev.Index, BlockToolUse)
		if err != nil {
			return err
		}
		b.ended = true
	case EventBlock:
		if ev.Block == nil || (ev.Block.Kind != BlockImage && ev.Block.Kind != BlockDocument) {
			return fmt.Errorf("llm: block event for block %d carries no image or document", ev.Index)
		}
		b, err := a.block(ev.Index, ev.Block.Kind)
		if err != nil {
			return err
		}
		if b.whole != nil {
			return fmt.Errorf("llm: a second block event for block %d", ev.Index)
		}
		b.whole = ev.Block
	case EventUsage:
		mergeUsage(&a.resp.Usage, ev.Usage)
	case EventStop:
		a.stopped = true
		if ev.StopReason != "" {
			a.resp.StopReason = ev.StopReason
		}
		mergeUsage(&a.resp.Usage, ev.Usage)
	default:
		return fmt.Errorf("llm: stream event of unknown kind %d", ev.Kind)
	}
	return nil
}

func (a *Accumulator) block(i int, kind BlockKind) (*accBlock, error) {
	if i < 0 {
		return nil, fmt.Errorf("llm: stream event for block %d", i)
	}
	for len(a.blocks) <= i {
		a.blocks = append(a.blocks, nil)
	}
	b := a.blocks[i]
	if b == nil {
		b = &accBlock{kind: kind}
		a.blocks[i] = b
	}
	if b.kind != kind {
		return nil, fmt.Errorf("llm: stream event for %s block %d, which is %s", kind, i, b.kind)
	}
	return b, nil
}

func mergeUsage(dst *Usage, u Usage) {
	if u.InputTokens != 0 {
		dst.InputTokens = u.InputTokens
	}
	if u.OutputTokens != 0 {
		dst.OutputTokens = u.OutputTokens
	}
	if u.CacheReadTokens != 0 {
		dst.CacheReadTokens = u.CacheReadTokens
	}
	if u.CacheWriteTokens != 0 {
		dst.CacheWriteTokens = u.CacheWriteTokens
	}
	if u.ReasoningTokens != 0 {
		dst.ReasoningTokens = u.ReasoningTokens
	}
}

// Stopped reports whether the stream's stop event has been added.
func (a *Accumulator) Stopped() bool { return a.stopped }

// Response returns the message assembled so far. Tool arguments that
// arrived empty become "{}"; the stop reason is StopToolUse when the
// stream named none and the message calls tools.
func (a *Accumulator) Response() *Response {
	r := a.resp
	r.Message = Message{Role: RoleAssistant}
	for _, b := range a.blocks {
		if b == nil {
			continue
		}
		switch b.kind {
		case BlockToolUse:
			in := json.RawMessage(b.text.String())
			if len(strings.TrimSpace(string(in))) == 0 {
				in = json.RawMessage("{}")
			}
			r.Message.Content = append(r.Message.Content, ToolUse(b.id, b.name, in))
		case BlockThinking:
			r.Message.Content = append(r.Message.Content, Block{Kind: BlockThinking, Text: b.text.String(), Signature: b.sig})
		case BlockImage, BlockDocument:
			r.Message.Content = append(r.Message.Content, *b.whole)
		default:
			r.Message.Content = append(r.Message.Content, Text(b.text.String()))
		}
	}
	if r.StopReason == "" && len(r.Message.ToolUses()) > 0 {
		r.StopReason = StopToolUse
	}
	return &r
}

// Collect reads s to its end and returns the assembled response. It
// closes s. A stream that ends without a stop event is reported as
// truncated (ErrTruncated), with what arrived.
func Collect(s Stream) (*Response, error) {
	defer s.Close()
	var a Accumulator
	for s.Next() {
		if err := a.Add(s.Event()); err != nil {
			return a.Response(), err
		}
	}
	if err := s.Err(); err != nil {
		return a.Response(), err
	}
	if !a.stopped {
		return a.Response(), ErrTruncated
	}
	return a.Response(), nil
}

// Generate makes one call and returns the whole answer: the provider's
// own non-streaming call when it has one, else its stream collected.
func Generate(ctx context.Context, p Provider, req *Request) (*Response, error) {
	if g, ok := p.(Generator); ok {
		return g.Generate(ctx, req)
	}
	s, err := p.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	return Collect(s)
}
