package event

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// TimeoutField is the member of a HITL or BITL request that carries its
// timeout in seconds. The reference keeps members it does not declare, so
// the field travels with the request without breaking its decoding; an
// AgentInTheLoopRequestEvent declares it.
const TimeoutField = "timeout_seconds"

// QuestionTimeout returns the timeout a question carries: the
// timeout_seconds of an AgentInTheLoopRequestEvent, or the TimeoutField
// member of another request. ok is false when it carries none; a value that
// is not a positive finite number of seconds is an error.
func QuestionTimeout(ev Event) (d time.Duration, ok bool, err error) {
	var secs float64
	switch q := ev.(type) {
	case *AgentInTheLoopRequestEvent:
		if q.TimeoutSeconds == nil {
			return 0, false, nil
		}
		secs = *q.TimeoutSeconds
	default:
		raw, found := Extra(ev, TimeoutField)
		if !found || string(raw) == "null" {
			return 0, false, nil
		}
		if secs, err = strconv.ParseFloat(string(raw), 64); err != nil {
			return 0, false, fmt.Errorf("event: %s %s: %s %s is not a number", Name(ev), ev.EventBase().EventID, TimeoutField, raw)
		}
	}
	if math.IsNaN(secs) || math.IsInf(secs, 0) || secs <= 0 || secs > 1e9 {
		return 0, false, fmt.Errorf("event: %s %s: %s must be a positive number of seconds, not %v",
			Name(ev), ev.EventBase().EventID, TimeoutField, secs)
	}
	return time.Duration(secs * float64(time.Second)), true, nil
}
