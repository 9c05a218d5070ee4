package event

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const cad = "ControlAndDisplayEvent"

var (
	cadChain      = []string{cad, "ControlEvent", "DisplayEvent"}
	semanticChain = append([]string{"SemanticEvent"}, cadChain...)
)

func chain(names ...any) []string {
	var out []string
	for _, n := range names {
		switch x := n.(type) {
		case string:
			out = append(out, x)
		case []string:
			out = append(out, x...)
		}
	}
	return out
}

// referenceParents is the reference's _parent_event_names of every core
// type, self first; order after the first
// element is not significant.
var referenceParents = map[string][]string{
	"ControlEvent":              {"ControlEvent"},
	"DisplayEvent":              {"DisplayEvent"},
	cad:                         chain(cadChain),
	"LanguageEvent":             {"LanguageEvent", "ControlEvent"},
	"BotInTheLoopRequestEvent":  {"BotInTheLoopRequestEvent", "ControlEvent"},
	"BotInTheLoopResponseEvent": {"BotInTheLoopResponseEvent", "ControlEvent"},
	"RecallMemoryEvent":         {"RecallMemoryEvent", "ControlEvent"},
	"MemoryRecalledEvent":       {"MemoryRecalledEvent", "ControlEvent"},
	"SearchKnowledgeEvent":      {"SearchKnowledgeEvent", "ControlEvent"},

	"StartEvent":                    chain("StartEvent", cadChain),
	"UserMessageEvent":              chain("UserMessageEvent", "StartEvent", cadChain),
	"RAGStartEvent":                 chain("RAGStartEvent", "StartEvent", cadChain),
	"CronStartEvent":                chain("CronStartEvent", "StartEvent", cadChain),
	"ScheduledStartEvent":           chain("ScheduledStartEvent", "StartEvent", cadChain),
	"StoreUserMemoryRequestedEvent": chain("StoreUserMemoryRequestedEvent", "StartEvent", cadChain),

	"StopEvent":              chain("StopEvent", cadChain),
	"RAGStopEvent":           chain("RAGStopEvent", "StopEvent", cadChain),
	"GroundedRAGStopEvent":   chain("GroundedRAGStopEvent", "RAGStopEvent", "StopEvent", cadChain),
	"UngroundedRAGStopEvent": chain("UngroundedRAGStopEvent", "RAGStopEvent", "StopEvent", cadChain),
	"RAGSuccessStopEvent":    chain("RAGSuccessStopEvent", "StopEvent", cadChain),
	"RAGFailureStopEvent":    chain("RAGFailureStopEvent", "StopEvent", cadChain),
	"LLMStopEvent":           chain("LLMStopEvent", "LLMEvent", semanticChain[:1], "StopEvent", cadChain),
	"RefusalStopEvent":       chain("RefusalStopEvent", "LLMStopEvent", "LLMEvent", "SemanticEvent", "StopEvent", cadChain),

	"SemanticEvent":  chain(semanticChain),
	"ExceptionEvent": chain("ExceptionEvent", semanticChain),
	"LLMEvent":       chain("LLMEvent", semanticChain),
	"RetrieverEvent": chain("RetrieverEvent", semanticChain),
	"RerankerEvent":  chain("RerankerEvent", semanticChain),
	"EmbeddingEvent": chain("EmbeddingEvent", semanticChain),
	"ToolEvent":      chain("ToolEvent", semanticChain),
	"ChainEvent":     chain("ChainEvent", semanticChain),
	"AgentEvent":     chain("AgentEvent", semanticChain),
	"GuardEvent":     chain("GuardEvent", semanticChain),

	"GuardAcceptEvent":               chain("GuardAcceptEvent", "GuardEvent", semanticChain),
	"AgentSuitabilityAcceptEvent":    chain("AgentSuitabilityAcceptEvent", "GuardAcceptEvent", "GuardEvent", semanticChain),
	"ContextSufficientAcceptEvent":   chain("ContextSufficientAcceptEvent", "GuardAcceptEvent", "GuardEvent", semanticChain),
	"FewShotAcceptEvent":             chain("FewShotAcceptEvent", "GuardAcceptEvent", "GuardEvent", semanticChain),
	"SensitiveInfoAcceptEvent":       chain("SensitiveInfoAcceptEvent", "GuardAcceptEvent", "GuardEvent", semanticChain),
	"GuardRejectionEvent":            chain("GuardRejectionEvent", "GuardEvent", semanticChain),
	"AgentSuitabilityRejectEvent":    chain("AgentSuitabilityRejectEvent", "GuardRejectionEvent", "GuardEvent", semanticChain),
	"ContextInsufficientRejectEvent": chain("ContextInsufficientRejectEvent", "GuardRejectionEvent", "GuardEvent", semanticChain),
	"ExpertRejectEvent":              chain("ExpertRejectEvent", "GuardRejectionEvent", "GuardEvent", semanticChain),
	"FewShotRejectEvent":             chain("FewShotRejectEvent", "GuardRejectionEvent", "GuardEvent", semanticChain),
	"SensitiveInfoRejectEvent":       chain("SensitiveInfoRejectEvent", "GuardRejectionEvent", "GuardEvent", semanticChain),

	"RouterEvent":                      chain("RouterEvent", cadChain),
	"LimitChatHistoryEvent":            chain("LimitChatHistoryEvent", cadChain),
	"StandaloneQuestionCondenserEvent": chain("StandaloneQuestionCondenserEvent", cadChain),

	"HumanInTheLoopRequestEvent":             chain("HumanInTheLoopRequestEvent", cadChain),
	"HumanInTheLoopInputRequestEvent":        chain("HumanInTheLoopInputRequestEvent", "HumanInTheLoopRequestEvent", cadChain),
	"HumanInTheLoopConfirmationRequestEvent": chain("HumanInTheLoopConfirmationRequestEvent", "HumanInTheLoopRequestEvent", cadChain),
	"HumanInTheLoopChatRequestEvent":         chain("HumanInTheLoopChatRequestEvent", "HumanInTheLoopRequestEvent", cadChain),
	"ToolApprovalRequestEvent":               chain("ToolApprovalRequestEvent", "HumanInTheLoopConfirmationRequestEvent", "HumanInTheLoopRequestEvent", cadChain),
	"HumanInTheLoopResponseEvent":            chain("HumanInTheLoopResponseEvent", cadChain),
	"HumanInTheLoopInputResponseEvent": chain("HumanInTheLoopInputResponseEvent",
		"HumanInTheLoopResponseEvent[HumanInTheLoopInputRequestEvent]", "HumanInTheLoopResponseEvent", cadChain),
	"HumanInTheLoopConfirmationResponseEvent": chain("HumanInTheLoopConfirmationResponseEvent",
		"HumanInTheLoopResponseEvent[HumanInTheLoopConfirmationRequestEvent]", "HumanInTheLoopResponseEvent", cadChain),
	"HumanInTheLoopChatResponseEvent": chain("HumanInTheLoopChatResponseEvent",
		"HumanInTheLoopResponseEvent[HumanInTheLoopChatRequestEvent]", "HumanInTheLoopResponseEvent", cadChain),
	"AgentInTheLoopRequestEvent":   {"AgentInTheLoopRequestEvent", "ControlEvent", "DisplayEvent"},
	"AgentInTheLoopResponseEvent":  chain("AgentInTheLoopResponseEvent", cadChain),
	"AgentInTheLoopExceptionEvent": chain("AgentInTheLoopExceptionEvent", cadChain),

	"BaseRetrieveMemoryEvent":                 chain("BaseRetrieveMemoryEvent", cadChain),
	"RetrieveUserMemoryEvent":                 chain("RetrieveUserMemoryEvent", "BaseRetrieveMemoryEvent", cadChain),
	"RetrieveOrganizationMemoryEvent":         chain("RetrieveOrganizationMemoryEvent", "BaseRetrieveMemoryEvent", cadChain),
	"BaseStoreMemoryEvent":                    chain("BaseStoreMemoryEvent", cadChain),
	"StoreUserMemoryEvent":                    chain("StoreUserMemoryEvent", "BaseStoreMemoryEvent", cadChain),
	"StoreOrganizationMemoryEvent":            chain("StoreOrganizationMemoryEvent", "BaseStoreMemoryEvent", cadChain),
	"AddMemoryToChatHistoryEvent":             chain("AddMemoryToChatHistoryEvent", cadChain),
	"AddUserMemoryToChatHistoryEvent":         chain("AddUserMemoryToChatHistoryEvent", "AddMemoryToChatHistoryEvent", cadChain),
	"AddOrganizationMemoryToChatHistoryEvent": chain("AddOrganizationMemoryToChatHistoryEvent", "AddMemoryToChatHistoryEvent", cadChain),
	"MemoryStorageRequestedEvent":             chain("MemoryStorageRequestedEvent", cadChain),
	"ComposeContextEvent":                     chain("ComposeContextEvent", cadChain),
	"ContextComposedEvent":                    chain("ContextComposedEvent", cadChain),
	"KnowledgeSearchedEvent":                  chain("KnowledgeSearchedEvent", cadChain),

	"ChunkEvent":             {"ChunkEvent", "DisplayEvent"},
	"ThoughtEvent":           {"ThoughtEvent", "DisplayEvent"},
	"ConversationTitleEvent": {"ConversationTitleEvent", "DisplayEvent"},
	"FollowUpQuestionsEvent": {"FollowUpQuestionsEvent", "DisplayEvent"},
	"CostEvent":              {"CostEvent", "DisplayEvent"},
	"LLMCostEvent":           {"LLMCostEvent", "CostEvent", "DisplayEvent"},
	"RouteOptions":           {"RouteOptions", "DisplayEvent"},

	"ClassDiscoveryRequestEvent":         {"ClassDiscoveryRequestEvent"},
	"AgentClassDiscoveryResponseEvent":   {"AgentClassDiscoveryResponseEvent"},
	"ProcessClassDiscoveryResponseEvent": {"ProcessClassDiscoveryResponseEvent"},
	"SourceUpdatedEvent":                 {"SourceUpdatedEvent"},
	"KnowledgeTeardownRequestedEvent":    {"KnowledgeTeardownRequestedEvent"},

	"ProcessEvent":            {"ProcessEvent"},
	"WorkEvent":               {"WorkEvent", "ProcessEvent"},
	"ProcessStartEvent":       {"ProcessStartEvent", "WorkEvent", "ProcessEvent"},
	"ProcessWorkEvent":        {"ProcessWorkEvent", "ProcessStartEvent", "WorkEvent", "ProcessEvent"},
	"ProcessStopEvent":        {"ProcessStopEvent", "WorkEvent", "ProcessEvent"},
	"ProcessExceptionEvent":   {"ProcessExceptionEvent", "WorkEvent", "ProcessEvent"},
	"AgentWorkEvent":          {"AgentWorkEvent", "WorkEvent", "ProcessEvent"},
	"HumanWorkEvent":          {"HumanWorkEvent", "WorkEvent", "ProcessEvent"},
	"ProgramWorkEvent":        {"ProgramWorkEvent", "WorkEvent", "ProcessEvent"},
	"WorkRequestEvent":        {"WorkRequestEvent", "ProcessEvent"},
	"AgentWorkRequestEvent":   {"AgentWorkRequestEvent", "WorkRequestEvent", "ProcessEvent"},
	"HumanWorkRequestEvent":   {"HumanWorkRequestEvent", "WorkRequestEvent", "ProcessEvent"},
	"ProgramWorkRequestEvent": {"ProgramWorkRequestEvent", "WorkRequestEvent", "ProcessEvent"},

	// This SDK's wait timeouts.
	"WaitTimeoutEvent":           {"WaitTimeoutEvent", "ControlEvent"},
	"HumanInTheLoopTimeoutEvent": {"HumanInTheLoopTimeoutEvent", "WaitTimeoutEvent", "ControlEvent"},
	"AgentInTheLoopTimeoutEvent": {"AgentInTheLoopTimeoutEvent", "AgentInTheLoopExceptionEvent", "ControlAndDisplayEvent", "WaitTimeoutEvent", "ControlEvent", "DisplayEvent"},
	"BotInTheLoopTimeoutEvent":   {"BotInTheLoopTimeoutEvent", "WaitTimeoutEvent", "ControlEvent"},

	// This SDK's compensation events.
	"StepCompensatedEvent":        {"StepCompensatedEvent", "ControlEvent"},
	"StepCompensationFailedEvent": {"StepCompensationFailedEvent", "ControlEvent"},
	"RunCompensatedEvent":         {"RunCompensatedEvent", "ControlEvent"},

	// This SDK's cancellation events.
	"RunCancelRequestedEvent": {"RunCancelRequestedEvent", "ControlEvent"},
	"RunCancelledEvent":       chain("RunCancelledEvent", "StopEvent", cadChain),

	// This SDK's durable timers.
	"TimerRequestEvent": {"TimerRequestEvent", "ControlEvent"},
	"TimerFiredEvent":   {"TimerFiredEvent", "ControlEvent"},
}

var testOnlyTypes = map[string]bool{"TestStartEvent": true, "Level1Event": true, "Level2Event": true, "Level3Event": true}

// TestParentChains checks every core type's parent list against the
// reference's: the type itself first, the same set of names.
func TestParentChains(t *testing.T) {
	for _, typ := range Types() {
		if testOnlyTypes[typ.Name] || strings.HasPrefix(typ.Name, "reg") || typ.Go.PkgPath() != reflect.TypeFor[Base]().PkgPath() {
			continue
		}
		t.Run(typ.Name, func(t *testing.T) {
			want, ok := referenceParents[typ.Name]
			if !ok {
				t.Fatalf("no reference parent list for %s", typ.Name)
			}
			if typ.Parents[0] != typ.Name {
				t.Errorf("first parent = %q, want the type itself", typ.Parents[0])
			}
			got, w := slices.Sorted(slices.Values(typ.Parents)), slices.Sorted(slices.Values(want))
			if !slices.Equal(got, w) {
				t.Errorf("parents = %q, want the set %q", typ.Parents, want)
			}
			if slices.Contains(typ.Parents, "BaseEvent") {
				t.Error("BaseEvent listed")
			}
		})
	}
	for name := range referenceParents {
		if _, ok := Lookup(name); !ok {
			t.Errorf("%s is not registered", name)
		}
	}
}

// TestParentOrder checks this SDK's order: deepest first,
// ties in byte order, so ControlEvent precedes DisplayEvent.
func TestParentOrder(t *testing.T) {
	rows := map[string][]string{
		"ChunkEvent":                       {"ChunkEvent", "DisplayEvent"},
		"LanguageEvent":                    {"LanguageEvent", "ControlEvent"},
		"StartEvent":                       {"StartEvent", cad, "ControlEvent", "DisplayEvent"},
		"UserMessageEvent":                 {"UserMessageEvent", "StartEvent", cad, "ControlEvent", "DisplayEvent"},
		"RAGFailureStopEvent":              {"RAGFailureStopEvent", "StopEvent", cad, "ControlEvent", "DisplayEvent"},
		"ExceptionEvent":                   {"ExceptionEvent", "SemanticEvent", cad, "ControlEvent", "DisplayEvent"},
		"LLMStopEvent":                     {"LLMStopEvent", "LLMEvent", "SemanticEvent", "StopEvent", cad, "ControlEvent", "DisplayEvent"},
		"RefusalStopEvent":                 {"RefusalStopEvent", "LLMStopEvent", "LLMEvent", "SemanticEvent", "StopEvent", cad, "ControlEvent", "DisplayEvent"},
		"SensitiveInfoRejectEvent":         {"SensitiveInfoRejectEvent", "GuardRejectionEvent", "GuardEvent", "SemanticEvent", cad, "ControlEvent", "DisplayEvent"},
		"HumanInTheLoopInputResponseEvent": {"HumanInTheLoopInputResponseEvent", "HumanInTheLoopResponseEvent[HumanInTheLoopInputRequestEvent]", "HumanInTheLoopResponseEvent", cad, "ControlEvent", "DisplayEvent"},
		"AgentInTheLoopRequestEvent":       {"AgentInTheLoopRequestEvent", "ControlEvent", "DisplayEvent"},
		"LLMCostEvent":                     {"LLMCostEvent", "CostEvent", "DisplayEvent"},
		"ProcessStartEvent":                {"ProcessStartEvent", "WorkEvent", "ProcessEvent"},
		"WorkRequestEvent":                 {"WorkRequestEvent", "ProcessEvent"},
		"SourceUpdatedEvent":               {"SourceUpdatedEvent"},
	}
	for name, want := range rows {
		typ, ok := Lookup(name)
		if !ok {
			t.Fatalf("%s not registered", name)
		}
		if !slices.Equal(typ.Parents, want) {
			t.Errorf("%s: parents = %q, want %q", name, typ.Parents, want)
		}
	}
}

type regDup struct{ ControlEvent }

type regOrphanParent struct{ ControlEvent }

type regChild struct{ regOrphanParent }

type regGeneric struct{ HumanInTheLoopResponseEvent }

type regHidden struct{ Text string }

type regWithHidden struct {
	ControlEvent
	regHidden
}

type regBadField struct {
	ControlEvent
	C chan int `json:"c"`
}

type regGenericChild struct{ regGeneric }

func init() {
	MustRegister[regDup]()
	MustRegister[regGeneric](WithParents("HumanInTheLoopResponseEvent[X]"))
	MustRegister[regGenericChild]()
}

func TestRegisterErrors(t *testing.T) {
	if err := Register[regDup](WithName("ChunkEvent")); !errors.Is(err, ErrDuplicate) {
		t.Errorf("duplicate wire name: err = %v, want ErrDuplicate", err)
	}
	if err := Register[regDup](WithName("regDupAgain")); !errors.Is(err, ErrDuplicate) {
		t.Errorf("duplicate Go type: err = %v, want ErrDuplicate", err)
	}
	if err := Register[regChild](); err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Errorf("unregistered embedded parent: err = %v", err)
	}
	// Fields promoted from an unexported embedded struct are settable.
	if _, ok := TypeFor[regWithHidden](); !ok {
		if err := Register[regWithHidden](); err != nil {
			t.Fatal(err)
		}
	}
	h := decodeAs[regWithHidden](t, []byte(`{"_event_name":"regWithHidden","Text":"x"}`))
	if h.Text != "x" {
		t.Errorf("promoted field: %+v", h)
	}
	if err := Register[regBadField](); err == nil || !strings.Contains(err.Error(), "field c") {
		t.Errorf("unsupported field type: err = %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustRegister of a duplicate did not panic")
		}
	}()
	MustRegister[regDup](WithName("StopEvent"))
}

// An opaque generic name declared on a type is inherited, in place, by its
// subclasses.
func TestOpaqueParentInherited(t *testing.T) {
	typ, _ := TypeFor[regGenericChild]()
	want := []string{"regGenericChild", "regGeneric", "HumanInTheLoopResponseEvent[X]", "HumanInTheLoopResponseEvent", cad, "ControlEvent", "DisplayEvent"}
	if !slices.Equal(typ.Parents, want) {
		t.Errorf("parents = %q, want %q", typ.Parents, want)
	}
}

func TestLookups(t *testing.T) {
	typ, ok := TypeOf(&ChunkEvent{})
	if !ok || typ.Name != "ChunkEvent" || typ.Go != reflect.TypeFor[ChunkEvent]() {
		t.Fatalf("TypeOf(ChunkEvent) = %v, %v", typ, ok)
	}
	for _, rt := range []reflect.Type{reflect.TypeFor[ChunkEvent](), reflect.TypeFor[*ChunkEvent]()} {
		if x, ok := TypeByGo(rt); !ok || x != typ {
			t.Errorf("TypeByGo(%v) = %v", rt, x)
		}
	}
	if NameOf[UserMessageEvent]() != "UserMessageEvent" {
		t.Error("NameOf")
	}
	if _, ok := TypeByGo(reflect.TypeFor[int]()); ok {
		t.Error("TypeByGo(int) found")
	}
	if _, ok := TypeOf(&BaseEvent{}); ok {
		t.Error("BaseEvent is registered")
	}
	if Name(&BaseEvent{}) != "BaseEvent" || Name(&StopEvent{}) != "StopEvent" {
		t.Error("Name of non-decoded events")
	}
}

// TestEveryTypeRoundTrip encodes a zero value of every registered type and
// decodes it back exactly, with a stable second encoding.
func TestEveryTypeRoundTrip(t *testing.T) {
	for _, typ := range Types() {
		t.Run(typ.Name, func(t *testing.T) {
			e := Stamp(reflect.New(typ.Go).Interface().(Event))
			out := marshal(t, e)
			back, err := Unmarshal(out)
			if err != nil {
				t.Fatalf("Unmarshal: %v\n%s", err, out)
			}
			if reflect.TypeOf(back).Elem() != typ.Go || IsFallback(back) {
				t.Fatalf("decoded %T (fallback %v)", back, IsFallback(back))
			}
			if d := semDiff(t, out, marshal(t, back)); d != "" {
				t.Errorf("second encoding differs:\n%s", d)
			}
		})
	}
}

func TestHITLResponseValue(t *testing.T) {
	r := &HumanInTheLoopResponseEvent{Response: json.RawMessage(`"yes"`)}
	if s, ok := r.ResponseText(); !ok || s != "yes" {
		t.Errorf("ResponseText = %q, %v", s, ok)
	}
	if _, ok := r.ResponseBool(); ok {
		t.Error("a string read as a boolean")
	}
	r.Response = json.RawMessage(`true`)
	if b, ok := r.ResponseBool(); !ok || !b {
		t.Error("ResponseBool")
	}
}

// Every display and work event has default texts in the four locales.
func TestDisplayDefaults(t *testing.T) {
	for _, typ := range Types() {
		isDisplay := typ.IsA("DisplayEvent") && typ.plan.displayName >= 0
		name, desc, ok := typ.DisplayDefaults()
		switch {
		case typ.Name == "WorkRequestEvent" || typ.IsA("WorkRequestEvent"):
			if ok {
				t.Errorf("%s fills display texts; the reference does not", typ.Name)
			}
		case isDisplay || typ.IsA("WorkEvent"):
			if !ok || name.De == "" || name.En == "" || name.Fr == "" || name.It == "" || desc.En == "" {
				t.Errorf("%s: defaults %+v / %+v", typ.Name, name, desc)
			}
		default:
			if ok {
				t.Errorf("%s is not a display event but has default texts", typ.Name)
			}
		}
	}
}
