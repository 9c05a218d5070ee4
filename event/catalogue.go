package event

import (
	"encoding/json"
	"fmt"
	"time"
)

// Pure control events: no display fields.

// LanguageEvent sets the language of a run.
type LanguageEvent struct {
	ControlEvent
	LanguageShortName string `json:"language_short_name" event:"default=en,oneof=de|en|fr|it"`
}

// SlackConfig and TeamsConfig are the channel_config of a bot-in-the-loop
// request; the field is kept raw because its shape depends on the channel.

// BotInTheLoopRequestEvent asks a user on a bot channel (Slack, Teams).
type BotInTheLoopRequestEvent struct {
	ControlEvent
	User          *UserIdentity   `json:"user" event:"required"`
	Question      string          `json:"question" event:"required"`
	ChannelConfig json.RawMessage `json:"channel_config" event:"required"`
	Topic         *Topic          `json:"topic" event:"required"`
}

// BotInTheLoopResponderInfo identifies who answered on a bot channel.
type BotInTheLoopResponderInfo struct {
	UserID         string                     `json:"user_id" event:"required"`
	UserName       string                     `json:"user_name" event:"required"`
	AdditionalInfo map[string]json.RawMessage `json:"additional_info"`
	AADObjectID    *string                    `json:"aad_object_id"`
}

// BotInTheLoopResponseEvent is the answer from a bot channel.
type BotInTheLoopResponseEvent struct {
	ControlEvent
	Response     string                     `json:"response" event:"required"`
	RequestEvent *BotInTheLoopRequestEvent  `json:"request_event" event:"required"`
	Responder    *BotInTheLoopResponderInfo `json:"responder" event:"required"`
}

// RecallMemoryEvent asks for memories relevant to a query.
type RecallMemoryEvent struct {
	ControlEvent
	Query               string   `json:"query" event:"required"`
	OrgMemoryNamespaces []string `json:"org_memory_namespaces" event:"default=[]"`
	ToolCallID          *string  `json:"tool_call_id"`
}

// MemoryRecalledEvent carries recalled memories as chat messages.
type MemoryRecalledEvent struct {
	ControlEvent
	UserBlock         []ChatMessage `json:"user_block" event:"default=[]"`
	OrganizationBlock []ChatMessage `json:"organization_block" event:"default=[]"`
	ToolCallID        *string       `json:"tool_call_id"`
}

// SearchKnowledgeEvent asks for a knowledge search.
type SearchKnowledgeEvent struct {
	ControlEvent
	References  []KnowledgeReference `json:"references" event:"default=[]"`
	Query       string               `json:"query" event:"default=\"\""`
	CiteSources bool                 `json:"cite_sources" event:"default=true"`
	ToolCallID  *string              `json:"tool_call_id"`
}

// Start events.

// RAGStartEvent starts a retrieval-augmented run. The shapes of
// selected_namespaces and additional_filters are unconfirmed and kept raw.
type RAGStartEvent struct {
	StartEvent
	Locale              string             `json:"locale" event:"default=de"`
	User                *UserIdentity      `json:"user"`
	Messages            []ChatMessage      `json:"messages" event:"default=[]"`
	Files               []UserUploadedFile `json:"files"`
	SelectedNamespaces  []json.RawMessage  `json:"selected_namespaces" event:"required"`
	AdditionalFilters   []json.RawMessage  `json:"additional_filters"`
	OrgMemoryNamespaces []string           `json:"org_memory_namespaces" event:"default=[]"`
}

// CronStartEvent starts a scheduled run.
type CronStartEvent struct {
	StartEvent
	Locale       string        `json:"locale" event:"default=de"`
	User         *UserIdentity `json:"user"`
	ScheduledFor time.Time     `json:"scheduled_for" event:"required"`
}

// ScheduledStartEvent is the older name of CronStartEvent, registered so
// that persisted events of that name still decode exactly.
type ScheduledStartEvent struct {
	StartEvent
	Locale       string        `json:"locale" event:"default=de"`
	User         *UserIdentity `json:"user"`
	ScheduledFor time.Time     `json:"scheduled_for" event:"required"`
}

// StoreUserMemoryRequestedEvent starts a memory agent's run for a thread.
type StoreUserMemoryRequestedEvent struct {
	StartEvent
	Locale                 string        `json:"locale" event:"default=de"`
	User                   *UserIdentity `json:"user" event:"required"`
	Messages               []ChatMessage `json:"messages" event:"required"`
	OriginThreadID         string        `json:"origin_thread_id" event:"required"`
	OriginDisplayID        string        `json:"origin_display_id" event:"required"`
	OriginRunID            string        `json:"origin_run_id" event:"required"`
	OriginAgentClass       string        `json:"origin_agent_class" event:"required"`
	OriginAgentID          string        `json:"origin_agent_id" event:"required"`
	OriginAgentName        *LocaleString `json:"origin_agent_name" event:"required"`
	OriginAgentDescription *LocaleString `json:"origin_agent_description" event:"required"`
	OriginMemoryLLM        *string       `json:"origin_memory_llm"`
}

// Stop events.

// RAGStopEvent is the abstract marker of the older RAG stop pair.
type RAGStopEvent struct{ StopEvent }

// GroundedRAGStopEvent ends a RAG run with a grounded answer (older variant).
type GroundedRAGStopEvent struct{ RAGStopEvent }

// UngroundedRAGStopEvent ends a RAG run without grounding (older variant).
type UngroundedRAGStopEvent struct {
	RAGStopEvent
	Reason string `json:"reason" event:"required"`
}

// RAGSuccessStopEvent ends a RAG run with an answer.
type RAGSuccessStopEvent struct{ StopEvent }

// RAG failure reasons.
const (
	RAGFailureContextInsufficient = "context_insufficient"
	RAGFailureExpertDeclined      = "expert_declined"
	RAGFailureExpertErrored       = "expert_errored"
	RAGFailureFewShotFallback     = "few_shot_fallback"
)

// RAGFailureStopEvent ends a RAG run without a useful answer.
type RAGFailureStopEvent struct {
	StopEvent
	Reason string `json:"reason" event:"required,oneof=context_insufficient|expert_declined|expert_errored|few_shot_fallback"`
}

// Display events.

// ThoughtEvent shares reasoning content.
type ThoughtEvent struct {
	DisplayEvent
	ReasoningContent *string `json:"reasoning_content"`
}

// ConversationTitleEvent names a conversation.
type ConversationTitleEvent struct {
	DisplayEvent
	Title string `json:"title" event:"required"`
}

// FollowUpQuestionsEvent suggests the user's next questions.
type FollowUpQuestionsEvent struct {
	DisplayEvent
	Questions []string `json:"questions" event:"required"`
}

// CostEvent is the abstract base of cost reports.
type CostEvent struct{ DisplayEvent }

// LLMCosts are the token counts and costs of LLM calls, the reference's
// LLMCosts mixin (not an event type).
type LLMCosts struct {
	PromptTokenCount      int64   `json:"prompt_token_count" event:"required"`
	CompletionTokenCount  int64   `json:"completion_token_count" event:"required"`
	EmbeddingTokenCount   int64   `json:"embedding_token_count" event:"required"`
	PromptTokensCosts     float64 `json:"prompt_tokens_costs" event:"required"`
	CompletionTokensCosts float64 `json:"completion_tokens_costs" event:"required"`
	EmbeddingTokensCosts  float64 `json:"embedding_tokens_costs" event:"required"`
}

// LLMCostEvent reports the costs of a run's LLM calls.
type LLMCostEvent struct {
	CostEvent
	LLMCosts
	LLMName string `json:"llm_name" event:"required"`
}

// RouteOptions is one option of a RouterEvent; Event is the control event
// the route leads to.
type RouteOptions struct {
	DisplayEvent
	Name         string `json:"name" event:"required"`
	Description  string `json:"description" event:"required"`
	Instructions string `json:"instructions" event:"required"`
	Event        Event  `json:"event" event:"required"`
}

// AgentInTheLoopRequestEvent delegates a task to another agent. It is a
// DisplayEvent and a ControlEvent, but not a ControlAndDisplayEvent.
// StartEvent is the start event sent to the other agent.
type AgentInTheLoopRequestEvent struct {
	DisplayEvent
	StartEvent      Event    `json:"start_event" event:"required"`
	OtherAgentTopic *Topic   `json:"other_agent_topic" event:"required"`
	ShareThreadID   bool     `json:"share_thread_id" event:"default=true"`
	ShareDisplayID  bool     `json:"share_display_id" event:"default=true"`
	ShareRunID      bool     `json:"share_run_id" event:"default=false"`
	TimeoutSeconds  *float64 `json:"timeout_seconds"`
}

// Other ControlAndDisplayEvent subclasses.

// RouterEvent records a routing decision.
type RouterEvent struct {
	ControlAndDisplayEvent
	Routes         []*RouteOptions `json:"routes" event:"required"`
	SelectedOption *RouteOptions   `json:"selected_option" event:"required"`
	Reason         string          `json:"reason" event:"required"`
}

// LimitChatHistoryEvent carries a shortened chat history.
type LimitChatHistoryEvent struct {
	ControlAndDisplayEvent
	LimitedHistory []ChatMessage `json:"limited_history" event:"required"`
}

// StandaloneQuestionCondenserEvent carries the condensed question.
type StandaloneQuestionCondenserEvent struct {
	ControlAndDisplayEvent
	CondensedChatMessage *ChatMessage `json:"condensed_chat_message" event:"required"`
}

// CondensedQuestion is the text of the condensed message, "" when it has no
// blocks (historical payloads must stay readable).
func (e *StandaloneQuestionCondenserEvent) CondensedQuestion() string {
	if e.CondensedChatMessage == nil {
		return ""
	}
	return e.CondensedChatMessage.Content()
}

// HumanInTheLoopConfirmationRequestEvent asks a human for yes or no.
type HumanInTheLoopConfirmationRequestEvent struct {
	HumanInTheLoopRequestEvent
}

// HumanInTheLoopChatRequestEvent asks a human to answer in the chat.
type HumanInTheLoopChatRequestEvent struct {
	HumanInTheLoopRequestEvent
}

// ToolApprovalRequestEvent asks a human to approve a tool call before it
// runs; chat clients show it as a yes/no confirmation, answered by a
// HumanInTheLoopConfirmationResponseEvent.
type ToolApprovalRequestEvent struct {
	HumanInTheLoopConfirmationRequestEvent
	ToolCallID  string                     `json:"tool_call_id" event:"required"`
	Name        string                     `json:"name" event:"required"`
	Arguments   map[string]json.RawMessage `json:"arguments" event:"default={}"`
	Kind        string                     `json:"kind" event:"required"`
	CiteSources bool                       `json:"cite_sources" event:"default=true"`
}

// HumanInTheLoopConfirmationResponseEvent carries a human's yes or no.
type HumanInTheLoopConfirmationResponseEvent struct {
	ControlAndDisplayEvent
	Response     bool                                    `json:"response" event:"required"`
	RequestEvent *HumanInTheLoopConfirmationRequestEvent `json:"request_event" event:"required"`
}

// HumanInTheLoopChatResponseEvent carries a human's chat answer.
type HumanInTheLoopChatResponseEvent struct {
	ControlAndDisplayEvent
	Response     string                          `json:"response" event:"required"`
	RequestEvent *HumanInTheLoopChatRequestEvent `json:"request_event" event:"required"`
}

// AgentInTheLoopResponseEvent carries the stop event of a delegate.
type AgentInTheLoopResponseEvent struct {
	ControlAndDisplayEvent
	StopEvent      Event  `json:"stop_event" event:"required"`
	RequestEventID string `json:"request_event_id" event:"required"`
}

// AgentInTheLoopExceptionEvent carries the exception of a delegate.
type AgentInTheLoopExceptionEvent struct {
	ControlAndDisplayEvent
	ExceptionEvent Event  `json:"exception_event" event:"required"`
	RequestEventID string `json:"request_event_id" event:"required"`
}

// Memory family.

// MemoryMetadata describes where a memory comes from.
type MemoryMetadata struct {
	UserID          string  `json:"user_id" event:"alias=_user_id"`
	AgentID         string  `json:"agent_id" event:"alias=_agent_id"`
	ThreadID        string  `json:"thread_id" event:"alias=_thread_id"`
	DisplayID       string  `json:"display_id" event:"alias=_display_id"`
	RunID           string  `json:"run_id" event:"alias=_run_id"`
	Type            string  `json:"type"`
	TenantID        *string `json:"tenant_id"`
	TenantNamespace *string `json:"tenant_namespace"`
}

// Memory is one stored memory.
type Memory struct {
	ID        string         `json:"id"`
	OwnerID   string         `json:"owner_id" event:"alias=user_id"`
	Memory    string         `json:"memory"`
	Score     *float64       `json:"score"`
	CreatedAt string         `json:"created_at"`
	Metadata  MemoryMetadata `json:"metadata"`
}

// MemoryRelation is one relation of the memory graph.
type MemoryRelation struct {
	Source   string `json:"source"`
	Relation string `json:"relation"`
	Target   string `json:"target"`
}

// BaseRetrieveMemoryEvent carries retrieved memories. relations is
// required while memories has a default.
type BaseRetrieveMemoryEvent struct {
	ControlAndDisplayEvent
	Memories  []Memory         `json:"memories" event:"default=[]"`
	Relations []MemoryRelation `json:"relations" event:"required"`
}

// RetrieveUserMemoryEvent carries a user's memories.
type RetrieveUserMemoryEvent struct{ BaseRetrieveMemoryEvent }

// RetrieveOrganizationMemoryEvent carries an organization's memories.
type RetrieveOrganizationMemoryEvent struct{ BaseRetrieveMemoryEvent }

// BaseStoreMemoryEvent reports changes to stored memories.
type BaseStoreMemoryEvent struct {
	ControlAndDisplayEvent
	AddedMemories    []string         `json:"added_memories" event:"required"`
	UpdatedMemories  []string         `json:"updated_memories" event:"required"`
	DeletedMemories  []string         `json:"deleted_memories" event:"required"`
	AddedRelations   []MemoryRelation `json:"added_relations" event:"required"`
	DeletedRelations []MemoryRelation `json:"deleted_relations" event:"required"`
}

// StoreUserMemoryEvent reports changes to a user's memories.
type StoreUserMemoryEvent struct{ BaseStoreMemoryEvent }

// StoreOrganizationMemoryEvent reports changes to an organization's memories.
type StoreOrganizationMemoryEvent struct{ BaseStoreMemoryEvent }

// AddMemoryToChatHistoryEvent carries a chat history extended by memories.
type AddMemoryToChatHistoryEvent struct {
	ControlAndDisplayEvent
	ExtendedHistory []ChatMessage `json:"extended_history" event:"required"`
}

// AddUserMemoryToChatHistoryEvent extends the history with user memories.
type AddUserMemoryToChatHistoryEvent struct{ AddMemoryToChatHistoryEvent }

// AddOrganizationMemoryToChatHistoryEvent extends the history with
// organization memories.
type AddOrganizationMemoryToChatHistoryEvent struct{ AddMemoryToChatHistoryEvent }

// MemoryStorageRequestedEvent marks that a memory agent was asked to store
// a thread's memories.
type MemoryStorageRequestedEvent struct {
	ControlAndDisplayEvent
	StartEvent       *StoreUserMemoryRequestedEvent `json:"start_event" event:"required"`
	TargetAgentClass string                         `json:"target_agent_class" event:"required"`
	TargetAgentID    string                         `json:"target_agent_id" event:"required"`
}

// ComposeContextEvent carries a history and context blocks to compose.
// Blocks items that older producers wrote as strings are kept raw.
type ComposeContextEvent struct {
	ControlAndDisplayEvent
	History []ChatMessage     `json:"history" event:"required"`
	Blocks  []json.RawMessage `json:"blocks" event:"default=[]"`
}

// ContextComposedEvent carries the composed history.
type ContextComposedEvent struct {
	ControlAndDisplayEvent
	History []ChatMessage `json:"history" event:"required"`
}

// KnowledgeSearchedEvent answers a SearchKnowledgeEvent: Block holds
// system messages with what the collections the user may read hold for
// the query, GroundingNodes the sections Block quotes (a client lists them
// as sources) and Refused the referenced collections that were not
// searched. It is displayed so that a client numbers exactly the sources
// an answer can cite.
type KnowledgeSearchedEvent struct {
	ControlAndDisplayEvent
	Block          []ChatMessage        `json:"block" event:"default=[]"`
	GroundingNodes []IngestedNode       `json:"grounding_nodes" event:"default=[]"`
	Refused        []KnowledgeReference `json:"refused" event:"default=[]"`
	ToolCallID     *string              `json:"tool_call_id"`
}

// Direct BaseEvent subclasses: neither control nor display.

// ClassDiscoveryRequestEvent asks every agent and process class to describe itself.
type ClassDiscoveryRequestEvent struct{ Base }

// EventSpecs describes one event type in discovery.
type EventSpecs struct {
	EventName    string                     `json:"event_name"`
	EventSchema  map[string]json.RawMessage `json:"event_schema"`
	EventParents []string                   `json:"event_parents"`
}

// HumanInSpecs describes work a human can submit to a process: its display
// texts, the route and HTTP method it is posted with, whether it starts a
// walkthrough, its event specs and the FormKit form the human fills in.
type HumanInSpecs struct {
	Name           LocaleString      `json:"name"`
	Description    LocaleString      `json:"description"`
	Route          string            `json:"route"`
	Method         string            `json:"method"`
	IsProcessStart bool              `json:"is_process_start"`
	EventSpecs     EventSpecs        `json:"event_specs"`
	Form           []json.RawMessage `json:"form"`
}

// ProgramInSpecs describes work a program can submit to a process.
type ProgramInSpecs struct {
	Route          string     `json:"route"`
	Method         string     `json:"method"`
	IsProcessStart bool       `json:"is_process_start"`
	EventSpecs     EventSpecs `json:"event_specs"`
}

// AgentInSpecs describes work an agent's stop event brings to a process:
// the agent by class and id, and the work event the stop event becomes.
type AgentInSpecs struct {
	AgentClass     string     `json:"agent_class"`
	AgentID        string     `json:"agent_id"`
	IsProcessStart bool       `json:"is_process_start"`
	EventSpecs     EventSpecs `json:"event_specs"`
}

// ConfigSpecs describes an agent's configuration class.
type ConfigSpecs struct {
	ConfigClass  string                     `json:"config_class" event:"default=\"\""`
	ConfigSchema map[string]json.RawMessage `json:"config_schema" event:"default={}"`
}

// AgentClassDiscoveryResponseEvent describes an agent class.
type AgentClassDiscoveryResponseEvent struct {
	Base
	AgentClass         string            `json:"agent_class" event:"required"`
	Name               *LocaleString     `json:"name" event:"required"`
	Description        *LocaleString     `json:"description" event:"required"`
	Icon               string            `json:"icon" event:"default=mage:robot"`
	IsConversational   bool              `json:"is_conversational" event:"required"`
	IsSchedulable      bool              `json:"is_schedulable" event:"default=false"`
	SupportedFeatures  []ChatFeature     `json:"supported_features" event:"default=[]"`
	Form               []json.RawMessage `json:"form" event:"required"`
	AgentConfigSpecs   *ConfigSpecs      `json:"agent_config_specs" event:"required"`
	StartEvents        []EventSpecs      `json:"start_events" event:"required"`
	StopEvents         []EventSpecs      `json:"stop_events" event:"required"`
	HITLRequestEvents  []EventSpecs      `json:"hitl_request_events" event:"required"`
	HITLResponseEvents []EventSpecs      `json:"hitl_response_events" event:"required"`
	NetworkGraph       json.RawMessage   `json:"network_graph" event:"required"`
	Templates          []json.RawMessage `json:"templates" event:"default=[]"`
}

// ProcessClassDiscoveryResponseEvent describes a process class.
type ProcessClassDiscoveryResponseEvent struct {
	Base
	ProcessClass       string            `json:"process_class" event:"required"`
	Name               *LocaleString     `json:"name" event:"required"`
	Description        *LocaleString     `json:"description" event:"required"`
	Icon               string            `json:"icon" event:"default=mage:broadcast"`
	Form               []json.RawMessage `json:"form" event:"required"`
	ProcessConfigSpecs *ConfigSpecs      `json:"process_config_specs" event:"required"`
	HumanInputs        []HumanInSpecs    `json:"human_inputs" event:"required"`
	ProgramInputs      []ProgramInSpecs  `json:"program_inputs" event:"required"`
	AgentInputs        []AgentInSpecs    `json:"agent_inputs" event:"required"`
	Templates          []json.RawMessage `json:"templates" event:"default=[]"`
}

// SourceUpdatedEvent reports that a knowledge source changed.
type SourceUpdatedEvent struct {
	Base
	Path string `json:"path" event:"required"`
}

// KnowledgeTeardownRequestedEvent asks to tear down a knowledge database or namespace.
type KnowledgeTeardownRequestedEvent struct {
	Base
	TeardownType  string  `json:"teardown_type" event:"required,oneof=database|namespace"`
	BucketID      string  `json:"bucket_id" event:"required"`
	BucketName    string  `json:"bucket_name" event:"required"`
	DBName        string  `json:"db_name" event:"required"`
	NamespaceID   *string `json:"namespace_id"`
	NamespaceName *string `json:"namespace_name"`
	FolderName    *string `json:"folder_name"`
}

// Process events.

// ProcessEvent is the base of the process tree.
type ProcessEvent struct{ Base }

// WorkEvent is a unit of work in a process; its display texts are filled
// like a DisplayEvent's.
type WorkEvent struct {
	ProcessEvent
	DisplayName        *LocaleString `json:"display_name"`
	DisplayDescription *LocaleString `json:"display_description"`
	InResponseTo       *string       `json:"in_response_to"`
}

// ProcessStartEvent starts a process.
type ProcessStartEvent struct {
	WorkEvent
	ProcessConfig map[string]json.RawMessage `json:"process_config"`
}

// ProcessWorkEvent is the generic ProcessWorkEvent[T]; a parametrized
// subclass declares its bracketed name with WithParents.
type ProcessWorkEvent struct {
	ProcessStartEvent
	ProcessStopEvent Event `json:"process_stop_event" event:"required"`
}

// ProcessStopEvent ends a process.
type ProcessStopEvent struct {
	WorkEvent
	ProcessClass         *string `json:"process_class"`
	ProcessWalkthroughID *string `json:"process_walkthrough_id"`
}

// ProcessExceptionEvent ends a process with an error.
type ProcessExceptionEvent struct {
	WorkEvent
	Message        string `json:"message" event:"required"`
	HTTPStatusCode int    `json:"http_status_code" event:"default=500"`
}

// AgentWorkEvent is the generic AgentWorkEvent[T]: an agent's stop event
// submitted as work.
type AgentWorkEvent struct {
	WorkEvent
	SubmittedBy    *Topic `json:"submitted_by" event:"required"`
	AgentStopEvent Event  `json:"agent_stop_event" event:"required"`
}

// HumanWorkEvent is work a human submitted through a form; subclasses add
// the form fields.
type HumanWorkEvent struct {
	WorkEvent
	SubmittedBy *UserIdentity `json:"submitted_by"`
}

// ProgramWorkEvent is work a program submitted.
type ProgramWorkEvent struct {
	WorkEvent
	SubmittedBy *UserIdentity `json:"submitted_by"`
}

// WorkRequestEvent requests work in a process; its display texts are not
// filled.
type WorkRequestEvent struct {
	ProcessEvent
	ProcessID          *string       `json:"process_id"`
	DisplayName        *LocaleString `json:"display_name"`
	DisplayDescription *LocaleString `json:"display_description"`
}

// AgentWorkRequestEvent is the generic AgentWorkRequestEvent[T]: a request
// for an agent to run StartEvent.
type AgentWorkRequestEvent struct {
	WorkRequestEvent
	AgentClass *string `json:"agent_class"`
	AgentID    *string `json:"agent_id"`
	StartEvent Event   `json:"start_event" event:"required"`
}

// HumanWorkRequestEvent asks humans to fill in forms.
type HumanWorkRequestEvent struct {
	WorkRequestEvent
	Endpoint   *string  `json:"endpoint"`
	Method     *string  `json:"method"`
	UserIDs    []string `json:"user_ids" event:"default=[]"`
	UserEmails []string `json:"user_emails" event:"default=[]"`
	UserRoles  []string `json:"user_roles" event:"default=[]"`
	Notify     bool     `json:"notify" event:"default=true"`
	Forms      Forms    `json:"forms" event:"required"`
}

// ProgramWorkRequestEvent asks a program for work, posted to Endpoint
// with Method.
type ProgramWorkRequestEvent struct {
	WorkRequestEvent
	Endpoint *string `json:"endpoint"`
	Method   *string `json:"method"`
}

// Timeouts of waits. They are not part of the reference:
// when a HITL, AITL or BITL wait carries a timeout and it expires, the
// dispatcher publishes one of these into the waiting run, so a step can
// handle it. They are pure control events: no user interface shows them.

// WaitTimeoutEvent is the base of this SDK's wait timeouts.
type WaitTimeoutEvent struct {
	ControlEvent
	RequestEventID string  `json:"request_event_id" event:"required"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
}

// HumanInTheLoopTimeoutEvent reports that a human did not answer the
// HITL request RequestEventID in time.
type HumanInTheLoopTimeoutEvent struct{ WaitTimeoutEvent }

// AgentInTheLoopTimeoutEvent reports that a delegate did not answer the
// AITL request RequestEventID in time. It is an
// AgentInTheLoopExceptionEvent (its ExceptionEvent says so), as the
// reference ends such a delegation, so a Python caller sees the failure;
// and a WaitTimeoutEvent, like the other timeouts.
type AgentInTheLoopTimeoutEvent struct {
	AgentInTheLoopExceptionEvent
	TimeoutSeconds float64 `json:"timeout_seconds"`
}

// BotInTheLoopTimeoutEvent reports that nobody answered the BITL request
// RequestEventID in time.
type BotInTheLoopTimeoutEvent struct{ WaitTimeoutEvent }

func joinQuoted(s []string) string {
	var b []byte
	for i, x := range s {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendString(b, x)
	}
	return string(b)
}

func quote(s string) string { return string(appendString(nil, s)) }

func registerCatalogue() {
	MustRegister[LanguageEvent]()
	MustRegister[BotInTheLoopRequestEvent](WithReply("BotInTheLoopResponseEvent"))
	MustRegister[BotInTheLoopResponseEvent]()
	MustRegister[RecallMemoryEvent]()
	MustRegister[MemoryRecalledEvent]()
	MustRegister[SearchKnowledgeEvent]()

	MustRegister[RAGStartEvent]()
	MustRegister[CronStartEvent]()
	MustRegister[ScheduledStartEvent]()
	MustRegister[StoreUserMemoryRequestedEvent](WithDisplay(
		L("Erinnerungen speichern", "Store Memories", "Enregistrer les Mémoires", "Memorizzare i Ricordi"),
		L("Der Agent speichert Erinnerungen aus dem Gespräch.", "The agent stores memories from the conversation.",
			"L'agent enregistre des mémoires de la conversation.", "L'agente memorizza ricordi dalla conversazione.")))

	MustRegister[RAGStopEvent]()
	MustRegister[GroundedRAGStopEvent]()
	MustRegister[UngroundedRAGStopEvent]()
	MustRegister[RAGSuccessStopEvent]()
	MustRegister[RAGFailureStopEvent]()

	MustRegister[ThoughtEvent]()
	MustRegister[ConversationTitleEvent]()
	MustRegister[FollowUpQuestionsEvent]()
	MustRegister[CostEvent]()
	MustRegister[LLMCostEvent]()
	MustRegister[RouteOptions]()
	MustRegister[AgentInTheLoopRequestEvent](WithParents("ControlEvent"))

	MustRegister[RouterEvent]()
	MustRegister[LimitChatHistoryEvent]()
	MustRegister[StandaloneQuestionCondenserEvent]()
	MustRegister[HumanInTheLoopConfirmationRequestEvent](WithLiteral("hitl_type", HITLConfirmation),
		WithReply("HumanInTheLoopConfirmationResponseEvent"))
	MustRegister[HumanInTheLoopChatRequestEvent](WithLiteral("hitl_type", HITLChat),
		WithReply("HumanInTheLoopChatResponseEvent"))
	MustRegister[ToolApprovalRequestEvent]()
	MustRegister[HumanInTheLoopConfirmationResponseEvent](WithParents(
		"HumanInTheLoopResponseEvent[HumanInTheLoopConfirmationRequestEvent]", "HumanInTheLoopResponseEvent"))
	MustRegister[HumanInTheLoopChatResponseEvent](WithParents(
		"HumanInTheLoopResponseEvent[HumanInTheLoopChatRequestEvent]", "HumanInTheLoopResponseEvent"))
	MustRegister[AgentInTheLoopResponseEvent]()
	MustRegister[AgentInTheLoopExceptionEvent]()

	MustRegister[BaseRetrieveMemoryEvent]()
	MustRegister[RetrieveUserMemoryEvent]()
	MustRegister[RetrieveOrganizationMemoryEvent]()
	MustRegister[BaseStoreMemoryEvent]()
	MustRegister[StoreUserMemoryEvent]()
	MustRegister[StoreOrganizationMemoryEvent]()
	MustRegister[AddMemoryToChatHistoryEvent]()
	MustRegister[AddUserMemoryToChatHistoryEvent]()
	MustRegister[AddOrganizationMemoryToChatHistoryEvent]()
	MustRegister[MemoryStorageRequestedEvent]()
	MustRegister[ComposeContextEvent]()
	MustRegister[ContextComposedEvent]()
	MustRegister[KnowledgeSearchedEvent]()

	MustRegister[ClassDiscoveryRequestEvent]()
	MustRegister[AgentClassDiscoveryResponseEvent]()
	MustRegister[ProcessClassDiscoveryResponseEvent]()
	MustRegister[SourceUpdatedEvent]()
	MustRegister[KnowledgeTeardownRequestedEvent]()

	MustRegister[ProcessEvent]()
	MustRegister[WorkEvent]()
	MustRegister[ProcessStartEvent]()
	MustRegister[ProcessWorkEvent]()
	MustRegister[ProcessStopEvent]()
	MustRegister[ProcessExceptionEvent]()
	MustRegister[AgentWorkEvent]()
	MustRegister[HumanWorkEvent]()
	MustRegister[ProgramWorkEvent]()
	MustRegister[WorkRequestEvent]()
	MustRegister[AgentWorkRequestEvent]()
	MustRegister[HumanWorkRequestEvent]()
	MustRegister[ProgramWorkRequestEvent]()

	MustRegister[WaitTimeoutEvent]()
	MustRegister[HumanInTheLoopTimeoutEvent]()
	MustRegister[AgentInTheLoopTimeoutEvent](WithParents("WaitTimeoutEvent"))
	MustRegister[BotInTheLoopTimeoutEvent]()
}

// BlockMessages decodes Blocks as lists of chat messages. Items that older
// producers wrote as text are an error here; they
// stay readable raw in Blocks.
func (e *ComposeContextEvent) BlockMessages() ([][]ChatMessage, error) {
	out := make([][]ChatMessage, len(e.Blocks))
	for i, raw := range e.Blocks {
		if err := UnmarshalValue(raw, &out[i]); err != nil {
			return nil, fmt.Errorf("event: ComposeContextEvent.blocks[%d]: %w", i, err)
		}
	}
	return out, nil
}
