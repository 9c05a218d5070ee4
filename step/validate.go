package step

import (
	"strings"
)

// Check names one validation rule, so callers and
// tests can tell problems apart without parsing messages.
type Check string

// The checks. Relaxed workflows (NewPartialWorkflow) skip CheckNoProducer,
// CheckNoStart, CheckUnreachable and CheckNoStop.
const (
	CheckSignature    Check = "signature"     // the function cannot be a step or precondition
	CheckUnregistered Check = "unregistered"  // an event type is not registered
	CheckName         Check = "name"          // the step has no usable name
	CheckDuplicate    Check = "duplicate"     // two steps share a name
	CheckNoProducer   Check = "no-producer"   // a required input nobody produces and that cannot come from outside
	CheckNoStart      Check = "no-start"      // no step consumes a start event
	CheckStopInput    Check = "stop-input"    // a step takes a StopEvent or ExceptionEvent
	CheckDisplayInput Check = "display-input" // a step takes an event that is not a control event, so it never fires
	CheckUnreachable  Check = "unreachable"   // no chain of events from a start event reaches the step
	CheckNoStop       Check = "no-stop"       // no StopEvent is reachable from the step
	CheckCycle        Check = "cycle"         // a cycle without MaxExecutions or Loop
)

// Problem is one reason a workflow cannot run.
type Problem struct {
	Check   Check
	Step    string // the step concerned, "" for the workflow as a whole
	Message string
	Hint    string // what to change
}

// String renders the problem as one list item of ValidationError.Error.
func (p Problem) String() string {
	if p.Hint == "" {
		return p.Message
	}
	return p.Message + "\n  hint: " + p.Hint
}

// ValidationError lists every problem found when a workflow was built.
type ValidationError struct {
	Class    string
	Problems []Problem
}

// Error renders "<Class> cannot run:" and one item per problem, each with
// its hint.
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString(e.Class)
	b.WriteString(" cannot run:")
	for _, p := range e.Problems {
		b.WriteString("\n- ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Has reports whether some problem is of the given check.
func (e *ValidationError) Has(c Check) bool {
	for _, p := range e.Problems {
		if p.Check == c {
			return true
		}
	}
	return false
}
