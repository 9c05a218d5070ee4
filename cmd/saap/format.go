package main

import (
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
