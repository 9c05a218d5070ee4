package llm

import "strings"

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// Segment is a piece of streamed text: the answer, or reasoning (Thought)
// that the model wrote between <think> and </think>.
type Segment struct {
	Thought bool
	Text    string
}

// ThinkSplitter separates the <think>…</think> sections that some models
// (DeepSeek-R1, Qwen and others behind OpenAI-compatible servers) inline
// in their text from the answer, also when a tag is split across deltas.
// The zero value expects answer text first.
type ThinkSplitter struct {
	in      bool
	pending string
	seen    bool
}

// Split feeds one text delta and appends its pieces to out. The end of a
// delta that may begin a tag is held back until the next delta or Flush.
func (t *ThinkSplitter) Split(delta string, out []Segment) []Segment {
	if t.pending == "" && !t.in && strings.IndexByte(delta, '<') < 0 {
		if delta != "" {
			out = append(out, Segment{Text: delta})
		}
		return out
	}
	buf := delta
	if t.pending != "" {
		buf, t.pending = t.pending+delta, ""
	}
	for buf != "" {
		tag := thinkOpen
		if t.in {
			tag = thinkClose
		}
		if i := strings.Index(buf, tag); i >= 0 {
			if i > 0 {
				out = append(out, Segment{Thought: t.in, Text: buf[:i]})
			}
			t.in, t.seen = !t.in, true
			buf = buf[i+len(tag):]
			continue
		}
		k := partialTag(buf, tag)
		if n := len(buf) - k; n > 0 {
			out = append(out, Segment{Thought: t.in, Text: buf[:n]})
		}
		t.pending = buf[len(buf)-k:]
		break
	}
	return out
}

// partialTag is the length of the longest end of s that begins tag.
func partialTag(s, tag string) int {
	for k := min(len(tag)-1, len(s)); k > 0; k-- {
		if strings.HasPrefix(tag, s[len(s)-k:]) {
			return k
		}
	}
	return 0
}

// Flush appends what was held back: at the end of the text it is plain
// text (or reasoning, inside an unclosed section).
func (t *ThinkSplitter) Flush(out []Segment) []Segment {
	if t.pending != "" {
		out = append(out, Segment{Thought: t.in, Text: t.pending})
		t.pending = ""
	}
	return out
}

// Seen reports whether a tag has been found so far.
func (t *ThinkSplitter) Seen() bool { return t.seen }

// SplitThinkTags returns m with the <think>…</think> sections of its text
// blocks moved into thinking blocks, in order; m itself is unchanged. A
// message without tags is returned as it is.
func SplitThinkTags(m Message) Message {
	has := false
	for _, b := range m.Content {
		if b.Kind == BlockText && strings.Contains(b.Text, thinkOpen) {
			has = true
			break
		}
	}
	if !has {
		return m
	}
	out := Message{Role: m.Role}
	for _, b := range m.Content {
		if b.Kind != BlockText {
			out.Content = append(out.Content, b)
			continue
		}
		var t ThinkSplitter
		for _, s := range t.Flush(t.Split(b.Text, nil)) {
			kind := BlockText
			if s.Thought {
				kind = BlockThinking
			}
			if n := len(out.Content); n > 0 && out.Content[n-1].Kind == kind && kind == BlockThinking {
				out.Content[n-1].Text += s.Text
				continue
			}
			out.Content = append(out.Content, Block{Kind: kind, Text: s.Text})
		}
	}
	return out
}
