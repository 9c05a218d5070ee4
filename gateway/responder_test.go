package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/saap-go/agent/bus"
	"github.com/saap-go/agent/event"
	"github.com/saap-go/agent/topic"
)

// responder is a tiny agent written directly on the bus, as the reference's
// runners behave on the wire: it answers discovery for its class, and for
// each start event it receives on its control subjects it streams chunks and
// stops. The text of the user's last message selects the behaviour:
//
//	"fail"   → ExceptionEvent with http_status_code 418
//	"ask"    → HITL input request (answered: StopEvent echoing the answer)
//	"silent" → nothing (for timeouts)
//	"late"   → chunks "Hel", "lo" and a stop whose answer is "Hello, world"
//	"costly" → as other, with two LLMCostEvents (10+5 and 20+7 tokens)
//	"tokens" → an LLMEvent (8+3 tokens), then an LLMStopEvent "Hello"
//	           carrying its call's counts (3+1), as LLM agents end a run
//	other    → chunks "Hel", "lo" and a stop whose answer is "Hello"
type responder struct {
	t     testing.TB
	b     bus.Bus
	class string

	mu       sync.Mutex
	received []received
	got      chan received
}

type received struct {
	subject topic.Agent
	raw     []byte
	header  bus.Header
}

// discoveryAnswer is the class's AgentClassDiscoveryResponseEvent, with
// the schemas a pydantic agent publishes.
func discoveryAnswer(class string) *event.AgentClassDiscoveryResponseEvent {
	ls := event.L(class, class, class, class)
	schema := func(s string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			panic(err)
		}
		return m
	}
	spec := func(name, sch string, parents ...string) []event.EventSpecs {
		return []event.EventSpecs{{EventName: name, EventSchema: schema(sch), EventParents: append([]string{name}, parents...)}}
	}
	cad := []string{"ControlAndDisplayEvent", "ControlEvent", "DisplayEvent"}
	r := event.New[event.AgentClassDiscoveryResponseEvent]()
	r.AgentClass, r.Name, r.Description, r.IsConversational = class, &ls, &ls, true
	r.Form = []json.RawMessage{}
	r.AgentConfigSpecs = &event.ConfigSpecs{ConfigClass: class + "Config", ConfigSchema: map[string]json.RawMessage{}}
	r.StartEvents = spec("UserMessageEvent",
		`{"type":"object","title":"UserMessageEvent","required":["user"],"properties":{"locale":{"type":"string","default":"de"},"user":{"$ref":"#/$defs/UserIdentity"},"messages":{"type":"array","items":{"$ref":"#/$defs/ChatMessage"}},"files":{"anyOf":[{"type":"array"},{"type":"null"}]}}}`,
		append([]string{"StartEvent"}, cad...)...)
	r.StopEvents = spec("StopEvent", `{}`, append([]string{"StopEvent"}, cad...)...)
	r.HITLRequestEvents = spec("HumanInTheLoopInputRequestEvent", `{}`, append([]string{"HumanInTheLoopRequestEvent"}, cad...)...)
	r.HITLResponseEvents = spec("HumanInTheLoopInputResponseEvent",
		`{"type":"object","required":["response","request_event"],"properties":{"response":{"type":"string"},"request_event":{"$ref":"#/$defs/Req"}}}`,
		append([]string{"HumanInTheLoopResponseEvent[HumanInTheLoopInputRequestEvent]", "HumanInTheLoopResponseEvent"}, cad...)...)
	r.NetworkGraph = json.RawMessage(`{"directed":true,"multigraph":false,"graph":{},"nodes":[],"links":[]}`)
	return r
}

// startResponder runs a responder for class on b until the test ends.
func startResponder(t testing.TB, b bus.Bus, class string) *responder {
	t.Helper()
	ctx := context.Background()
	r := &responder{t: t, b: b, class: class, got: make(chan received, 100)}
	if err := b.EnsureStream(ctx, bus.AgentStream(class)); err != nil {
		t.Fatalf("ensure stream: %v", err)
	}
	dsub, err := b.Subscribe(ctx, topic.DiscoveryRequests(topic.KindAgent), "", func(m *bus.Msg) {
		d, err := topic.ParseDiscovery(m.Subject)
		if err != nil || (d.Class != topic.AnyClass && d.Class != class) {
			return
		}
		subj, _ := topic.Discovery{Kind: topic.KindAgent, Class: class, Dir: topic.DirResponse, CallID: d.CallID}.Subject()
		data, err := event.Marshal(discoveryAnswer(class))
		if err != nil {
			t.Errorf("encode discovery answer: %v", err)
			return
		}
		_ = b.Publish(ctx, &bus.Msg{Subject: subj, Data: data})
	})
	if err != nil {
		t.Fatal(err)
	}
	pattern, _ := topic.ClassControl(class)
	csub, err := b.Subscribe(ctx, pattern, "", func(m *bus.Msg) { r.handle(m) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dsub.Unsubscribe()
		_ = csub.Unsubscribe()
		deleteStream(b, bus.AgentStream(class).Name)
	})
	return r
}

func (r *responder) handle(m *bus.Msg) {
	at, err := topic.ParseAgent(m.Subject)
	if err != nil {
		r.t.Errorf("responder: bad subject %q: %v", m.Subject, err)
		return
	}
	e, err := event.Unmarshal(m.Data)
	if err != nil {
		r.t.Errorf("responder: undecodable %s: %v", at.Name, err)
		return
	}
	if !event.IsStart(e) && !event.IsHITLResponse(e) {
		return // its own outputs
	}
	rc := received{subject: at, raw: m.Data, header: m.Header}
	r.mu.Lock()
	r.received = append(r.received, rc)
	r.mu.Unlock()
	select {
	case r.got <- rc:
	default:
	}
	ctx := context.Background()
	run := at
	switch ev := e.(type) {
	case *event.UserMessageEvent:
		text := ""
		if n := len(ev.Messages); n > 0 {
			text = messageText(ev.Messages[n-1])
		}
		switch text {
		case "silent":
		case "fail":
			r.emit(ctx, run, &event.ExceptionEvent{Message: "the teapot refuses", HTTPStatusCode: 418})
		case "tokens":
			n := func(v int64) *int64 { return &v }
			call := &event.LLMEvent{ChatModelName: event.Str("scripted-llm"), TokenCountPrompt: n(8), TokenCountCompletion: n(3), TokenCountTotal: n(11)}
			r.emit(ctx, run, call)
			stop := &event.LLMStopEvent{}
			stop.ChatModelName, stop.TokenCountPrompt, stop.TokenCountCompletion = event.Str("scripted-llm"), n(3), n(1)
			stop.OutputMessages = []event.Message{{Role: "assistant", Contents: []event.MessageContent{{Type: "text", Text: "Hello"}}}}
			r.emit(ctx, run, stop)
		case "ask":
			req := &event.HumanInTheLoopInputRequestEvent{}
			req.Question = "Which colour?"
			req.HITLType = event.HITLInput
			req.Topic = &event.Topic{
				AgentClass: event.Str(at.Class), AgentID: event.Str(at.ID), ThreadID: event.Str(at.Thread),
				DisplayID: event.Str(at.Display), RunID: event.Str(at.Run), EventType: event.Str("control_event"),
				EventName: event.Str("HumanInTheLoopInputResponseEvent"),
			}
			r.emit(ctx, run, req)
		default:
			answer := "Hello"
			if text == "late" {
				answer = "Hello, world"
			}
			r.emit(ctx, run, &event.ChunkEvent{Content: "Hel", ModelName: "scripted"})
			if text == "costly" {
				for _, n := range [][2]int64{{10, 5}, {20, 7}} {
					cost := &event.LLMCostEvent{LLMName: "scripted-llm"}
					cost.PromptTokenCount, cost.CompletionTokenCount = n[0], n[1]
					r.emit(ctx, run, cost)
				}
			}
			r.emit(ctx, run, &event.ChunkEvent{Content: "lo", ModelName: "scripted"})
			r.emit(ctx, run, stopWith(answer))
		}
	case *event.HumanInTheLoopInputResponseEvent:
		r.emit(ctx, run, stopWith("You chose "+ev.Response))
	}
}

// stopWith is a StopEvent carrying the answer as the reference's LLM stop
// does (output_messages), decoded through the codec so extras survive.
func stopWith(answer string) event.Event {
	raw, _ := json.Marshal(map[string]any{
		"event_id": event.NewID(), "created_at": 1,
		"_event_name":         "StopEvent",
		"_parent_event_names": []string{"StopEvent", "ControlAndDisplayEvent", "ControlEvent", "DisplayEvent"},
		"output_messages":     []any{map[string]any{"role": "assistant", "contents": []any{map[string]any{"type": "text", "text": answer}}, "content": answer}},
	})
	e, err := event.Unmarshal(raw)
	if err != nil {
		panic(err)
	}
	return e
}

func messageText(m event.ChatMessage) string {
	var b strings.Builder
	for _, bl := range m.Blocks {
		if tb, ok := bl.(*event.TextBlock); ok {
			b.WriteString(tb.Text)
		}
	}
	return b.String()
}

// emit publishes e into the run of at as agents do (bus.PublishEvent:
// control → JetStream, display → core, both → both, control first).
func (r *responder) emit(ctx context.Context, at topic.Agent, e event.Event) {
	event.Stamp(e)
	at.Name, at.EventID = "", ""
	if _, err := bus.PublishEvent(ctx, r.b, at, e, nil); err != nil {
		r.t.Errorf("responder: publish %s: %v", event.Name(e), err)
	}
}

// wait returns the next start or response event the responder received.
func (r *responder) wait(t *testing.T, ctx context.Context) received {
	t.Helper()
	select {
	case rc := <-r.got:
		return rc
	case <-ctx.Done():
		t.Fatal("responder received nothing")
		return received{}
	}
}
