package main

import (
	"strings"
	"testing"
	"time"
)

func TestLineColoursByKindOnlyOnATerminal(t *testing.T) {
	const subject = "agent.EchoAgent.dev.0123456789abcdef01234567.0123456789abcdef01234567.0123456789abcdef01234567.control_event.HumanInTheLoopInputRequestEvent.0123456789abcdef01234567"
	data := []byte(`{"event_id":"0123456789abcdef01234567","created_at":1,"question":"Name?","hitl_type":"input","topic":{},"_event_name":"HumanInTheLoopInputRequestEvent","_parent_event_names":["HumanInTheLoopInputRequestEvent","HumanInTheLoopRequestEvent","ControlAndDisplayEvent","ControlEvent","DisplayEvent"]}`)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)

	plain := (&env{}).line(subject, data, at)
	if want := `03:04:05.006 C question HumanInTheLoopInputRequestEvent  EchoAgent/dev run=0123456789abcdef01234567 "Name?"`; plain != want {
		t.Errorf("plain line\n got %q\nwant %q", plain, want)
	}
	coloured := (&env{color: true}).line(subject, data, at)
	if !strings.Contains(coloured, yellow+bold+"question"+reset) || !strings.Contains(coloured, dim+"03:04:05.006"+reset) {
		t.Errorf("coloured line lacks the question's style: %q", coloured)
	}

	// Undecodable input still gets a line, never a panic.
	if l := (&env{}).line("agent.x", []byte("{"), at); !strings.Contains(l, "agent.x") {
		t.Errorf("line for a bad subject = %q", l)
	}
	if l := (&env{}).line(strings.Replace(subject, "HumanInTheLoopInputRequestEvent.", "Nope.", 1), []byte("not json"), at); !strings.Contains(l, "Nope") {
		t.Errorf("line for bad JSON = %q", l)
	}
}
