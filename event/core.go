package event

import "encoding/json"

// The category bases.

// ControlEvent is the base of events that drive a run; they travel over
// JetStream.
type ControlEvent struct{ Base }

// DisplayEvent is the base of events shown to the user; they travel over
// NATS Core and carry display texts, filled with the type's defaults.
type DisplayEvent struct {
	Base
	DisplayName        *LocaleString `json:"display_name"`
	DisplayDescription *LocaleString `json:"display_description"`
}

// ControlAndDisplayEvent is both: its parents are ControlEvent and
// DisplayEvent, and it is published on both subjects.
type ControlAndDisplayEvent struct{ DisplayEvent }

// Lifecycle.

// StartEvent starts a run.
type StartEvent struct{ ControlAndDisplayEvent }

// StopEvent ends a run.
type StopEvent struct{ ControlAndDisplayEvent }

// SemanticEvent is the base of the tracing events; it has no fields.
type SemanticEvent struct{ ControlAndDisplayEvent }

// ExceptionEvent ends a run with an error.
type ExceptionEvent struct {
	SemanticEvent
	Message        string `json:"message" event:"required"`
	HTTPStatusCode int    `json:"http_status_code" event:"default=500"`
}

// UserMessageEvent is a user's chat message, the usual start of a
// conversational run.
type UserMessageEvent struct {
	StartEvent
	Locale            string             `json:"locale" event:"default=de"`
	User              *UserIdentity      `json:"user" event:"required"`
	Messages          []ChatMessage      `json:"messages" event:"default=[]"`
	Files             []UserUploadedFile `json:"files"`
	RequestedFeatures []ChatFeature      `json:"requested_features" event:"default=[]"`
}

// ChunkEvent is a streamed piece of an answer.
type ChunkEvent struct {
	DisplayEvent
	Content   string `json:"content" event:"default=\"\""`
	ModelName string `json:"model_name" event:"default=aihub"`
}

// Human in the loop.

// HITL types of HumanInTheLoopRequestEvent.HITLType.
const (
	HITLInput        = "input"
	HITLConfirmation = "confirmation"
	HITLChat         = "chat"
)

// HumanInTheLoopRequestEvent asks a human for input; the run pauses until
// the matching response arrives on Topic.
type HumanInTheLoopRequestEvent struct {
	ControlAndDisplayEvent
	Question string `json:"question" event:"required"`
	Topic    *Topic `json:"topic" event:"required"`
	HITLType string `json:"hitl_type" event:"required,oneof=input|confirmation|chat"`
}

// HumanInTheLoopResponseEvent is a human's answer. Response is a string or
// a boolean, kept as raw JSON; RequestEvent is the request answered.
type HumanInTheLoopResponseEvent struct {
	ControlAndDisplayEvent
	Response     json.RawMessage `json:"response" event:"required"`
	RequestEvent Event           `json:"request_event" event:"required"`
}

// HumanInTheLoopInputRequestEvent asks a human for free text.
type HumanInTheLoopInputRequestEvent struct {
	HumanInTheLoopRequestEvent
}

// HumanInTheLoopInputResponseEvent carries the text a human entered.
type HumanInTheLoopInputResponseEvent struct {
	ControlAndDisplayEvent
	Response     string                           `json:"response" event:"required"`
	RequestEvent *HumanInTheLoopInputRequestEvent `json:"request_event" event:"required"`
}

func registerCore() {
	MustRegister[ControlEvent]()
	MustRegister[DisplayEvent]()
	MustRegister[ControlAndDisplayEvent](WithParents("ControlEvent"))
	MustRegister[StartEvent]()
	MustRegister[StopEvent]()
	MustRegister[SemanticEvent]()
	MustRegister[ExceptionEvent]()
	MustRegister[UserMessageEvent]()
	MustRegister[ChunkEvent]()
	MustRegister[HumanInTheLoopRequestEvent]()
	MustRegister[HumanInTheLoopResponseEvent]()
	MustRegister[HumanInTheLoopInputRequestEvent](WithLiteral("hitl_type", HITLInput),
		WithReply("HumanInTheLoopInputResponseEvent"))
	MustRegister[HumanInTheLoopInputResponseEvent](WithParents(
		"HumanInTheLoopResponseEvent[HumanInTheLoopInputRequestEvent]", "HumanInTheLoopResponseEvent"))
}

// ResponseText returns Response when it is a JSON string.
func (e *HumanInTheLoopResponseEvent) ResponseText() (string, bool) {
	var s string
	if err := UnmarshalValue(e.Response, &s); err != nil || len(e.Response) == 0 || e.Response[0] != '"' {
		return "", false
	}
	return s, true
}

// ResponseBool returns Response when it is a JSON boolean.
func (e *HumanInTheLoopResponseEvent) ResponseBool() (bool, bool) {
	switch string(e.Response) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}
