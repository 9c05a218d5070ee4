package event

// SDK extensions for run compensation. The Python reference has no sagas:
// these control events are this SDK's own, published on a failed run's
// control subjects after its ExceptionEvent while the engine undoes the
// steps that completed. A peer that does not know them skips them like
// any unknown event.

// StepCompensatedEvent reports that the compensation of one completed step
// ran (an SDK extension).
type StepCompensatedEvent struct {
	ControlEvent
	// Step is the name of the compensated step.
	Step string `json:"step" event:"required"`
	// IdempotencyKey is the compensation's own key, the one its function saw.
	IdempotencyKey string `json:"idempotency_key"`
	// Attempts counts the runs of the compensation, this one included.
	Attempts int `json:"attempts"`
}

// StepCompensationFailedEvent reports that the compensation of a completed
// step failed on every attempt and was given up (an SDK extension); the
// compensation's record is dead-lettered with the reason.
type StepCompensationFailedEvent struct {
	ControlEvent
	Step           string `json:"step" event:"required"`
	IdempotencyKey string `json:"idempotency_key"`
	// Message is what the end user may see: the compensation's user message
	// (step.Userf) or a reference to the logged error.
	Message  string `json:"message"`
	Attempts int    `json:"attempts"`
}

// RunCompensatedEvent is the last event of a failed run whose completed
// steps declared compensations (an SDK extension): every compensation ran,
// or was given up and is listed in FailedSteps.
type RunCompensatedEvent struct {
	ControlEvent
	// CompensatedSteps names the compensated steps, in the order they ran
	// (newest completion first).
	CompensatedSteps []string `json:"compensated_steps"`
	// FailedSteps names the steps whose compensation was given up.
	FailedSteps []string `json:"failed_steps"`
}

func registerLifecycle() {
	MustRegister[StepCompensatedEvent]()
	MustRegister[StepCompensationFailedEvent]()
	MustRegister[RunCompensatedEvent](WithDefault("compensated_steps", "[]"), WithDefault("failed_steps", "[]"))
}
