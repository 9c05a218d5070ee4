package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/saap-go/agent/bus/memory"
	"github.com/saap-go/agent/event"
)

// FuzzRequestBody feeds arbitrary bodies to the code that turns a request
// into an event: it must never panic, and every refusal is a client error
// naming a field.
func FuzzRequestBody(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"Hello"}]}`,
		`{"messages":[{"role":"user","blocks":[{"block_type":"text","text":"hi"}]}],"files":null}`,
		`{"messages":"x"}`, `{"messages":[{"role":7}]}`, `{"user":{"id":"x"}}`, `{}`, `[]`, `null`, `{"messages":[null]}`,
		`{"response":"yes","request_event":{"topic":{"agent_class":"A","agent_id":"b","thread_id":"t","display_id":"d","run_id":"r"}}}`,
		`{"response":true,"request_event":{"topic":null}}`, `{"request_event":{"topic":{"agent_class":"a.b"}}}`,
		`{"model":"A/b","messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"u"}}]}]}`,
		`{"model":"A","messages":[{"role":"user","content":"x"}],"metadata":{"thread_id":"0123456789abcdef01234567","reconstruct_history":true}}`,
		`{"messages":[]}`, `{"messages":null}`, `{"messages":{}}`,
	} {
		f.Add([]byte(s))
	}
	b := memory.New(memory.Options{})
	defer b.Close()
	g, err := New(Config{Bus: b, Auth: Anonymous(event.UserIdentity{ID: "u"})})
	if err != nil {
		f.Fatal(err)
	}
	specs := []event.EventSpecs{
		{EventName: "UserMessageEvent", EventParents: []string{"UserMessageEvent", "StartEvent", "ControlAndDisplayEvent", "ControlEvent", "DisplayEvent"},
			EventSchema: map[string]json.RawMessage{"type": json.RawMessage(`"object"`), "required": json.RawMessage(`["user","messages"]`),
				"properties": json.RawMessage(`{"messages":{"type":"array"},"files":{"anyOf":[{"type":"array"},{"type":"null"}]}}`)}},
		{EventName: "HumanInTheLoopInputResponseEvent", EventParents: []string{"HumanInTheLoopInputResponseEvent", "HumanInTheLoopResponseEvent", "ControlAndDisplayEvent", "ControlEvent", "DisplayEvent"}},
		{EventName: "CustomStart", EventParents: []string{"CustomStart", "StartEvent", "ControlAndDisplayEvent", "ControlEvent", "DisplayEvent"}},
	}
	user := &event.UserIdentity{ID: "u", Name: "U", Email: "u@x", Roles: []string{}}
	hist := NewMemoryHistory(HistoryLimits{})
	const thread = "0123456789abcdef01234567"
	for i, m := range []string{`{"role":"user","content":"a"}`, `{"role":"assistant","additional_kwargs":{},"blocks":[{"block_type":"text","text":"b"}]}`} {
		if err := hist.Append(context.Background(), thread, HistoryEntry{ID: fmt.Sprint(i), Message: json.RawMessage(m)}); err != nil {
			f.Fatal(err)
		}
	}
	gh, err := New(Config{Bus: b, Auth: Anonymous(event.UserIdentity{ID: "u"}), History: hist})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var body map[string]json.RawMessage
		if json.Unmarshal(data, &body) != nil || body == nil {
			return
		}
		for _, spec := range specs {
			copyBody := make(map[string]json.RawMessage, len(body))
			for k, v := range body {
				copyBody[k] = v
			}
			if _, err := g.buildEvent(spec, copyBody, user, "de"); err != nil {
				var re *requestError
				if !errors.As(err, &re) || re.field == "" || re.status != 400 {
					t.Fatalf("%s: refusal %v is not a 400 naming a field", spec.EventName, err)
				}
			}
		}
		for _, reconstruct := range []bool{false, true} {
			copyBody := make(map[string]json.RawMessage, len(body))
			for k, v := range body {
				copyBody[k] = v
			}
			if _, err := gh.fillMessages(context.Background(), thread, specs[0], copyBody, reconstruct); err != nil {
				var re *requestError
				if !errors.As(err, &re) || re.field != "messages" || re.status != 400 {
					t.Fatalf("fillMessages: refusal %v is not a 400 naming messages", err)
				}
				continue
			}
			if _, err := gh.buildEvent(specs[0], copyBody, user, "de"); err != nil {
				var re *requestError
				if !errors.As(err, &re) || re.field == "" || re.status != 400 {
					t.Fatalf("filled body: refusal %v is not a 400 naming a field", err)
				}
			}
		}
		if _, err := readClaim(body); err != nil {
			var re *requestError
			if !errors.As(err, &re) || re.field == "" {
				t.Fatalf("readClaim: %v", err)
			}
		}
		var req chatRequest
		if json.Unmarshal(data, &req) == nil {
			for _, m := range req.Messages {
				_ = m.text()
				_, _, _ = m.chatMessage()
			}
		}
		if e, err := event.Unmarshal(data); err == nil {
			x := &seen{event: e, raw: data}
			_ = finalText(x)
			_, _ = as[event.HumanInTheLoopRequestEvent](x)
			_, _ = exceptionOf(x)
		}
	})
}
