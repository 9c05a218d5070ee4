// Package discovery makes an agent class known to the platform: it builds
// the class's AgentClassDiscoveryResponseEvent and answers the API
// gateway's discovery requests with it.
//
// Every 60 s each gateway replica publishes an empty
// ClassDiscoveryRequestEvent on class_discovery.agent.*.*.request.<call_id>
// and collects answers for 10 s; a class that does not answer loses its REST
// routes until the next cycle. Build describes the class from its workflow;
// Serve answers on class_discovery.agent.<Class>.*.response.<call_id>:
//
//	resp, err := discovery.Build(wf, discovery.Class{
//		Name:   event.L("Wiki-Assistent", "Wiki assistant", "Assistant wiki", "Assistente wiki"),
//		Config: Settings{Model: "gpt-4o"}, // the configurable part, with its defaults
//	})
//	if err != nil { ... }
//	r, err := discovery.Serve(ctx, b, resp)
//	if err != nil { ... }
//	defer r.Stop()
//
// The response lists the start, stop and HITL events of the workflow with
// JSON Schemas generated from the Go types (Schema, ConfigSchema) in the
// form pydantic v2 writes them, because the gateway rebuilds request and
// response models from those schemas: nested types as "$defs" with
// "#/$defs/Name" references, nullable fields as anyOf with null, titles,
// required lists and defaults taken from the event package's struct tags.
// It also says whether the class is conversational (a start event is a
// UserMessageEvent or a subclass: the chat UI and the OpenAI model list use
// it) or schedulable (a CronStartEvent), and carries the workflow's
// network graph.
package discovery
