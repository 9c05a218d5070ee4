package topic_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/saap-go/agent/topic"
)

func TestSubjectLengthLimit(t *testing.T) {
	a := topic.Agent{Class: "C", ID: "i", Thread: "t", Display: "d", Run: "r", Type: topic.Control, Name: "E", EventID: "e"}
	base, err := a.Subject()
	if err != nil {
		t.Fatal(err)
	}
	// Exactly at the limit is fine; one byte more is refused.
	a.ID = strings.Repeat("x", topic.MaxSubjectLen-len(base)+1)
	s, err := a.Subject()
	if err != nil || len(s) != topic.MaxSubjectLen {
		t.Fatalf("at the limit: %d bytes, %v", len(s), err)
	}
	a.ID += "x"
	_, err = a.Subject()
	var le *topic.LengthError
	if !errors.As(err, &le) || !errors.Is(err, topic.ErrSubjectTooLong) {
		t.Fatalf("over the limit: %v, want a *LengthError", err)
	}
	if le.Len != topic.MaxSubjectLen+1 || le.Max != topic.MaxSubjectLen || le.Grammar != "agent" {
		t.Fatalf("LengthError = %+v", le)
	}
	if msg := err.Error(); !strings.Contains(msg, "3585 bytes") || !strings.Contains(msg, "3584") || strings.Contains(msg, "xxx") {
		t.Fatalf("message %q must name the length and the limit and not echo the subject", msg)
	}

	long := strings.Repeat("y", topic.MaxSubjectLen)
	builders := map[string]func() error{
		"process": func() error {
			_, err := topic.Process{Class: "P", ID: long, Walkthrough: "w", Type: topic.Work, Name: "n", EventID: "e"}.Subject()
			return err
		},
		"rpc": func() error {
			_, err := topic.RPC{Service: "config", EntityType: "agent", EntityClass: "C", EntityID: long}.Subject()
			return err
		},
		"discovery": func() error {
			_, err := topic.Discovery{Kind: topic.KindAgent, Class: "C", Dir: topic.DirRequest, CallID: long}.Subject()
			return err
		},
		"discovery-responses": func() error {
			_, err := topic.DiscoveryResponses(topic.KindAgent, long)
			return err
		},
		"pattern": func() error {
			_, err := topic.RunControl("C", long)
			return err
		},
		"process-pattern": func() error {
			_, err := topic.ProcessPattern{Walkthrough: long}.Subject()
			return err
		},
	}
	for name, f := range builders {
		if err := f(); !errors.Is(err, topic.ErrSubjectTooLong) {
			t.Errorf("%s: %v, want ErrSubjectTooLong", name, err)
		}
	}
	if err := topic.CheckSubjectLen("gateway", long+"z"); !errors.Is(err, topic.ErrSubjectTooLong) {
		t.Errorf("CheckSubjectLen: %v", err)
	}
	if err := topic.CheckSubjectLen("gateway", long); err != nil {
		t.Errorf("CheckSubjectLen at the limit: %v", err)
	}
}
