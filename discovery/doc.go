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
// it) or schedulable (a CronStartEvent or a subclass: the platform's
// scheduler starts runs with it), and carries the workflow's network graph.
// Serve answers requests; Announce publishes the answer once, unsolicited,
// on class_discovery.agent.<Class>.*.announce.<event_id>, which a runner
// does when it starts.
//
// # Configuration schema and form
//
// The platform's admin UI creates and edits an agent's profiles with no
// hand-written JSON: it renders the response's form (FormKit elements) and
// the API validates what is submitted against agent_config_specs. Both
// start with the base fields every profile of the reference has: agent_id
// (lowercase letters, digits, "-" and "_"), name and description (texts in
// the four locales), icon, and, for a schedulable class only, cron (the
// schedule the platform starts the profile on; its element comes last in
// the form). The fields of the configuration type follow, with their
// defaults. A runner ignores the base fields when it merges a profile.
//
// Form (which Build calls unless Class.Form is given) derives one element
// per field from its Go type: a string becomes a text input (a password
// input when the name says it holds a secret, as for api_key or
// auth_token; its default is never published), a number a number input, a
// bool a toggle, an event.LocaleString a text input per locale, a nested
// struct a group of its fields. A list or a map with string keys becomes a
// FormKit repeater, as the reference's forms of lists: the items of a list
// of structs hold the struct's fields, those of a list of scalars one
// element named "value", those of a map a "key" text input and the value
// (an element, or a group of a struct's fields, named "value"); the
// default items are the repeater's value. The profile store of
// gateway/profiles and the runner's merge (config.Merge) turn what the
// form submits back into the list or map.
// A field of another type (a map of lists, a json.RawMessage) is left out
// of the form and keeps its default. The form struct tag adjusts the
// element:
//
//	Temperature float64 `json:"temperature" form:"label=Temperature,help=Higher is more creative,input=slider,min=0,max=2,step=0.1"`
//
// Its keys:
//
//	label=<text>        the label (default: the JSON name in title case, "max_tokens" → "Max Tokens")
//	help=<text>         the help text (default: the description tag)
//	placeholder=<text>  the placeholder of a text, textarea, number or select input
//	input=<type>        text, textarea, number, slider, select, toggle, password, locale or icon
//	options=a|b|c       the choices of a select (options alone imply input=select)
//	models=<kind>       a model select, which the platform's UI fills with its models of a kind:
//	                    chat, embedding, rerank, image_generation, audio_transcription or audio_speech
//	min=, max=, step=   the bounds and step of a number or slider; of a repeater, the item count
//	add=<text>          the label of a repeater's add button
//	rows=<n>            the height of a textarea
//
// A comma starts a new key only when one of these keys and "=" follow it,
// so texts may contain commas. form:"-" leaves the field out of both the
// form and the schema: the runner's default is then the only value, for
// settings that belong to the deployment rather than to a profile. A bad
// tag makes Build fail with an error naming the field.
package discovery
