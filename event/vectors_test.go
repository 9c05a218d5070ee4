package event

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Test-only types standing in for the reference's test classes (see testdata/vectors/MANIFEST.md).

// TestStartEvent is a StartEvent with one required field.
type TestStartEvent struct {
	StartEvent
	Message string `json:"message" event:"required"`
}

type Level1Event struct {
	ControlEvent
	CommonField string `json:"common_field"`
}

type Level2Event struct {
	Level1Event
	Level2Field string `json:"level2_field"`
}

type Level3Event struct {
	Level2Event
	Level3Field string `json:"level3_field"`
}

func init() {
	MustRegister[TestStartEvent]()
	MustRegister[Level1Event]()
	MustRegister[Level2Event]()
	MustRegister[Level3Event]()
}

var vectorsDir = filepath.Join("testdata", "vectors")

func readVector(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorsDir, name))
	if err != nil {
		t.Fatalf("read vector: %v", err)
	}
	return b
}

func vectorFiles(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, p := range []string{"c*.json", "r*.json"} {
		m, err := filepath.Glob(filepath.Join(vectorsDir, p))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			out = append(out, filepath.Base(f))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no vectors in %s", vectorsDir)
	}
	return out
}

// decodeAs decodes data with Unmarshal and asserts the Go type.
func decodeAs[T any, PT interface {
	*T
	Event
}](t *testing.T, data []byte) PT {
	t.Helper()
	e, err := Unmarshal(data)
	if err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	p, ok := e.(PT)
	if !ok {
		t.Fatalf("decoded %T, want %T", e, p)
	}
	return p
}

func marshal(t *testing.T, e Event) []byte {
	t.Helper()
	b, err := Marshal(e)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return b
}

// reencodeEqual checks that Marshal(e) is semantically equal to want.
func reencodeEqual(t *testing.T, e Event, want []byte) {
	t.Helper()
	if d := semDiff(t, want, marshal(t, e)); d != "" {
		t.Errorf("re-encode differs (-want +got):\n%s", d)
	}
}

func wantExact(t *testing.T, e Event) {
	t.Helper()
	if IsFallback(e) {
		t.Errorf("decoded through the fallback, want an exact match")
	}
	if m := Missing(e); len(m) > 0 {
		t.Errorf("Missing = %v, want none", m)
	}
}

func wantFallback(t *testing.T, e Event, name string, parents []string) {
	t.Helper()
	if !IsFallback(e) {
		t.Errorf("IsFallback = false, want true")
	}
	if got := Name(e); got != name {
		t.Errorf("Name = %q, want %q", got, name)
	}
	if got := Parents(e); !slices.Equal(got, parents) {
		t.Errorf("Parents = %q, want %q", got, parents)
	}
}

func wantMissing(t *testing.T, e Event, fields ...string) {
	t.Helper()
	got := slices.Clone(Missing(e))
	slices.Sort(got)
	slices.Sort(fields)
	if !slices.Equal(got, fields) {
		t.Errorf("Missing = %q, want %q", got, fields)
	}
}

func wantExtra(t *testing.T, e Event, key, raw string) {
	t.Helper()
	got, ok := Extra(e, key)
	if !ok {
		t.Fatalf("extra %q not kept (extras %q)", key, ExtraKeys(e))
	}
	if d := semDiff(t, []byte(raw), got); d != "" {
		t.Errorf("extra %q differs:\n%s", key, d)
	}
}

// outputKeys decodes Marshal(e) into a map for key-level assertions.
func outputKeys(t *testing.T, e Event) map[string]any {
	t.Helper()
	return pyParse(t, marshal(t, e)).(map[string]any)
}

var vectorChecks = map[string]func(t *testing.T, data []byte){
	"c01-chunk-event.json": func(t *testing.T, data []byte) {
		e := decodeAs[ChunkEvent](t, data)
		wantExact(t, e)
		if e.Content != "Hello! " || e.ModelName != "aihub" || e.DisplayName.Fr != "Réponse Partielle" {
			t.Errorf("fields: %+v", e)
		}
		reencodeEqual(t, e, data)
	},
	"c02-stop-event.json": func(t *testing.T, data []byte) {
		e := decodeAs[StopEvent](t, data)
		wantExact(t, e)
		if !IsStop(e) || !IsControl(e) || !IsDisplay(e) {
			t.Error("predicates of StopEvent")
		}
		reencodeEqual(t, e, data)
	},
	"c03-user-message-event.json": func(t *testing.T, data []byte) {
		e := decodeAs[UserMessageEvent](t, data)
		wantExact(t, e)
		if e.User == nil || e.User.IsSysAdmin != nil || e.User.ActingWithinTenant.ID != "__test_tenant__" {
			t.Errorf("user: %+v", e.User)
		}
		if len(e.Messages) != 1 || e.Messages[0].Content() != "Wie viele Ferientage habe ich?" {
			t.Errorf("messages: %+v", e.Messages)
		}
		if e.Files != nil || e.RequestedFeatures == nil {
			t.Errorf("files %v, requested_features %v", e.Files, e.RequestedFeatures)
		}
		if e.CreatedAt != 1755015355940833270 {
			t.Errorf("created_at = %d", e.CreatedAt)
		}
		reencodeEqual(t, e, data)
	},
	"c04-exception-event.json": func(t *testing.T, data []byte) {
		e := decodeAs[ExceptionEvent](t, data)
		wantExact(t, e)
		if !IsSemantic(e) || !IsException(e) || e.HTTPStatusCode != 500 {
			t.Errorf("exception event: %+v", e)
		}
		reencodeEqual(t, e, data)
	},
	"c05-llm-cost-event.json": func(t *testing.T, data []byte) {
		e := decodeAs[LLMCostEvent](t, data)
		wantExact(t, e)
		if e.PromptTokensCosts != 0.0024 || e.EmbeddingTokensCosts != 0 || e.PromptTokenCount != 1200 {
			t.Errorf("costs: %+v", e.LLMCosts)
		}
		if !IsLLMCost(e) || IsControl(e) {
			t.Error("predicates of LLMCostEvent")
		}
		reencodeEqual(t, e, data)
	},
	"c06-hitl-input-request-event.json": func(t *testing.T, data []byte) {
		e := decodeAs[HumanInTheLoopInputRequestEvent](t, data)
		wantExact(t, e)
		if e.HITLType != HITLInput || e.Topic == nil || *e.Topic.EventName != "HumanInTheLoopInputResponseEvent" || e.Topic.RunID != nil {
			t.Errorf("request: %+v", e)
		}
		if !IsHITLRequest(e) || IsHITLResponse(e) {
			t.Error("predicates of the HITL request")
		}
		reencodeEqual(t, e, data)
	},
	"c07-hitl-input-response-event.json": func(t *testing.T, data []byte) {
		e := decodeAs[HumanInTheLoopInputResponseEvent](t, data)
		wantExact(t, e)
		if e.Response != "CC-4711" || e.RequestEvent == nil || e.RequestEvent.Question != "Which cost centre should I book this on?" {
			t.Errorf("response: %+v", e)
		}
		if IsFallback(e.RequestEvent) {
			t.Error("nested request decoded through the fallback")
		}
		if !Has(e, "HumanInTheLoopResponseEvent[HumanInTheLoopInputRequestEvent]") || !IsHITLResponse(e) {
			t.Error("parents of the response lack the generic name or HumanInTheLoopResponseEvent")
		}
		reencodeEqual(t, e, data)
	},
	"c08a-cron-start-scheduled-for-str.json": checkScheduledFor,
	"c08b-cron-start-scheduled-for-iso.json": checkScheduledFor,
	"c09-persisted-agent-event.json": func(t *testing.T, data []byte) {
		var doc Persisted
		if err := UnmarshalValue(data, &doc); err != nil {
			t.Fatal(err)
		}
		e, err := doc.Event()
		if err != nil {
			t.Fatal(err)
		}
		um, ok := e.(*UserMessageEvent)
		if !ok {
			t.Fatalf("event_data decoded as %T", e)
		}
		wantExact(t, um)
		reencodeEqual(t, um, readVector(t, "c03-user-message-event.json"))
		out, err := MarshalValue(&doc)
		if err != nil {
			t.Fatal(err)
		}
		if d := semDiff(t, data, out); d != "" {
			t.Errorf("document re-encode differs:\n%s", d)
		}
	},
	"c10-llm-event-openinference.json": func(t *testing.T, data []byte) {
		// The attribute map itself is produced by package semantic; here the
		// LLMEvent it describes must survive the codec with the values and
		// JSON types the attributes are taken from.
		attrs := pyParse(t, data).(map[string]any)
		in := &LLMEvent{
			ChatModelName: Str("gpt-4o"), Provider: Str("OpenAILike"),
			TokenCountPrompt: ptr[int64](10), TokenCountCompletion: ptr[int64](2), TokenCountTotal: ptr[int64](12),
			InputMessages:  []Message{MessageFromString("user", "Hi")},
			OutputMessages: []Message{MessageFromString("assistant", "Hello")},
		}
		Stamp(in)
		e := decodeAs[LLMEvent](t, marshal(t, in))
		wantExact(t, e)
		checks := map[string]any{
			"llm.model_name":                       *e.ChatModelName,
			"llm.provider":                         *e.Provider,
			"llm.token_count.prompt":               *e.TokenCountPrompt,
			"llm.token_count.completion":           *e.TokenCountCompletion,
			"llm.token_count.total":                *e.TokenCountTotal,
			"llm.input_messages.0.message.role":    e.InputMessages[0].Role,
			"llm.input_messages.0.message.content": e.InputMessages[0].Content(),
			"llm.input_messages.0.message.contents.0.message_content.type":  e.InputMessages[0].Contents[0].Type,
			"llm.input_messages.0.message.contents.0.message_content.text":  e.InputMessages[0].Contents[0].Text,
			"llm.output_messages.0.message.role":                            e.OutputMessages[0].Role,
			"llm.output_messages.0.message.content":                         e.OutputMessages[0].Content(),
			"llm.output_messages.0.message.contents.0.message_content.type": e.OutputMessages[0].Contents[0].Type,
			"llm.output_messages.0.message.contents.0.message_content.text": e.OutputMessages[0].Contents[0].Text,
		}
		for k, v := range checks {
			if attrs[k] != v {
				t.Errorf("%s: vector %#v, event %#v", k, attrs[k], v)
			}
		}
		if attrs["llm.invocation_parameters"] != "null" || e.InvocationParameters != nil {
			t.Errorf("invocation_parameters: vector %v, event %v", attrs["llm.invocation_parameters"], e.InvocationParameters)
		}
		out := outputKeys(t, e)
		if msgs := out["output_messages"].([]any); msgs[0].(map[string]any)["content"] != "Hello" {
			t.Errorf("computed content not written: %v", msgs[0])
		}
	},
	"r01-user-message-event-docs-example.json": func(t *testing.T, data []byte) {
		e := decodeAs[UserMessageEvent](t, data)
		wantMissing(t, e, "user.email", "user.roles")
		if IsFallback(e) || e.User.Name != "Joel Barmettler" || e.DisplayName.En != "User Request" {
			t.Errorf("decoded: %+v", e)
		}
		if len(e.Messages) != 2 || e.Messages[0].Role != "system" || e.Messages[1].Blocks == nil || len(e.Messages[1].Blocks) != 0 {
			t.Errorf("messages: %+v", e.Messages)
		}
		if err := Validate(e); err == nil {
			t.Error("Validate accepted an event with missing required fields")
		}
	},
	"r02-user-message-event-docs-step2.json": func(t *testing.T, data []byte) {
		e := decodeAs[UserMessageEvent](t, data)
		wantMissing(t, e, "user.email", "user.roles")
		if len(e.Messages) != 1 || e.Messages[0].Content() != "Hello" || e.Locale != "en" || e.EventID != "e423" {
			t.Errorf("decoded: %+v", e)
		}
		out := outputKeys(t, e)
		msg := out["messages"].([]any)[0].(map[string]any)
		if _, ok := msg["content"]; ok {
			t.Error("message written with content")
		}
		if blocks := msg["blocks"].([]any); len(blocks) != 1 || blocks[0].(map[string]any)["text"] != "Hello" {
			t.Errorf("blocks: %v", msg["blocks"])
		}
		if out["files"] != nil || len(out["requested_features"].([]any)) != 0 || out["display_name"].(map[string]any)["en"] == nil {
			t.Errorf("defaults not written: %v", out)
		}
	},
	"r03-chunk-event.json":        checkDocChunk,
	"r04-chunk-event-second.json": checkDocChunk,
	"r05-stop-event-docs.json": func(t *testing.T, data []byte) {
		e := decodeAs[StopEvent](t, data)
		wantExact(t, e)
		dn := outputKeys(t, e)["display_name"].(map[string]any)
		if dn["en"] != "Stop" || dn["de"] != nil || len(dn) != 4 {
			t.Errorf("display_name: %v", dn)
		}
	},
	"r06-user-message-event-rag-no-user.json": func(t *testing.T, data []byte) {
		e := decodeAs[UserMessageEvent](t, data)
		wantMissing(t, e, "user")
		out := outputKeys(t, e)
		if out["locale"] != "de" || out["user"] != nil || e.Messages[0].Content() != "What is the Swiss AI Hub?" {
			t.Errorf("output: %v", out)
		}
	},
	"r07-condense-question-event-unknown.json": func(t *testing.T, data []byte) {
		e := decodeAs[ControlEvent](t, data)
		wantFallback(t, e, "CondenseQuestionEvent", []string{"CondenseQuestionEvent", "ControlEvent"})
		wantExtra(t, e, "condensed_question", `"Definition and purpose of the Swiss AI Hub"`)
		if !IsControl(e) || IsDisplay(e) {
			t.Error("predicates")
		}
		reencodeEqual(t, e, data)
	},
	"r08-retrieve-event-unknown.json": func(t *testing.T, data []byte) {
		e := decodeAs[ControlEvent](t, data)
		wantFallback(t, e, "RetrieveEvent", []string{"RetrieveEvent", "ControlEvent"})
		wantExtra(t, e, "nodes", `[{"id":"doc-1","content":"The Swiss AI Hub is an open..."}]`)
		reencodeEqual(t, e, data)
	},
	"r09-stop-event-extra-content.json": func(t *testing.T, data []byte) {
		e := decodeAs[StopEvent](t, data)
		wantExact(t, e)
		wantExtra(t, e, "content", `"The Swiss AI Hub is an open AI platform that you own and control."`)
		out := outputKeys(t, e)
		if out["content"] == nil || out["display_name"].(map[string]any)["en"] == nil {
			t.Errorf("output: %v", out)
		}
	},
	"r10-http-body-user-message.json": func(t *testing.T, data []byte) {
		var body struct {
			Messages []ChatMessage `json:"messages"`
		}
		if err := UnmarshalValue(data, &body); err != nil {
			t.Fatal(err)
		}
		if len(body.Messages) == 0 {
			t.Fatal("no messages")
		}
		for _, m := range body.Messages {
			if len(m.Blocks) != 1 || m.Blocks[0].BlockType() != "text" || m.Content() == "" {
				t.Errorf("legacy message not one text block: %+v", m)
			}
		}
	},
	"r11-unknown-event-start-fallback.json": func(t *testing.T, data []byte) {
		e := decodeAs[StartEvent](t, data)
		wantFallback(t, e, "UnknownEventType", []string{"UnknownEventType", "SomeBaseClass", "AnotherBaseClass", "StartEvent", "ControlEvent"})
		wantExtra(t, e, "some_field", `"some value"`)
		if !IsStart(e) || !IsControl(e) || IsDisplay(e) {
			t.Error("predicates")
		}
		if e.EventID != "12345" || e.CreatedAt != 1234567890 {
			t.Errorf("base fields: %+v", e.Base)
		}
		st, _ := Lookup("StartEvent")
		name, _, _ := st.DisplayDefaults()
		if got := outputKeys(t, e)["display_name"].(map[string]any)["en"]; got != name.En {
			t.Errorf("display_name.en = %v, want StartEvent's default %q", got, name.En)
		}
	},
	"r12-test-start-event-extra-fields.json": func(t *testing.T, data []byte) {
		e := decodeAs[TestStartEvent](t, data)
		wantExact(t, e)
		if !IsObjectID(e.EventID) || e.CreatedAt == 0 {
			t.Errorf("generated base fields: %+v", e.Base)
		}
		e2 := decodeAs[TestStartEvent](t, marshal(t, e))
		e3 := decodeAs[TestStartEvent](t, marshal(t, e2))
		wantExtra(t, e3, "agent_id", `"test-agent-1"`)
		wantExtra(t, e3, "extra_field", `"This wasn't in the original class"`)
		if e3.Message != "Hello" || e3.EventID != e.EventID {
			t.Errorf("after two round trips: %+v", e3)
		}
	},
	"r13-test-start-event-corrupted-parents.json": func(t *testing.T, data []byte) {
		e := decodeAs[TestStartEvent](t, data)
		wantExact(t, e)
		want := []any{"TestStartEvent", "StartEvent", "ControlAndDisplayEvent", "ControlEvent", "DisplayEvent"}
		if got := outputKeys(t, e)[keyParents]; !slices.Equal(got.([]any), want) {
			t.Errorf("parents = %v, want %v", got, want)
		}
	},
	"r14-test-start-event-missing-field.json": func(t *testing.T, data []byte) {
		e := decodeAs[TestStartEvent](t, data)
		wantMissing(t, e, "message")
		if IsFallback(e) {
			t.Error("fell back")
		}
		var ve *ValidationError
		if err := Validate(e); !errors.As(err, &ve) || ve.Field != "message" {
			t.Errorf("Validate = %v, want a ValidationError on message", err)
		}
	},
	"r15-unknown-subclass-depth-fallback.json": func(t *testing.T, data []byte) {
		parents := []string{"UnknownSubclassEvent", "Level3Event", "Level2Event", "Level1Event"}
		e := decodeAs[Level3Event](t, data)
		wantFallback(t, e, "UnknownSubclassEvent", parents)
		if e.CommonField != "shared value" || e.Level2Field != "level 2 value" || e.Level3Field != "level 3 value" {
			t.Errorf("fields: %+v", e)
		}
		out := outputKeys(t, e)
		if out["level3_field"] != "level 3 value" || !IsObjectID(out["event_id"].(string)) {
			t.Errorf("output: %v", out)
		}
		without := func(drop string) []byte {
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			var l []any
			for _, p := range m[keyParents].([]any) {
				if p != drop {
					l = append(l, p)
				}
			}
			m[keyParents] = l
			b, _ := json.Marshal(m)
			return b
		}
		data2 := without("Level3Event")
		e2 := decodeAs[Level2Event](t, data2)
		wantExtra(t, e2, "level3_field", `"level 3 value"`)
		reencodeKeys(t, e2, "common_field", "level2_field", "level3_field")
		var m map[string]any
		_ = json.Unmarshal(data2, &m)
		m[keyParents] = []any{"UnknownSubclassEvent", "Level1Event"}
		data1, _ := json.Marshal(m)
		e1 := decodeAs[Level1Event](t, data1)
		wantExtra(t, e1, "level2_field", `"level 2 value"`)
		reencodeKeys(t, e1, "common_field", "level2_field", "level3_field")
	},
	"r16-tool-event-partial.json": func(t *testing.T, data []byte) {
		e := decodeAs[ToolEvent](t, data)
		wantExact(t, e)
		wantExtra(t, e, "label", `"Weather"`)
		if *e.Name != "get_weather" || string(e.Parameters["city"]) != `"Zurich"` || e.CreatedAt == 0 || e.EventID != "e1" {
			t.Errorf("tool event: %+v", e)
		}
		reencodeKeys(t, e, "label", "display_name", "created_at", "parameters")
	},
	"r17a-tool-result-event.json": func(t *testing.T, data []byte) {
		e := checkLastResort(t, data, "ToolResultEvent")
		wantExtra(t, e, "content", `"Sunny, 21°C"`)
	},
	"r17b-tool-result-event-error.json": func(t *testing.T, data []byte) {
		e := checkLastResort(t, data, "ToolResultEvent")
		wantExtra(t, e, "is_error", `true`)
	},
	"r17c-tool-loop-status-event.json": func(t *testing.T, data []byte) {
		e := checkLastResort(t, data, "ToolLoopStatusEvent")
		wantExtra(t, e, "done", `false`)
	},
	"r17d-tool-loop-condensed-event.json": func(t *testing.T, data []byte) {
		e := checkLastResort(t, data, "ToolLoopCondensedEvent")
		wantExtra(t, e, "loop", `"tools"`)
	},
	"r18a-chunk-parents-only.json": func(t *testing.T, data []byte) {
		e := decodeAs[ChunkEvent](t, data)
		wantFallback(t, e, "ChunkEvent", []string{"ChunkEvent"})
		if !IsChunk(e) || IsDisplay(e) || e.Content != "Let me check the weather." {
			t.Errorf("chunk: %+v", e)
		}
		out := outputKeys(t, e)
		if out[keyName] != "ChunkEvent" || out["model_name"] != "aihub" || out["display_name"] == nil {
			t.Errorf("output: %v", out)
		}
	},
	"r18b-in-order-node-combiner-event.json": func(t *testing.T, data []byte) {
		e := checkLastResort(t, data, "InOrderNodeCombinerEvent")
		wantExtra(t, e, "grounding_nodes", `[]`)
	},
	"r19-user-message-event-data-malformed-audio.json": func(t *testing.T, data []byte) {
		_, err := UnmarshalAs[UserMessageEvent](data)
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("err = %v, want a *DecodeError", err)
		}
		if de.Event != "UserMessageEvent" || de.Field != "messages[0].blocks[0].audio" || !errors.Is(err, ErrType) {
			t.Errorf("error names event %q, field %q: %v", de.Event, de.Field, err)
		}
	},
	"r20a-persisted-custom-hitl-request.json": func(t *testing.T, data []byte) {
		e := checkPersisted(t, data)
		r, ok := e.(*HumanInTheLoopRequestEvent)
		if !ok {
			t.Fatalf("event_data decoded as %T", e)
		}
		wantFallback(t, r, "CustomHumanInTheLoopRequestEvent", []string{"CustomHumanInTheLoopRequestEvent", "HumanInTheLoopRequestEvent"})
		wantMissing(t, r, "topic", "hitl_type")
		if r.Question != "Please clarify" || r.CreatedAt != 2 || !IsHITLRequest(r) {
			t.Errorf("request: %+v", r)
		}
	},
	"r20b-persisted-custom-hitl-response.json": func(t *testing.T, data []byte) {
		e := checkPersisted(t, data)
		r, ok := e.(*HumanInTheLoopResponseEvent)
		if !ok {
			t.Fatalf("event_data decoded as %T", e)
		}
		wantFallback(t, r, "CustomHumanInTheLoopResponseEvent", []string{"CustomHumanInTheLoopResponseEvent", "HumanInTheLoopResponseEvent"})
		if string(r.Response) != "true" || r.RequestEvent != nil || !IsHITLResponse(r) {
			t.Errorf("response: %+v", r)
		}
	},
	"r20c-persisted-custom-stop.json": func(t *testing.T, data []byte) {
		e := checkPersisted(t, data)
		s, ok := e.(*StopEvent)
		if !ok {
			t.Fatalf("event_data decoded as %T", e)
		}
		wantFallback(t, s, "CustomStopEvent", []string{"CustomStopEvent", "StopEvent"})
		raw, _ := Extra(s, "output_messages")
		var msgs []Message
		if err := UnmarshalValue(raw, &msgs); err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 1 || msgs[len(msgs)-1].Content() != "full answer" {
			t.Errorf("output_messages: %+v", msgs)
		}
		out, err := MarshalValue(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if d := semDiff(t, raw, out); d != "" {
			t.Errorf("Message re-encode differs:\n%s", d)
		}
	},
	"r22-user-uploaded-file.json": func(t *testing.T, data []byte) {
		var f UserUploadedFile
		if err := UnmarshalValue(data, &f); err != nil {
			t.Fatal(err)
		}
		if err := f.validate(); err != nil {
			t.Error(err)
		}
		out, err := MarshalValue(f)
		if err != nil {
			t.Fatal(err)
		}
		if d := semDiff(t, data, out); d != "" {
			t.Errorf("re-encode differs:\n%s", d)
		}
	},
	"r23-external-agent-event-envelope.json": func(t *testing.T, data []byte) {
		var env struct {
			ThreadID  string          `json:"thread_id"`
			DisplayID string          `json:"display_id"`
			Event     json.RawMessage `json:"event"`
		}
		if err := UnmarshalValue(data, &env); err != nil {
			t.Fatal(err)
		}
		if env.ThreadID != "thread123" || env.DisplayID != "displayA" {
			t.Errorf("envelope: %+v", env)
		}
		e := decodeAs[UserMessageEvent](t, env.Event)
		wantMissing(t, e, "user")
		wantExtra(t, e, "content", `"Hello world!"`)
	},
}

func ptr[T any](v T) *T { return &v }

func checkScheduledFor(t *testing.T, data []byte) {
	e, err := UnmarshalAs[CronStartEvent](data)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 8, 11, 12, 0, 0, 0, time.UTC)
	if !e.ScheduledFor.Equal(want) {
		t.Errorf("scheduled_for = %v, want %v", e.ScheduledFor, want)
	}
	if got := outputKeys(t, e)["scheduled_for"]; got != "2026-08-11 12:00:00+00:00" {
		t.Errorf("scheduled_for written as %v", got)
	}
}

func checkDocChunk(t *testing.T, data []byte) {
	e := decodeAs[ChunkEvent](t, data)
	wantExact(t, e)
	out := outputKeys(t, e)
	dn := out["display_name"].(map[string]any)
	if out["model_name"] != "aihub" || dn["en"] != "Chunk" || dn["de"] != nil || len(dn) != 4 {
		t.Errorf("output: %v", out)
	}
	if d := semDiff(t, data, marshal(t, e)); d == "" {
		t.Error("re-encode equal to the simplified input; expected model_name and locales added")
	}
}

func checkLastResort(t *testing.T, data []byte, name string) *BaseEvent {
	t.Helper()
	e := decodeAs[BaseEvent](t, data)
	wantFallback(t, e, name, []string{})
	for _, p := range []func(Event) bool{IsControl, IsDisplay, IsStart, IsStop, IsChunk, IsException, IsHITLRequest} {
		if p(e) {
			t.Error("a predicate is true for a last-resort event")
		}
	}
	out := outputKeys(t, e)
	if l, ok := out[keyParents].([]any); !ok || len(l) != 0 || out[keyName] != name || !IsObjectID(out["event_id"].(string)) {
		t.Errorf("output: %v", out)
	}
	var in map[string]any
	_ = json.Unmarshal(data, &in)
	for k := range in {
		if _, ok := out[k]; !ok {
			t.Errorf("key %q lost", k)
		}
	}
	return e
}

func checkPersisted(t *testing.T, data []byte) Event {
	t.Helper()
	var doc Persisted
	if err := UnmarshalValue(data, &doc); err != nil {
		t.Fatal(err)
	}
	out, err := MarshalValue(&doc)
	if err != nil {
		t.Fatal(err)
	}
	if d := semDiff(t, data, out); d != "" {
		t.Errorf("document re-encode differs:\n%s", d)
	}
	e, err := doc.Event()
	if err != nil {
		t.Fatal(err)
	}
	// Every key of event_data survives a decode and encode of the event.
	var in map[string]any
	_ = json.Unmarshal(doc.EventData, &in)
	got := outputKeys(t, e)
	for k, v := range in {
		if d := semDiff(t, mustJSON(t, v), mustJSON(t, got[k])); d != "" {
			t.Errorf("event_data key %q: %s", k, d)
		}
	}
	return e
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func reencodeKeys(t *testing.T, e Event, keys ...string) {
	t.Helper()
	out := outputKeys(t, e)
	for _, k := range keys {
		if _, ok := out[k]; !ok {
			t.Errorf("output lacks %q: %v", k, out)
		}
	}
}

// TestVectors runs one subtest per golden vector (MANIFEST.md).
func TestVectors(t *testing.T) {
	for _, name := range vectorFiles(t) {
		check, ok := vectorChecks[name]
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			if !ok {
				t.Fatalf("no check for vector %s: add one to vectorChecks", name)
			}
			check(t, readVector(t, name))
		})
	}
}
