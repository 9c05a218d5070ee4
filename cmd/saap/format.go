package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/saap-go/agent/event"
)

// ANSI styles; used only when stdout is a terminal.
const (
	reset  = "\x1b[0m"
	dim    = "\x1b[2m"
	bold   = "\x1b[1m"
	red    = "\x1b[31m"
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	blue   = "\x1b[34m"
	cyan   = "\x1b[36m"
)

func (e *env) paint(style, s string) string {
	if !e.color || style == "" {
		return s
	}
	return style + s + reset
}

// kindOf sorts an event into what a person looks for: start, stop, error,
// question, chunk, thought, tool, or a plain control or display event.
func kindOf(ev event.Event, typ string) string {
	switch {
	case ev == nil:
		return strings.TrimSuffix(typ, "_event")
	case event.IsException(ev):
		return "error"
	case event.IsHITLRequest(ev):
		return "question"
	case event.IsStop(ev):
		return "stop"
	case event.Has(ev, "StartEvent"):
		return "start"
	case event.Has(ev, "ChunkEvent"):
		return "chunk"
	case event.Has(ev, "ThoughtEvent"):
		return "thought"
	case event.Has(ev, "ToolEvent"):
		return "tool"
	}
	return strings.TrimSuffix(typ, "_event")
}

var kindStyle = map[string]string{
	"start": cyan, "stop": green, "error": red, "question": yellow + bold,
	"chunk": "", "thought": dim, "tool": dim + blue, "control": blue, "display": "",
}

// summary is the part of an event worth one line.
func summary(ev event.Event, raw []byte) string {
	switch x := ev.(type) {
	case *event.ChunkEvent:
		return fmt.Sprintf("%q", x.Content)
	case *event.UserMessageEvent:
		if n := len(x.Messages); n > 0 {
			return fmt.Sprintf("%q", clip(x.Messages[n-1].Content()))
		}
	case *event.ToolEvent:
		if x.Name != nil {
			args, _ := json.Marshal(x.Parameters)
			return clip(*x.Name + "(" + string(args) + ")")
		}
	case *event.ThoughtEvent:
		if x.ReasoningContent != nil {
			return fmt.Sprintf("%q", clip(*x.ReasoningContent))
		}
	}
	if ev != nil && event.IsHITLRequest(ev) {
		if q, err := event.UnmarshalAs[event.HumanInTheLoopRequestEvent](raw); err == nil {
			return fmt.Sprintf("%q", clip(q.Question))
		}
	}
	if ev != nil && strings.HasSuffix(event.Name(ev), "ResponseEvent") {
		var r struct {
			Response json.RawMessage `json:"response"`
		}
		if json.Unmarshal(raw, &r) == nil && len(r.Response) > 0 {
			return "response=" + clip(string(r.Response))
		}
	}
	if ev != nil && event.IsException(ev) {
		if x, err := event.UnmarshalAs[event.ExceptionEvent](raw); err == nil {
			return fmt.Sprintf("%q", clip(x.Message))
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
	return clip(b.String())
}

func clip(s string) string {
	const max = 100
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}
