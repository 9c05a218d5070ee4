// Package eventline renders an event as one line for people reading a
// run as it happens (the saap command, the examples' printers).
package eventline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/saap-go/agent/event"
)

// Summary is the part of an event worth one line: a chunk's or a
// message's text, a tool call, a thought, a question, an answer, an
// exception's message, else the event's own fields, compactly. raw is the
// event as it came off the wire.
func Summary(ev event.Event, raw []byte) string {
	switch x := ev.(type) {
	case *event.ChunkEvent:
		return fmt.Sprintf("%q", x.Content)
	case *event.UserMessageEvent:
		if n := len(x.Messages); n > 0 {
			return fmt.Sprintf("%q", Clip(x.Messages[n-1].Content()))
		}
	case *event.ToolEvent:
		if x.Name != nil {
			args, _ := json.Marshal(x.Parameters)
			return Clip(*x.Name + "(" + string(args) + ")")
		}
	case *event.ThoughtEvent:
		if x.ReasoningContent != nil {
			return fmt.Sprintf("%q", Clip(*x.ReasoningContent))
		}
	}
	if ev != nil && event.IsHITLRequest(ev) {
		if q, err := event.UnmarshalAs[event.HumanInTheLoopRequestEvent](raw); err == nil {
			return fmt.Sprintf("%q", Clip(q.Question))
		}
	}
	if ev != nil && strings.HasSuffix(event.Name(ev), "ResponseEvent") {
		var r struct {
			Response json.RawMessage `json:"response"`
		}
		if json.Unmarshal(raw, &r) == nil && len(r.Response) > 0 {
			return "response=" + Clip(string(r.Response))
		}
	}
	if ev != nil && event.IsException(ev) {
		if x, err := event.UnmarshalAs[event.ExceptionEvent](raw); err == nil {
			return fmt.Sprintf("%q", Clip(x.Message))
		}
	}
	// Other events: their own fields, compactly.
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		switch k {
		case "event_id", "created_at", "_event_name", "_parent_event_names", "display_name", "display_description", "topic", "request_event":
		default:
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		var v bytes.Buffer
		if json.Compact(&v, m[k]) != nil || v.String() == "null" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k + "=" + v.String())
	}
	return Clip(b.String())
}

// Clip shortens s to 100 characters, marking the cut.
func Clip(s string) string {
	const max = 100
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}
