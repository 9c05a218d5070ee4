// Package process runs business processes: long-running walkthroughs whose
// steps hand work to agents, to humans and to programs, and go on when the
// work comes back, possibly days later.
//
// A process is declared like an agent: its steps are plain functions made
// with step.New, validated together (step.NewProcessWorkflow) with the same
// hints, and exported as the same graph. A step takes work events
// (subclasses of event.WorkEvent: the ProcessStartEvent that opens a
// walkthrough, an agent's AgentWorkEvent, a human's HumanWorkEvent, a
// program's ProgramWorkEvent) and returns work requests
// (AgentWorkRequestEvent, HumanWorkRequestEvent, ProgramWorkRequestEvent
// subclasses) or a ProcessStopEvent that ends the walkthrough:
//
//	p := &process.Process{
//		Class: "Onboarding",
//		Steps: []*step.Step{step.New(o.Begin), step.New(o.Checked), ...},
//		Routes: []process.Route{
//			process.Agent((*CheckDocument)(nil), "DocChecker", "default", (*DocumentChecked)(nil)),
//			process.Human((*Approve)(nil), process.Who{Roles: []string{"manager"}}),
//			process.Program((*CreateAccount)(nil), process.Who{IDs: []string{"accounts-service"}}),
//		},
//	}
//	err := process.Run(ctx, p, process.WithBus(b), process.WithStore(s))
//
// Run consumes the class's work events (durable consumer
// process_runner_<Class> on process_<Class>_stream), fetches the process
// configuration by RPC when a walkthrough starts, keeps the walkthrough's
// events and claims in the state store, and publishes each step's outputs to
// the walkthrough's work_request subjects, with the routing data of the
// request's Route filled in. A failing step ends the walkthrough with a
// ProcessExceptionEvent.
//
// Handling is durable in the way agent runs are: a work event is
// acknowledged only after every step it started has published its outputs;
// a step is claimed under the ids of the events it binds, so a redelivery
// after a crash runs an unfinished step again and publishes outputs whose
// ids are derived from that binding (the stream drops the duplicates); an
// event that cannot be handled is dead-lettered, never dropped in silence.
// A step whose outputs do not match its declaration publishes nothing and
// fails the walkthrough.
//
// The agent delegator (started by Run when a Route names an agent) turns an
// agent work request into a run of that agent in a thread of its own and
// brings the run's stop event back as the route's AgentWorkEvent, through
// durable consumers, so a restart loses nothing; a route's Timeout ends a
// walkthrough whose agent does not finish in time. Humans and programs
// submit their work with Submit, or over HTTP through Handler, which checks
// the submitter against the open request's Who.
package process
