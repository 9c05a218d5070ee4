package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// zeroRules are the reference's field rules of every library type, written
// from its class declarations: "name: type" per field, separated by ";".
// A rule that names another type includes that type's rules; "base" is
// event_id and created_at, "display" adds the two display texts.
//
//	type     str, int, float, bool, list, dict, object, locale (an object
//	         with the four locales), any, or literals "a"|"b"
//	?        nullable (X | None)
//	= json   the value the zero Go value must be written as
//	!        required with no value a Go zero value could stand for: the
//	         producer must set it, and Validate must say so
var zeroRules = map[string]string{
	"ControlEvent":           "base",
	"DisplayEvent":           "display",
	"ControlAndDisplayEvent": "display",
	"StartEvent":             "display",
	"StopEvent":              "display",
	"SemanticEvent":          "display",
	"ExceptionEvent":         `display; message: str; http_status_code: int = 500`,
	"UserMessageEvent": `display; locale: str = "de"; user: object!; messages: list = []; files: list?;
		requested_features: list = []`,
	"ChunkEvent": `display; content: str = ""; model_name: str = "aihub"`,

	"HumanInTheLoopRequestEvent":       `display; question: str; topic: object!; hitl_type: "input"|"confirmation"|"chat"!`,
	"HumanInTheLoopInputRequestEvent":  `display; question: str; topic: object = ` + replyTopic("HumanInTheLoopInputResponseEvent") + `; hitl_type: str = "input"`,
	"HumanInTheLoopResponseEvent":      `display; response: any!; request_event: object!`,
	"HumanInTheLoopInputResponseEvent": `display; response: str; request_event: object!`,
	"HumanInTheLoopConfirmationRequestEvent": `display; question: str; topic: object = ` +
		replyTopic("HumanInTheLoopConfirmationResponseEvent") + `; hitl_type: str = "confirmation"`,
	"HumanInTheLoopChatRequestEvent": `display; question: str; topic: object = ` +
		replyTopic("HumanInTheLoopChatResponseEvent") + `; hitl_type: str = "chat"`,
	"ToolApprovalRequestEvent": `HumanInTheLoopConfirmationRequestEvent; tool_call_id: str; name: str; arguments: dict = {};
		kind: str; cite_sources: bool`,
	"HumanInTheLoopConfirmationResponseEvent": `display; response: bool; request_event: object!`,
	"HumanInTheLoopChatResponseEvent":         `display; response: str; request_event: object!`,

	"LLMEvent": `display; input_messages: list?; output_messages: list?; invocation_parameters: dict?; chat_model_name: str?;
		provider: str?; system: str?; prompt_template: str?; prompt_template_variables: dict?; prompt_template_version: str?;
		token_count_prompt: int?; token_count_completion: int?; token_count_total: int?; tools: list?`,
	"LLMStopEvent":     "LLMEvent",
	"RefusalStopEvent": `LLMEvent; reason: "condensation_empty"|"input_too_large"|"out_of_scope"!`,
	"RetrieverEvent":   `display; nodes: list?`,
	"RerankerEvent": `display; input_nodes: list?; output_nodes: list?; query: str?; rerank_model_name: str?; top_n: int?;
		reranked: bool?`,
	"EmbeddingEvent":                 `display; text: str?; embedding_model_name: str?; embeddings: list?`,
	"ToolEvent":                      `display; tool_call_id: str?; name: str?; description: str?; json_schema: dict?; parameters: dict?`,
	"ChainEvent":                     `display; metadata: dict?`,
	"AgentEvent":                     "display",
	"GuardEvent":                     "display",
	"GuardAcceptEvent":               "display; reason: str",
	"AgentSuitabilityAcceptEvent":    "GuardAcceptEvent",
	"ContextSufficientAcceptEvent":   "GuardAcceptEvent",
	"FewShotAcceptEvent":             "GuardAcceptEvent",
	"SensitiveInfoAcceptEvent":       "GuardAcceptEvent",
	"GuardRejectionEvent":            "display; reason: str",
	"AgentSuitabilityRejectEvent":    "GuardRejectionEvent",
	"ContextInsufficientRejectEvent": "GuardRejectionEvent",
	"ExpertRejectEvent":              "GuardRejectionEvent",
	"FewShotRejectEvent":             "GuardRejectionEvent",
	"SensitiveInfoRejectEvent":       "GuardRejectionEvent; cleaned_answer: str",

	"LanguageEvent": `base; language_short_name: "de"|"en"|"fr"|"it" = "en"`,
	"BotInTheLoopRequestEvent": `base; user: object!; question: str; channel_config: object!; topic: object = ` +
		replyTopic("BotInTheLoopResponseEvent"),
	"BotInTheLoopResponseEvent": `base; response: str; request_event: object!; responder: object!`,
	"RecallMemoryEvent":         `base; query: str; org_memory_namespaces: list = []; tool_call_id: str?`,
	"MemoryRecalledEvent":       `base; user_block: list = []; organization_block: list = []; tool_call_id: str?`,
	"SearchKnowledgeEvent":      `base; references: list = []; query: str = ""; cite_sources: bool; tool_call_id: str?`,

	"RAGStartEvent": `display; locale: str = "de"; user: object?; messages: list = []; files: list?; selected_namespaces: list;
		additional_filters: list?; org_memory_namespaces: list = []`,
	"CronStartEvent":      `display; locale: str = "de"; user: object?; scheduled_for: str!`,
	"ScheduledStartEvent": `display; locale: str = "de"; user: object?; scheduled_for: str!`,
	"StoreUserMemoryRequestedEvent": `display; locale: str = "de"; user: object!; messages: list; origin_thread_id: str;
		origin_display_id: str; origin_run_id: str; origin_agent_class: str; origin_agent_id: str;
		origin_agent_name: locale!; origin_agent_description: locale!; origin_memory_llm: str?`,

	"RAGStopEvent":           "display",
	"GroundedRAGStopEvent":   "display",
	"UngroundedRAGStopEvent": "display; reason: str",
	"RAGSuccessStopEvent":    "display",
	"RAGFailureStopEvent":    `display; reason: "context_insufficient"|"expert_declined"|"expert_errored"|"few_shot_fallback"!`,

	"ThoughtEvent":           "display; reasoning_content: str?",
	"ConversationTitleEvent": "display; title: str",
	"FollowUpQuestionsEvent": "display; questions: list",
	"CostEvent":              "display",
	"LLMCostEvent": `display; prompt_token_count: int; completion_token_count: int; embedding_token_count: int;
		prompt_tokens_costs: float; completion_tokens_costs: float; embedding_tokens_costs: float; llm_name: str`,
	"RouteOptions": "display; name: str; description: str; instructions: str; event: object!",
	"AgentInTheLoopRequestEvent": `display; start_event: object!; other_agent_topic: object!; share_thread_id: bool;
		share_display_id: bool; share_run_id: bool = false; timeout_seconds: float?`,

	"RouterEvent":                      "display; routes: list; selected_option: object!; reason: str",
	"LimitChatHistoryEvent":            "display; limited_history: list",
	"StandaloneQuestionCondenserEvent": "display; condensed_chat_message: object!",
	"AgentInTheLoopResponseEvent":      "display; stop_event: object!; request_event_id: str",
	"AgentInTheLoopExceptionEvent":     "display; exception_event: object!; request_event_id: str",

	"BaseRetrieveMemoryEvent":         "display; memories: list = []; relations: list",
	"RetrieveUserMemoryEvent":         "BaseRetrieveMemoryEvent",
	"RetrieveOrganizationMemoryEvent": "BaseRetrieveMemoryEvent",
	"BaseStoreMemoryEvent": `display; added_memories: list; updated_memories: list; deleted_memories: list;
		added_relations: list; deleted_relations: list`,
	"StoreUserMemoryEvent":                    "BaseStoreMemoryEvent",
	"StoreOrganizationMemoryEvent":            "BaseStoreMemoryEvent",
	"AddMemoryToChatHistoryEvent":             "display; extended_history: list",
	"AddUserMemoryToChatHistoryEvent":         "AddMemoryToChatHistoryEvent",
	"AddOrganizationMemoryToChatHistoryEvent": "AddMemoryToChatHistoryEvent",
	"MemoryStorageRequestedEvent":             "display; start_event: object!; target_agent_class: str; target_agent_id: str",
	"ComposeContextEvent":                     "display; history: list; blocks: list = []",
	"ContextComposedEvent":                    "display; history: list",
	"KnowledgeSearchedEvent":                  "display; block: list = []; grounding_nodes: list = []; refused: list = []; tool_call_id: str?",

	"ClassDiscoveryRequestEvent": "base",
	"AgentClassDiscoveryResponseEvent": `base; agent_class: str; name: locale!; description: locale!; icon: str = "mage:robot";
		is_conversational: bool; is_schedulable: bool = false; supported_features: list = []; form: list;
		agent_config_specs: object!; start_events: list; stop_events: list; hitl_request_events: list;
		hitl_response_events: list; network_graph: object!; templates: list = []`,
	"ProcessClassDiscoveryResponseEvent": `base; process_class: str; name: locale!; description: locale!;
		icon: str = "mage:broadcast"; form: list; process_config_specs: object!; human_inputs: list; program_inputs: list;
		agent_inputs: list; templates: list = []`,
	"SourceUpdatedEvent": "base; path: str",
	"KnowledgeTeardownRequestedEvent": `base; teardown_type: "database"|"namespace"!; bucket_id: str; bucket_name: str;
		db_name: str; namespace_id: str?; namespace_name: str?; folder_name: str?`,

	"ProcessEvent":          "base",
	"WorkEvent":             "display; in_response_to: str?",
	"ProcessStartEvent":     "WorkEvent; process_config: dict?",
	"ProcessWorkEvent":      "ProcessStartEvent; process_stop_event: object!",
	"ProcessStopEvent":      "WorkEvent; process_class: str?; process_walkthrough_id: str?",
	"ProcessExceptionEvent": "WorkEvent; message: str; http_status_code: int = 500",
	"AgentWorkEvent":        "WorkEvent; submitted_by: object!; agent_stop_event: object!",
	"HumanWorkEvent":        "WorkEvent; submitted_by: object?",
	"ProgramWorkEvent":      "WorkEvent; submitted_by: object?",
	"WorkRequestEvent":      "base; process_id: str?; display_name: locale?; display_description: locale?",
	"AgentWorkRequestEvent": "WorkRequestEvent; agent_class: str?; agent_id: str?; start_event: object!",
	"HumanWorkRequestEvent": `WorkRequestEvent; endpoint: str?; method: str?; user_ids: list = []; user_emails: list = [];
		user_roles: list = []; notify: bool; forms: list`,
	"ProgramWorkRequestEvent": "WorkRequestEvent; endpoint: str?; method: str?",

	// This SDK's wait timeouts.
	"WaitTimeoutEvent":           "base; request_event_id: str; timeout_seconds: float",
	"HumanInTheLoopTimeoutEvent": "WaitTimeoutEvent",
	"AgentInTheLoopTimeoutEvent": "AgentInTheLoopExceptionEvent; timeout_seconds: float",
	"BotInTheLoopTimeoutEvent":   "WaitTimeoutEvent",

	// This SDK's compensation events.
	"StepCompensatedEvent":        "base; step: str; idempotency_key: str; attempts: int",
	"StepCompensationFailedEvent": "base; step: str; idempotency_key: str; message: str; attempts: int",
	"RunCompensatedEvent":         "base; compensated_steps: list = []; failed_steps: list = []",

	// This SDK's cancellation events.
	"RunCancelRequestedEvent": "base; reason: str; requested_by: str",
	"RunCancelledEvent":       "display; reason: str; requested_by: str; request_event_id: str",

	// This SDK's durable timers.
	"TimerRequestEvent": "base; fire_at: str?; delay_seconds: float; timer_name: str",
	"TimerFiredEvent":   "base; request_event_id: str; fire_at: str?; timer_name: str",
}

// replyTopic is the topic the reference's request factories create: a
// PartialAgentTopic naming the control event that answers.
func replyTopic(response string) string {
	return `{"agent_class": null, "agent_id": null, "run_id": null, "thread_id": null, "display_id": null,
		"event_type": "control_event", "event_name": "` + response + `", "event_id": null}`
}

type fieldRule struct {
	name     string
	typ      string   // str, int, ...; "" for literals
	literals []string // allowed values of a literal type
	nullable bool
	value    string // expected JSON of the zero value, "" for any
	mustSet  bool
}

// rulesOf expands a type's rules, its included rules first.
func rulesOf(t *testing.T, name string) []fieldRule {
	t.Helper()
	spec, ok := zeroRules[name]
	if !ok {
		t.Fatalf("no rules for %s", name)
	}
	var out []fieldRule
	for part := range strings.SplitSeq(spec, ";") {
		part = strings.TrimSpace(part)
		key, rest, isField := strings.Cut(part, ":")
		if !isField {
			switch part {
			case "base", "display":
				out = append(out, fieldRule{name: "event_id", typ: "str"}, fieldRule{name: "created_at", typ: "int"})
				if part == "display" {
					out = append(out, fieldRule{name: "display_name", typ: "locale"}, fieldRule{name: "display_description", typ: "locale"})
				}
			default:
				out = append(out, rulesOf(t, part)...)
			}
			continue
		}
		r := fieldRule{name: strings.TrimSpace(key)}
		rest = strings.TrimSpace(rest)
		if typ, value, ok := strings.Cut(rest, "="); ok {
			rest, r.value = strings.TrimSpace(typ), strings.TrimSpace(value)
		}
		rest, r.mustSet = strings.CutSuffix(rest, "!")
		rest, r.nullable = strings.CutSuffix(rest, "?")
		if strings.HasPrefix(rest, `"`) {
			for lit := range strings.SplitSeq(rest, "|") {
				r.literals = append(r.literals, strings.Trim(lit, `"`))
			}
		} else {
			r.typ = rest
		}
		out = append(out, r)
	}
	return out
}

// jsonKind is the type of a JSON value as Python's json.loads sees it.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch raw[0] {
	case '"':
		return "str"
	case '[':
		return "list"
	case '{':
		return "object"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	if bytes.ContainsAny(raw, ".eE") || string(raw) == "NaN" || strings.HasSuffix(string(raw), "Infinity") {
		return "float"
	}
	return "int"
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	dx, dy := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	dx.UseNumber()
	dy.UseNumber()
	if err := dx.Decode(&x); err != nil {
		t.Fatalf("rule value %s: %v", a, err)
	}
	if err := dy.Decode(&y); err != nil {
		t.Fatalf("encoded value %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// TestZeroValues encodes the zero value of every library type, as a step
// builds it with a struct literal, and checks the JSON under the
// reference's rules: every field present with its JSON type, lists never
// null, defaults and literals written. Fields a producer must set are the
// ones Validate reports, no more, no fewer. A library type without rules
// fails the test.
func TestZeroValues(t *testing.T) {
	if len(library) == 0 {
		t.Fatal("no library types")
	}
	for _, ty := range library {
		t.Run(ty.Name, func(t *testing.T) {
			rules := rulesOf(t, ty.Name)
			e := newValue(ty.Go).Interface().(Event)
			data, err := Marshal(e)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			var got map[string]json.RawMessage
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, data)
			}
			if string(got[keyName]) != `"`+ty.Name+`"` {
				t.Errorf("_event_name = %s", got[keyName])
			}
			var parents []string
			if err := json.Unmarshal(got[keyParents], &parents); err != nil || len(parents) == 0 || parents[0] != ty.Name {
				t.Errorf("_parent_event_names = %s", got[keyParents])
			}
			want := map[string]bool{keyName: true, keyParents: true}
			var mustSet []string
			for _, r := range rules {
				want[r.name] = true
				raw, ok := got[r.name]
				if !ok {
					t.Errorf("%s: missing", r.name)
					continue
				}
				if r.mustSet {
					mustSet = append(mustSet, r.name)
					continue
				}
				k := jsonKind(raw)
				switch {
				case k == "null":
					if !r.nullable {
						t.Errorf("%s: null, but the reference does not accept null here", r.name)
					}
					continue
				case r.literals != nil:
					var s string
					if json.Unmarshal(raw, &s) != nil || !slices.Contains(r.literals, s) {
						t.Errorf("%s = %s, want one of %q", r.name, raw, r.literals)
					}
				case r.typ == "locale":
					var l map[string]*string
					if json.Unmarshal(raw, &l) != nil || len(l) != 4 || l["de"] == nil || l["en"] == nil || l["fr"] == nil || l["it"] == nil {
						t.Errorf("%s = %s, want the four locales, filled", r.name, raw)
					}
				case r.typ == "dict":
					if k != "object" {
						t.Errorf("%s = %s, want an object", r.name, raw)
					}
				case r.typ != "any" && k != r.typ:
					t.Errorf("%s = %s (%s), want %s", r.name, raw, k, r.typ)
				}
				if r.value != "" && !sameJSON(t, []byte(r.value), raw) {
					t.Errorf("%s = %s, want %s", r.name, raw, r.value)
				}
			}
			for k := range got {
				if !want[k] {
					t.Errorf("%s: not a field of %s in the reference", k, ty.Name)
				}
			}

			// The fields a producer must set are what strict validation
			// reports, each with the event's name.
			var reported []string
			err = ValidateFields(e)
			for _, x := range errs(err) {
				var ve *ValidationError
				if !errors.As(x, &ve) || ve.Event != ty.Name {
					t.Errorf("Validate: %v does not name the event", x)
					continue
				}
				reported = append(reported, ve.Field)
			}
			sort.Strings(reported)
			sort.Strings(mustSet)
			if !slices.Equal(reported, mustSet) {
				t.Errorf("Validate reports %q, the rules say the producer must set %q (%v)", reported, mustSet, err)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("Validate = %v, not ErrInvalid", err)
			}

			// The JSON reads back as the same type.
			back, err := Unmarshal(data)
			if err != nil || Name(back) != ty.Name || IsFallback(back) {
				t.Errorf("Unmarshal: %v, %v", back, err)
			}
		})
	}
}

// errs lists the problems of a Validate error.
func errs(err error) []error {
	if err == nil {
		return nil
	}
	if m, ok := err.(interface{ Unwrap() []error }); ok {
		return m.Unwrap()
	}
	return []error{err}
}
