// Package memory remembers facts about a user, and knowledge shared by an
// organisation, across threads: a Service that stores and recalls
// memories by meaning, and the capability steps that answer the
// reference platform's memory events with it.
//
// # Scopes
//
// A memory belongs to one scope. A user memory is owned by one user id and
// recalled only for that user. An organisation memory is owned by a tenant
// (the organisation a user acts within, UserIdentity.ActingWithinTenant)
// and lives in a namespace of that tenant ("faq", "policies"…); every user
// acting within the tenant recalls it. Who asks is a Principal, taken
// from the run's start event (PrincipalOf): a user id and the
// organisations they act within. Recall never returns a memory of another
// user or of an organisation outside the principal's, and storing into an
// organisation the principal is not in fails with ErrForbidden.
//
// # Storage
//
// Memories are vectors in a vector.Index (by default the embedded
// vector.Local persisted in a directory) made by an llm.Embedder (the
// openai or gemini provider's Embed; llmtest.HashEmbedder offline). A
// memory's id is derived from its scope, owner, namespace and text, so
// storing the same fact twice, or again after a crash, keeps one memory.
//
// # Capability
//
// RecallStep answers a RecallMemoryEvent with the retrieval events and a
// MemoryRecalledEvent holding one system message per scope, ready to put
// before the model's history; a failing backend degrades to empty blocks,
// as the reference does, so a turn never hangs on memory. Writer is an
// agent that stores what a StoreUserMemoryRequestedEvent carries: the
// platform's memory agent, reached by the delegation hitl.StoreMemory
// builds. An agent that keeps memories in-process uses StoreStep instead.
package memory
