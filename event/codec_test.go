package event

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLenientReading(t *testing.T) {
	tests := []struct {
		name  string
		input string
		check func(t *testing.T, e Event)
	}{
		{"spaced separators and escapes", `{ "_event_name" : "ChunkEvent" ,
			"content" : "Gr\u00fc\u00DFe \ud83d\ude00 \"q\" \\ \/" , "created_at" : 5 }`,
			func(t *testing.T, e Event) {
				if c := e.(*ChunkEvent).Content; c != "Grüße 😀 \"q\" \\ /" {
					t.Errorf("content = %q", c)
				}
			}},
		{"lone surrogate", `{"_event_name":"ChunkEvent","content":"a\ud83db"}`,
			func(t *testing.T, e Event) {
				if c := e.(*ChunkEvent).Content; c != "a\uFFFDb" {
					t.Errorf("content = %q", c)
				}
			}},
		{"NaN and Infinity", `{"_event_name":"LLMCostEvent","prompt_tokens_costs":NaN,"completion_tokens_costs":Infinity,"embedding_tokens_costs":-Infinity,"x":[NaN, 1e400]}`,
			func(t *testing.T, e Event) {
				c := e.(*LLMCostEvent)
				if !math.IsNaN(c.PromptTokensCosts) || !math.IsInf(c.CompletionTokensCosts, 1) || !math.IsInf(c.EmbeddingTokensCosts, -1) {
					t.Errorf("costs = %+v", c.LLMCosts)
				}
				out := string(marshal(t, e))
				for _, tok := range []string{`"prompt_tokens_costs": NaN`, `"completion_tokens_costs": Infinity`, `"embedding_tokens_costs": -Infinity`, `"x": [NaN, 1e400]`} {
					if !strings.Contains(out, tok) {
						t.Errorf("output lacks %s: %s", tok, out)
					}
				}
			}},
		{"any string id, tiny created_at", `{"_event_name":"StopEvent","event_id":"request","created_at":1}`,
			func(t *testing.T, e Event) {
				if b := e.EventBase(); b.EventID != "request" || b.CreatedAt != 1 {
					t.Errorf("base = %+v", b)
				}
			}},
		{"missing and null base fields are generated", `{"_event_name":"StopEvent","event_id":null}`,
			func(t *testing.T, e Event) {
				b := e.EventBase()
				if !IsObjectID(b.EventID) || time.Since(time.Unix(0, b.CreatedAt)) > time.Minute {
					t.Errorf("base = %+v", b)
				}
			}},
		{"null display texts take the defaults", `{"_event_name":"ChunkEvent","display_name":null,"display_description":{"fr":"x","xx":"dropped"}}`,
			func(t *testing.T, e Event) {
				c := e.(*ChunkEvent)
				if c.DisplayName == nil || c.DisplayName.En != "Partial Response" || c.DisplayDescription.Fr != "x" || c.DisplayDescription.En != "" {
					t.Errorf("display = %+v %+v", c.DisplayName, c.DisplayDescription)
				}
			}},
		{"empty locale string survives", `{"_event_name":"ChunkEvent","display_name":{"de":"","en":null}}`,
			func(t *testing.T, e Event) {
				dn := outputKeys(t, e)["display_name"].(map[string]any)
				if dn["de"] != "" || dn["en"] != nil {
					t.Errorf("display_name = %v", dn)
				}
			}},
		{"integral float into an int field", `{"_event_name":"ExceptionEvent","message":"m","http_status_code":502.0}`,
			func(t *testing.T, e Event) {
				if e.(*ExceptionEvent).HTTPStatusCode != 502 {
					t.Error("http_status_code")
				}
			}},
		{"both datetime forms", `{"_event_name":"CronStartEvent","scheduled_for":"2026-08-11 14:00:00.250000+02:00"}`,
			func(t *testing.T, e Event) {
				want := time.Date(2026, 8, 11, 12, 0, 0, 250e6, time.UTC)
				if got := e.(*CronStartEvent).ScheduledFor; !got.Equal(want) {
					t.Errorf("scheduled_for = %v", got)
				}
				if s := outputKeys(t, e)["scheduled_for"]; s != "2026-08-11 14:00:00.250000+02:00" {
					t.Errorf("written as %v", s)
				}
			}},
		{"old name of a renamed class decodes exactly", `{"_event_name":"ScheduledStartEvent","scheduled_for":"2026-08-11T12:00:00+00:00"}`,
			func(t *testing.T, e Event) {
				if _, ok := e.(*ScheduledStartEvent); !ok || IsFallback(e) {
					t.Errorf("decoded %T", e)
				}
			}},
		{"a candidate that fails gives way to the next", `{"_event_name":"MyException","_parent_event_names":["MyException","ExceptionEvent","SemanticEvent","ControlAndDisplayEvent","ControlEvent","DisplayEvent"],"message":{"code":5}}`,
			func(t *testing.T, e Event) {
				if _, ok := e.(*SemanticEvent); !ok {
					t.Fatalf("decoded %T, want *SemanticEvent", e)
				}
				wantExtra(t, e, "message", `{"code":5}`)
				if !IsException(e) || Name(e) != "MyException" {
					t.Error("name or predicates lost")
				}
			}},
		{"Control+Display parents fall back to ControlAndDisplayEvent", `{"_event_name":"X","_parent_event_names":["X","ControlEvent","DisplayEvent"]}`,
			func(t *testing.T, e Event) {
				if _, ok := e.(*ControlAndDisplayEvent); !ok {
					t.Errorf("decoded %T", e)
				}
			}},
		{"Display first also gives ControlAndDisplayEvent", `{"_event_name":"Y","_parent_event_names":["Y","DisplayEvent","ControlEvent"]}`,
			func(t *testing.T, e Event) {
				if _, ok := e.(*ControlAndDisplayEvent); !ok {
					t.Errorf("decoded %T", e)
				}
			}},
		{"unknown AITL request subclass", `{"_event_name":"MyAITL","_parent_event_names":["MyAITL","AgentInTheLoopRequestEvent","ControlEvent","DisplayEvent"],"share_run_id":true}`,
			func(t *testing.T, e Event) {
				if _, ok := e.(*AgentInTheLoopRequestEvent); !ok {
					t.Errorf("decoded %T", e)
				}
				if !IsAITLRequest(e) || !IsControl(e) {
					t.Error("predicates")
				}
			}},
		{"nested subclass keeps its payload", `{"_event_name":"AgentInTheLoopResponseEvent","request_event_id":"r1",
			"stop_event":{"_event_name":"RAGFailureStopEvent","reason":"expert_declined","event_id":"s1","created_at":7}}`,
			func(t *testing.T, e Event) {
				r := e.(*AgentInTheLoopResponseEvent)
				s, ok := r.StopEvent.(*RAGFailureStopEvent)
				if !ok || s.Reason != "expert_declined" || r.RequestEventID != "r1" {
					t.Fatalf("stop_event = %#v", r.StopEvent)
				}
				again := decodeAs[AgentInTheLoopResponseEvent](t, marshal(t, e))
				if again.RequestEventID != "r1" || again.StopEvent.(*RAGFailureStopEvent).Reason != "expert_declined" {
					t.Error("request_event_id or nested payload lost in a round trip")
				}
			}},
		{"historical blank condensed question", `{"_event_name":"StandaloneQuestionCondenserEvent","condensed_chat_message":{"role":"user","blocks":[]}}`,
			func(t *testing.T, e Event) {
				if q := e.(*StandaloneQuestionCondenserEvent).CondensedQuestion(); q != "" {
					t.Errorf("condensed question = %q", q)
				}
			}},
		{"unknown block types are kept raw", `{"_event_name":"UserMessageEvent","messages":[{"role":"user","blocks":[{"block_type":"thinking","content":"x"},{"text":"t","block_type":"text"},{"block_type":"image","image":"b'QUJD'","url":null}]}]}`,
			func(t *testing.T, e Event) {
				b := e.(*UserMessageEvent).Messages[0].Blocks
				if raw, ok := b[0].(*RawBlock); !ok || raw.Type != "thinking" {
					t.Errorf("block 0 = %#v", b[0])
				}
				if img, ok := b[2].(*ImageBlock); !ok || string(img.Image) != "ABC" {
					t.Errorf("block 2 = %#v", b[2])
				}
				out := string(marshal(t, e))
				if !strings.Contains(out, `"block_type":"thinking"`) || !strings.Contains(out, `"image": "b'QUJD'"`) {
					t.Errorf("output: %s", out)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Unmarshal([]byte(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, e)
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		input, event, field string
		kind                error
	}{
		{`{"_event_name":"ChunkEvent","content":5}`, "ChunkEvent", "content", ErrType},
		{`{"_event_name":"ExceptionEvent","http_status_code":"500"}`, "ExceptionEvent", "http_status_code", ErrType},
		{`{"_event_name":"ExceptionEvent","http_status_code":1.5}`, "ExceptionEvent", "http_status_code", ErrType},
		{`{"_event_name":"UserMessageEvent","user":{"roles":[1]}}`, "UserMessageEvent", "user.roles[0]", ErrType},
		{`{"_event_name":"CronStartEvent","scheduled_for":"tomorrow"}`, "CronStartEvent", "scheduled_for", ErrType},
		{`{"_event_name":"HumanInTheLoopInputResponseEvent","request_event":{"_event_name":"ChunkEvent"}}`, "HumanInTheLoopInputResponseEvent", "request_event", ErrTypeMismatch},
		{`{"_event_name":"ChunkEvent","content":"x"`, "ChunkEvent", "", ErrSyntax},
		{`{"content":[1,}],"_event_name":"ChunkEvent"}`, "ChunkEvent", "content", ErrSyntax},
		{`{"_event_name":"ChunkEvent"} x`, "", "", ErrSyntax},
		{`[1,2]`, "", "", ErrType},
		{`{"a":nan}`, "", "", ErrSyntax},
		// Lists name the element: the gateway's 400 points at it.
		{`{"_event_name":"UserMessageEvent","messages":[{"role":"user"},{"role":7}]}`, "UserMessageEvent", "messages[1].role", ErrType},
		{`{"_event_name":"UserMessageEvent","messages":[{"role":"user","blocks":[{"block_type":"text","text":"a"},{"block_type":"text","text":5}]}]}`, "UserMessageEvent", "messages[0].blocks[1].text", ErrType},
		{`{"_event_name":"UserMessageEvent","user":{"roles":["a","b",1]}}`, "UserMessageEvent", "user.roles[2]", ErrType},
		{`{"_event_name":"UserMessageEvent","messages":"x"}`, "UserMessageEvent", "messages", ErrType},
		{`{"_event_name":"UserMessageEvent","requested_features":[7]}`, "UserMessageEvent", "requested_features[0]", ErrType},
		{`{"_event_name":"RouterEvent","routes":[{"event":{"_event_name":"ChunkEvent","content":1}}]}`, "ChunkEvent", "routes[0].event.content", ErrType},
	}
	for _, tt := range tests {
		_, err := Unmarshal([]byte(tt.input))
		var de *DecodeError
		if !errors.As(err, &de) || !errors.Is(err, tt.kind) {
			t.Errorf("%s: err = %v, want a DecodeError wrapping %v", tt.input, err, tt.kind)
			continue
		}
		if tt.event != "" && (de.Event != tt.event || de.Field != tt.field) {
			t.Errorf("%s: error names %q/%q, want %q/%q (%v)", tt.input, de.Event, de.Field, tt.event, tt.field, err)
		}
		if tt.event != "" && (!strings.Contains(err.Error(), tt.event) || !strings.Contains(err.Error(), tt.field)) {
			t.Errorf("message %q does not name event and field", err)
		}
	}
}

func TestUnmarshalAs(t *testing.T) {
	// A registered subtype decodes as T, keeping its name, parents and fields.
	e, err := UnmarshalAs[StartEvent]([]byte(`{"_event_name":"UserMessageEvent","locale":"fr"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !IsFallback(e) || Name(e) != "UserMessageEvent" || !IsUserMessage(e) {
		t.Errorf("as StartEvent: name %q parents %q", Name(e), Parents(e))
	}
	wantExtra(t, e, "locale", `"fr"`)
	if _, err := UnmarshalAs[StartEvent]([]byte(`{"_event_name":"ChunkEvent"}`)); !errors.Is(err, ErrTypeMismatch) {
		t.Errorf("unrelated type: err = %v", err)
	}
	u, err := UnmarshalAs[UserMessageEvent]([]byte(`{"_event_name":"UserMessageEvent"}`))
	if err != nil || IsFallback(u) {
		t.Errorf("exact: %v %v", err, IsFallback(u))
	}
}

func TestEncoding(t *testing.T) {
	e := &LLMCostEvent{LLMCosts: LLMCosts{PromptTokensCosts: 1, CompletionTokensCosts: 1e16, EmbeddingTokensCosts: 1e-05}, LLMName: "m"}
	out := string(marshal(t, Stamp(e)))
	for _, s := range []string{`"prompt_tokens_costs": 1.0`, `"completion_tokens_costs": 1e+16`, `"embedding_tokens_costs": 1e-05`, `"prompt_token_count": 0`} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %s: %s", s, out)
		}
	}
	c := &ChunkEvent{Content: "<b>&</b> \u2028"}
	out = string(marshal(t, c))
	if !strings.Contains(out, `"content": "<b>&</b> \u2028"`) {
		t.Errorf("HTML escaped or U+2028 raw: %s", out)
	}
	if !json.Valid([]byte(out)) {
		t.Errorf("invalid JSON: %s", out)
	}
	// Every declared field is written, null when unset.
	m := outputKeys(t, &UserMessageEvent{})
	for _, k := range []string{"event_id", "created_at", "display_name", "display_description", "locale", "user", "messages", "files", "requested_features", keyName, keyParents} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %s missing: %v", k, m)
		}
	}
	if _, err := Marshal(&regUnregistered{}); !errors.Is(err, ErrUnregistered) {
		t.Errorf("unregistered: %v", err)
	}
	if _, err := Marshal(nil); err == nil {
		t.Error("Marshal(nil) succeeded")
	}
}

type regUnregistered struct{ ControlEvent }

func TestValidate(t *testing.T) {
	ok := Stamp(&ExceptionEvent{Message: "boom", HTTPStatusCode: 500})
	if err := Validate(ok); err != nil {
		t.Errorf("valid event: %v", err)
	}
	tests := []struct {
		e     Event
		field string
	}{
		{&ExceptionEvent{}, "event_id"},
		{Stamp(&UserMessageEvent{}), "user"},
		{Stamp(&HumanInTheLoopInputRequestEvent{HumanInTheLoopRequestEvent{Topic: &Topic{}, HITLType: "text"}}), "hitl_type"},
		{Stamp(&UserMessageEvent{User: &UserIdentity{Roles: []string{}}, Files: []UserUploadedFile{{Filename: "a/b", FileID: "x"}}}), "files.filename"},
		{Stamp(&RAGFailureStopEvent{Reason: "other"}), "reason"},
	}
	for _, tt := range tests {
		err := Validate(tt.e)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != tt.field || !errors.Is(err, ErrInvalid) || ve.Event != Name(tt.e) {
			t.Errorf("%T: Validate = %v, want field %s", tt.e, err, tt.field)
		}
	}
}

func TestIDs(t *testing.T) {
	before := time.Now().Truncate(time.Second)
	prev := ""
	seen := map[string]bool{}
	for range 10000 {
		id := NewID()
		if !IsObjectID(id) || seen[id] || id[:8] < prev {
			t.Fatalf("id %q after %q: not 24 lower-hex, unique and sorted by its second", id, prev)
		}
		seen[id], prev = true, id[:8]
	}
	ts, ok := IDTime(prev + "0000000000000000")
	if !ok || ts.Before(before) || ts.After(time.Now()) {
		t.Errorf("IDTime = %v, %v", ts, ok)
	}
}

func TestStampHeadersClone(t *testing.T) {
	e := &ChunkEvent{}
	e.EventID = "keep"
	Stamp(e)
	if e.EventID != "keep" || e.CreatedAt == 0 {
		t.Errorf("Stamp: %+v", e.Base)
	}
	SetHeaders(e, map[string]string{"X-AIHub-Token": "secret"})
	if Headers(e)["X-AIHub-Token"] != "secret" || strings.Contains(string(marshal(t, e)), "secret") {
		t.Error("headers missing or serialized")
	}
	c := Clone(e).(*ChunkEvent)
	SetHeaders(c, map[string]string{"X-AIHub-Other": "1"})
	if _, ok := Headers(e)["X-AIHub-Other"]; ok || c.EventID != "keep" {
		t.Error("Clone shares metadata")
	}
}

func TestNestedWithoutName(t *testing.T) {
	e := decodeAs[HumanInTheLoopInputResponseEvent](t, []byte(`{"_event_name":"HumanInTheLoopInputResponseEvent","response":"x","request_event":{"question":"q","hitl_type":"input"}}`))
	if IsFallback(e.RequestEvent) || !IsHITLRequest(e.RequestEvent) || e.RequestEvent.Question != "q" {
		t.Errorf("nested request: fallback %v, parents %q", IsFallback(e.RequestEvent), Parents(e.RequestEvent))
	}
	wantMissing(t, e.RequestEvent, "topic")
}

func TestNew(t *testing.T) {
	c := New[ChunkEvent]()
	if c.ModelName != "aihub" || c.DisplayName == nil || c.DisplayName.En != "Partial Response" || !IsObjectID(c.EventID) || c.CreatedAt == 0 {
		t.Errorf("New[ChunkEvent] = %+v", c)
	}
	u := New[UserMessageEvent]()
	if u.Locale != "de" || u.Messages == nil || u.RequestedFeatures == nil || u.Files != nil {
		t.Errorf("New[UserMessageEvent] = %+v", u)
	}
	if x := New[ExceptionEvent](); x.HTTPStatusCode != 500 {
		t.Errorf("http_status_code = %d", x.HTTPStatusCode)
	}
}

func TestTypedNilNestedEvent(t *testing.T) {
	var s *StopEvent
	r := Stamp(&AgentInTheLoopResponseEvent{StopEvent: s, RequestEventID: "r"})
	if got := outputKeys(t, r)["stop_event"]; got != nil {
		t.Errorf("stop_event = %v, want null", got)
	}
}

func TestInputAliases(t *testing.T) {
	var m Memory
	if err := UnmarshalValue([]byte(`{"id":"1","user_id":"u","memory":"likes tea","score":0.5,"metadata":{"_user_id":"u","run_id":"r"}}`), &m); err != nil {
		t.Fatal(err)
	}
	if m.OwnerID != "u" || m.Metadata.UserID != "u" || m.Metadata.RunID != "r" || *m.Score != 0.5 {
		t.Errorf("memory = %+v", m)
	}
	out, _ := MarshalValue(m)
	if !strings.Contains(string(out), `"owner_id": "u"`) || strings.Contains(string(out), `"user_id": "u", "memory"`) {
		t.Errorf("output: %s", out)
	}
}

func TestComposeContextBlocks(t *testing.T) {
	e := decodeAs[ComposeContextEvent](t, []byte(`{"_event_name":"ComposeContextEvent","history":[],"blocks":[[{"role":"user","content":"a"}],"[ChatMessage(role=...)]"]}`))
	if len(e.Blocks) != 2 || string(e.Blocks[1]) != `"[ChatMessage(role=...)]"` {
		t.Fatalf("blocks = %q", e.Blocks)
	}
	if _, err := e.BlockMessages(); err == nil {
		t.Error("a text block decoded as messages")
	}
	e.Blocks = e.Blocks[:1]
	m, err := e.BlockMessages()
	if err != nil || m[0][0].Content() != "a" {
		t.Errorf("BlockMessages = %v, %v", m, err)
	}
}

func TestUnmarshalNamed(t *testing.T) {
	// Untagged fields take the given name and parents; an unknown name
	// falls back along them and keeps its identity.
	e, err := UnmarshalNamed([]byte(`{"content":"x"}`), "MyChunk", []string{"MyChunk", "ChunkEvent", "DisplayEvent"})
	if err != nil {
		t.Fatal(err)
	}
	c, ok := e.(*ChunkEvent)
	if !ok || c.Content != "x" || Name(e) != "MyChunk" || !IsFallback(e) {
		t.Errorf("UnmarshalNamed = %T %+v, name %q", e, e, Name(e))
	}
	// A tag in the data wins over the given name.
	e, err = UnmarshalNamed([]byte(`{"_event_name":"StopEvent"}`), "ChunkEvent", nil)
	if err != nil || Name(e) != "StopEvent" {
		t.Errorf("tagged data: %q, %v", Name(e), err)
	}
	if _, err := UnmarshalNamed([]byte(`{"content":7}`), "ChunkEvent", nil); !errors.Is(err, ErrType) {
		t.Errorf("wrong type: %v", err)
	}
}

func TestMissingInListNamesElement(t *testing.T) {
	e, err := Unmarshal([]byte(`{"_event_name":"UserMessageEvent","user":{"id":"u","name":"n","email":"e","roles":[]},"files":[{"filename":"a","file_type":"t","file_id":"1"},{"filename":"b"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"files[1].file_type", "files[1].file_id"}
	if got := Missing(e); !slices.Equal(got, want) {
		t.Errorf("Missing = %q, want %q", got, want)
	}
}

func TestValueListErrorNamesElement(t *testing.T) {
	var msgs []ChatMessage
	err := UnmarshalValue([]byte(`[{"role":"user"},{"role":[]}]`), &msgs)
	var de *DecodeError
	if !errors.As(err, &de) || de.Field != "[1].role" {
		t.Errorf("UnmarshalValue = %v, want field [1].role", err)
	}
}

func TestWithIndex(t *testing.T) {
	for _, tt := range []struct{ field, prefix, want string }{
		{"messages.role", "messages", "messages[3].role"},
		{"messages", "messages", "messages[3]"},
		{"messages[1].x", "messages", "messages[3][1].x"},
		{"messages_extra", "messages", "messages_extra"},
		{"other", "messages", "other"},
		{"role", "", "[3].role"},
		{"", "", "[3]"},
	} {
		if got := withIndex(tt.field, tt.prefix, 3); got != tt.want {
			t.Errorf("withIndex(%q, %q) = %q, want %q", tt.field, tt.prefix, got, tt.want)
		}
	}
}
