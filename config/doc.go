// Package config resolves an agent instance's configuration the way the
// reference platform does: fetch the stored configuration over the config
// RPC, deep-merge it over the agent's typed defaults, decode and validate
// it.
//
// The platform's API answers requests on
// aihub.rpc.config.agent.<AgentClass>.<agent_id>:
//
//	request {"agent_class": "RAGAgent", "agent_id": "wiki"}
//	reply   {"agent_class": "RAGAgent", "agent_id": "wiki", "config": {...}, "found": true, "error": null}
//
// A Client sends that request over a bus.Requester; Load merges the answer
// into a typed configuration:
//
//	type Settings struct {
//		Model       string  `json:"model"`
//		Temperature float64 `json:"temperature"`
//	}
//	defaults := Settings{Model: "gpt-4o", Temperature: 0.2}
//	cfg, err := config.Load(ctx, config.NewClient(b), "RAGAgent", "wiki", defaults)
//
// The runtime calls Load once per run, on the start event, and keeps the
// result for the run's later events. found:false, an error reply, no
// responders and a timeout are errors (ErrNotFound, *bus.RemoteError,
// bus.ErrNoResponders, ErrTimeout), which the runtime turns into an
// ExceptionEvent that ends the run visibly.
//
// Merging and validation are done by Merge (MergeValue when the type is
// known only at run time, as in a runtime that holds the defaults as an
// any): objects merge key by key, any
// other value replaces the default, unknown keys are ignored (a profile
// also holds the platform's base fields: agent_id, name, description, icon
// and cron). The lists of a FormKit form submission, which the platform
// stores as objects keyed "0", "1", ..., are turned back into lists first.
// A reply without "found" counts as found. A value of the
// wrong JSON type, a null for a field that cannot be null, or an error from
// the type's Validate method yields a *ValidationError that names the
// failing fields and never their values, because configurations carry
// secrets and the error reaches users.
//
// Standalone returns a Source that makes no request at all, so an agent
// runs on its defaults without the platform (local development, tests).
package config
