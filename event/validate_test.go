package event

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidateEveryProblem(t *testing.T) {
	// One event with problems at the top, in a nested value, in a list
	// item and in a nested event: each is reported with its path.
	e := Stamp(&HumanInTheLoopInputResponseEvent{
		RequestEvent: &HumanInTheLoopInputRequestEvent{HumanInTheLoopRequestEvent{HITLType: HITLChat}},
	})
	e.EventBase().EventID = ""
	err := Validate(e)
	var ve ValidationErrors
	if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Validate = %v, want ValidationErrors", err)
	}
	var fields []string
	for _, p := range ve {
		if p.Event != "HumanInTheLoopInputResponseEvent" {
			t.Errorf("%v: event %q", p, p.Event)
		}
		fields = append(fields, p.Field)
	}
	if want := []string{"event_id", "request_event.hitl_type"}; !slices.Equal(fields, want) {
		t.Errorf("fields = %q, want %q (%v)", fields, want, err)
	}
	var first *ValidationError
	if !errors.As(err, &first) || first.Field != "event_id" {
		t.Errorf("errors.As finds %v, want the first problem", first)
	}
	if !strings.Contains(err.Error(), `field request_event.hitl_type: must be "input", got "chat"`) {
		t.Errorf("message %q", err)
	}

	// Values in lists carry their index; value types' own checks apply.
	u := Stamp(&RAGStartEvent{
		SelectedNamespaces: nil,
		Files:              []UserUploadedFile{{Filename: "ok.txt", FileID: "2b1c4a4e-3d6f-4b8a-9c1d-0e2f3a4b5c6d"}, {Filename: "a/b", FileID: "x"}},
	})
	err = Validate(u)
	if !errors.As(err, &ve) || len(ve) != 1 || ve[0].Field != "files[1].filename" {
		var one *ValidationError
		if !errors.As(err, &one) || one.Field != "files[1].filename" {
			t.Errorf("Validate = %v, want files[1].filename", err)
		}
	}

	// A required time and a required nested event.
	err = ValidateFields(&AgentInTheLoopResponseEvent{})
	if got := problemFields(err); !slices.Equal(got, []string{"stop_event"}) {
		t.Errorf("AgentInTheLoopResponseEvent: %q", got)
	}
	err = ValidateFields(&CronStartEvent{})
	if got := problemFields(err); !slices.Equal(got, []string{"scheduled_for"}) {
		t.Errorf("CronStartEvent: %q", got)
	}
	// A zero value that is written as the default is valid; a set value
	// outside the literal set is not.
	if err := ValidateFields(&LanguageEvent{}); err != nil {
		t.Errorf("LanguageEvent{}: %v", err)
	}
	if got := problemFields(ValidateFields(&LanguageEvent{LanguageShortName: "es"})); !slices.Equal(got, []string{"language_short_name"}) {
		t.Errorf("LanguageEvent{es}: %q", got)
	}
	if err := Validate(nil); err == nil {
		t.Error("Validate(nil) = nil")
	}
}

func problemFields(err error) []string {
	var out []string
	for _, x := range errs(err) {
		var ve *ValidationError
		if errors.As(x, &ve) {
			out = append(out, ve.Field)
		}
	}
	return out
}

func TestWithDefaultErrors(t *testing.T) {
	type regBadDefault struct {
		ControlEvent
		N int `json:"n"`
	}
	if err := Register[regBadDefault](WithDefault("m", "1")); err == nil || !strings.Contains(err.Error(), "no such field") {
		t.Errorf("unknown field: %v", err)
	}
	type regBadDefault2 struct {
		ControlEvent
		N int `json:"n"`
	}
	if err := Register[regBadDefault2](WithDefault("n", `"x"`)); err == nil || !strings.Contains(err.Error(), "field n") {
		t.Errorf("wrong type: %v", err)
	}
	type regBadLiteral struct {
		ControlEvent
		N int `json:"n"`
	}
	if err := Register[regBadLiteral](WithLiteral("n", "x")); err == nil || !strings.Contains(err.Error(), "not a string") {
		t.Errorf("literal on an int: %v", err)
	}
}

// regApproval is a user-defined request type under a library one.
type regApproval struct {
	HumanInTheLoopInputRequestEvent
	Tool string `json:"tool"`
}

func init() { MustRegister[regApproval]() }

func TestWithDefaultInherited(t *testing.T) {
	// A user-defined request type inherits the literal and the reply of
	// its registered parent.
	out := outputKeys(t, &regApproval{})
	topic, _ := out["topic"].(map[string]any)
	if out["hitl_type"] != "input" || topic["event_name"] != "HumanInTheLoopInputResponseEvent" || topic["event_type"] != "control_event" {
		t.Errorf("inherited defaults: %v", out)
	}
	// A set topic keeps its values and gets the reply filled in.
	e := &regApproval{}
	e.Topic = &Topic{AgentID: Str("a1"), EventName: Str("Custom")}
	out = outputKeys(t, e)
	topic, _ = out["topic"].(map[string]any)
	if topic["agent_id"] != "a1" || topic["event_name"] != "Custom" || topic["event_type"] != "control_event" || topic["run_id"] != nil {
		t.Errorf("set topic: %v", topic)
	}
	ty, _ := TypeFor[regApproval]()
	if d, ok := ty.Default("hitl_type"); !ok || string(d) != `"input"` {
		t.Errorf("Default(hitl_type) = %s, %v", d, ok)
	}
	if _, ok := ty.Default("tool"); ok {
		t.Error("Default(tool) reported")
	}
}

func TestNewAppliesTypeDefaults(t *testing.T) {
	req := New[HumanInTheLoopConfirmationRequestEvent]()
	if req.HITLType != HITLConfirmation || req.Topic == nil || req.Topic.EventName == nil ||
		*req.Topic.EventName != "HumanInTheLoopConfirmationResponseEvent" || *req.Topic.EventType != "control_event" {
		t.Errorf("New = %+v", req)
	}
	if e := New[ToolApprovalRequestEvent](); !e.CiteSources || e.Arguments == nil || e.HITLType != HITLConfirmation {
		t.Errorf("New[ToolApprovalRequestEvent] = %+v", e)
	}
}

func TestChatMessageRole(t *testing.T) {
	// llama-index's ChatMessage defaults its role to "user" and accepts
	// only its roles.
	out := outputKeys(t, Stamp(&LimitChatHistoryEvent{LimitedHistory: []ChatMessage{{}}}))
	msg := out["limited_history"].([]any)[0].(map[string]any)
	if msg["role"] != "user" || msg["blocks"] == nil || msg["additional_kwargs"] == nil {
		t.Errorf("zero ChatMessage = %v", msg)
	}
	e := Stamp(&LimitChatHistoryEvent{LimitedHistory: []ChatMessage{Text(RoleUser, "a"), Text("robot", "b")}})
	if got := problemFields(Validate(e)); !slices.Equal(got, []string{"limited_history[1].role"}) {
		t.Errorf("Validate: %q", got)
	}
}
