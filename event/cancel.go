package event

// SDK extensions for run cancellation. The Python reference has no way to
// stop a run from outside: these events are this SDK's own. A client (the
// gateway, `saap run cancel`, a runner's CancelRun) publishes a
// RunCancelRequestedEvent on the run's control subject; the engine checks
// it like any event of the run and ends the run with a RunCancelledEvent,
// a StopEvent by its parents, so a Python peer tears the run down as a
// stopped run and a peer that knows the name can tell it was cancelled.

// Limits of the texts a cancel request carries, checked before it is
// published or acted on.
const (
	MaxCancelReason = 1024
	MaxCancelBy     = 256
)

// RunCancelRequestedEvent asks the run on whose control subject it is
// published to stop (an SDK extension). Nothing more of the run starts,
// its running steps see their context cancelled, the compensations of its
// completed steps run, and it ends with a RunCancelledEvent. A request for
// a run that has ended does nothing.
type RunCancelRequestedEvent struct {
	ControlEvent
	// Reason says why, for the run's record and its status; optional.
	Reason string `json:"reason"`
	// RequestedBy names who asked: a user id, or an operator's name.
	RequestedBy string `json:"requested_by"`
}

// RunCancelledEvent is the terminal event of a cancelled run (an SDK
// extension). It is a StopEvent: every consumer that ends a run on a
// stop ends it on this one too.
type RunCancelledEvent struct {
	StopEvent
	// Reason and RequestedBy are the request's.
	Reason      string `json:"reason"`
	RequestedBy string `json:"requested_by"`
	// RequestEventID is the event id of the RunCancelRequestedEvent that
	// ended the run.
	RequestEventID string `json:"request_event_id"`
}

// IsCancelled reports whether e is the terminal event of a cancelled run.
func IsCancelled(e Event) bool { return Has(e, "RunCancelledEvent") }

// IsCancelRequest reports whether e asks a run to stop.
func IsCancelRequest(e Event) bool { return Has(e, "RunCancelRequestedEvent") }

func registerCancel() {
	MustRegister[RunCancelRequestedEvent]()
	MustRegister[RunCancelledEvent](WithDisplay(
		L("Abgebrochen", "Cancelled", "Annulé", "Annullato"),
		L("Der Lauf wurde auf Wunsch abgebrochen.", "The run was cancelled on request.",
			"L'exécution a été annulée à la demande.", "L'esecuzione è stata annullata su richiesta.")))
}
