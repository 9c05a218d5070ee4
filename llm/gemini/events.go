package gemini

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"google.golang.org/genai"

	"github.com/saap-go/agent/llm"
)

// translator turns streamGenerateContent chunks into llm stream events.
// Text and thought parts of consecutive chunks continue the open block;
// each function call is a block of its own, sent whole. Usage arrives
// (cumulative) with chunks and is reported when it changes; the finish
// reason ends the stream.
type translator struct {
	next     int
	open     int
	openKind llm.BlockKind
	calls    int
	model    string
	usage    llm.Usage
	stopped  bool
}

func newTranslator() *translator { return &translator{open: -1} }

// chunk appends the events of r to out.
func (t *translator) chunk(r *genai.GenerateContentResponse, out []llm.StreamEvent) []llm.StreamEvent {
	if t.stopped {
		return out
	}
	start := len(out)
	var finish genai.FinishReason
	if len(r.Candidates) > 0 && r.Candidates[0] != nil {
		c := r.Candidates[0]
		if c.Content != nil {
			for _, p := range c.Content.Parts {
				if p != nil {
					out = t.part(p, out)
				}
			}
		}
		finish = c.FinishReason
	}
	if r.UsageMetadata != nil {
		if u := usage(r.UsageMetadata); u != t.usage {
			t.usage = u
			out = append(out, llm.StreamEvent{Kind: llm.EventUsage, Usage: u})
		}
	}
	switch {
	case finish != "":
		t.stopped = true
		out = append(out, llm.StreamEvent{Kind: llm.EventStop, StopReason: t.stopReason(finish)})
	case r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "":
		t.stopped = true
		out = append(out, llm.StreamEvent{Kind: llm.EventStop, StopReason: llm.StopRefusal})
	}
	if t.model == "" && r.ModelVersion != "" {
		t.model = r.ModelVersion
		if len(out) == start {
			out = append(out, llm.StreamEvent{Kind: llm.EventUsage})
		}
		out[start].Model = r.ModelVersion
	}
	return out
}

func (t *translator) part(p *genai.Part, out []llm.StreamEvent) []llm.StreamEvent {
	var sig string
	if len(p.ThoughtSignature) > 0 {
		sig = base64.StdEncoding.EncodeToString(p.ThoughtSignature)
	}
	switch {
	case p.Thought:
		return append(out, llm.StreamEvent{Kind: llm.EventThinking, Index: t.block(llm.BlockThinking), Text: p.Text, Signature: sig})
	case sig != "":
		// The signature of the thinking before this part: a thinking
		// block of its own, sent back ahead of the part.
		t.open = -1
		out = append(out, llm.StreamEvent{Kind: llm.EventThinking, Index: t.block(llm.BlockThinking), Signature: sig})
		t.open = -1
	}
	switch {
	case p.FunctionCall != nil:
		fc := p.FunctionCall
		id := fc.ID
		if id == "" {
			id = madeUpID + strconv.Itoa(t.calls)
		}
		t.calls++
		idx := t.next
		t.next++
		t.open = -1
		args, err := json.Marshal(fc.Args)
		if err != nil || fc.Args == nil {
			args = []byte("{}")
		}
		out = append(out,
			llm.StreamEvent{Kind: llm.EventToolUseStart, Index: idx, ToolUseID: id, ToolName: fc.Name},
			llm.StreamEvent{Kind: llm.EventToolUseDelta, Index: idx, Text: string(args)},
			llm.StreamEvent{Kind: llm.EventToolUseEnd, Index: idx})
	case p.Text != "":
		out = append(out, llm.StreamEvent{Kind: llm.EventText, Index: t.block(llm.BlockText), Text: p.Text})
	case p.InlineData != nil && len(p.InlineData.Data) > 0:
		d := p.InlineData
		out = t.whole(llm.Block{Kind: mediaKind(d.MIMEType), MediaType: d.MIMEType, Data: d.Data, Title: d.DisplayName}, out)
	case p.FileData != nil && p.FileData.FileURI != "":
		f := p.FileData
		out = t.whole(llm.Block{Kind: mediaKind(f.MIMEType), MediaType: f.MIMEType, URL: f.FileURI, Title: f.DisplayName}, out)
	}
	// Other parts (code execution and its results) are not in llm's
	// model and are skipped.
	return out
}

// whole appends an image or document the model made, a block of its own.
func (t *translator) whole(b llm.Block, out []llm.StreamEvent) []llm.StreamEvent {
	idx := t.next
	t.next++
	t.open = -1
	return append(out, llm.StreamEvent{Kind: llm.EventBlock, Index: idx, Block: &b})
}

// mediaKind is the block kind of a part of MIME type mt.
func mediaKind(mt string) llm.BlockKind {
	if strings.HasPrefix(mt, "image/") {
		return llm.BlockImage
	}
	return llm.BlockDocument
}

func (t *translator) block(kind llm.BlockKind) int {
	if t.open >= 0 && t.openKind == kind {
		return t.open
	}
	t.open, t.openKind = t.next, kind
	t.next++
	return t.open
}

func (t *translator) stopReason(f genai.FinishReason) llm.StopReason {
	switch f {
	case genai.FinishReasonStop:
		if t.calls > 0 {
			return llm.StopToolUse
		}
		return llm.StopEndTurn
	case genai.FinishReasonMaxTokens:
		return llm.StopMaxTokens
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety,
		genai.FinishReasonImageProhibitedContent:
		return llm.StopContentFilter
	}
	return llm.StopReason(f)
}

func usage(u *genai.GenerateContentResponseUsageMetadata) llm.Usage {
	return llm.Usage{
		InputTokens:     int(u.PromptTokenCount),
		OutputTokens:    int(u.CandidatesTokenCount + u.ThoughtsTokenCount),
		CacheReadTokens: int(u.CachedContentTokenCount),
		ReasoningTokens: int(u.ThoughtsTokenCount),
	}
}

// FromResponse translates a non-streaming answer: it is read as a stream
// of one chunk, so both paths build the same message.
func FromResponse(r *genai.GenerateContentResponse) (*llm.Response, error) {
	t := newTranslator()
	var acc llm.Accumulator
	for _, ev := range t.chunk(r, nil) {
		if err := acc.Add(ev); err != nil {
			return nil, err
		}
	}
	return acc.Response(), nil
}
