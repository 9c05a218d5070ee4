package bus

// Headers the engine sets on each event a step publishes, so that tools
// (saap run show, the dev console) name the step that produced an output
// and the event it ran on instead of guessing from the workflow graph.
// Payloads stay as the reference has them; a reader that does not know
// these headers loses nothing.
const (
	// HeaderStep is the name of the step that produced the event.
	HeaderStep = "Saap-Step"
	// HeaderTrigger is the event id of the event the step ran on.
	HeaderTrigger = "Saap-Trigger"
	// HeaderRerun is "1" when the engine ran the step again for the same
	// inputs (a redelivery found the earlier execution unfinished).
	HeaderRerun = "Saap-Rerun"
)
