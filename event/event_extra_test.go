package event_test

import (
	"strings"
	"testing"

	"github.com/saap-go/agent/event"
)

// An extra member set in Go is written after the declared fields, survives
// a decode, and a declared field's name is never written twice.
func TestSetExtra(t *testing.T) {
	req := &event.HumanInTheLoopInputRequestEvent{}
	req.Question = "name?"
	if err := event.SetExtra(req, "timeout_seconds", []byte("30")); err != nil {
		t.Fatal(err)
	}
	if err := event.SetExtra(req, "question", []byte(`"shadow"`)); err != nil {
		t.Fatal(err)
	}
	data, err := event.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"timeout_seconds": 30`) || strings.Contains(string(data), "shadow") {
		t.Fatalf("encoded %s", data)
	}
	back, err := event.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if raw, ok := event.Extra(back, "timeout_seconds"); !ok || string(raw) != "30" {
		t.Fatalf("extra after decode = %q, %v", raw, ok)
	}
	if err := event.SetExtra(req, "x", []byte("{")); err == nil {
		t.Fatal("invalid JSON accepted")
	}
	if err := event.SetExtra(req, "", []byte("1")); err == nil {
		t.Fatal("empty key accepted")
	}
}

// TestSetRawWritesADeclaredMemberAsGiven: a declared member set raw is
// written as given, in its place; unknown keys and bad JSON are refused.
func TestSetRawWritesADeclaredMemberAsGiven(t *testing.T) {
	e := &event.ChunkEvent{Content: "data"}
	if err := event.SetRaw(e, "content", []byte(`{"formkit": "primeInputText"}`)); err != nil {
		t.Fatal(err)
	}
	data, err := event.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"content": {"formkit": "primeInputText"}`) || strings.Contains(string(data), `"data"`) {
		t.Fatalf("encoded %s", data)
	}
	if strings.Count(string(data), `"content"`) != 1 {
		t.Fatalf("content written twice: %s", data)
	}
	if err := event.SetRaw(e, "no_such_member", []byte(`1`)); err == nil {
		t.Error("SetRaw of an undeclared member accepted")
	}
	if err := event.SetRaw(e, "content", []byte(`{`)); err == nil {
		t.Error("SetRaw of bad JSON accepted")
	}
	if c := event.Clone(e); c != nil {
		if d, _ := event.Marshal(c); string(d) != string(data) {
			t.Errorf("clone encodes %s, want %s", d, data)
		}
	}
}
