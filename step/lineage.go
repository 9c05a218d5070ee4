package step

import (
	"slices"
	"strings"

	"github.com/saap-go/agent/event"
)

// Lineage names the protocol's base types validation reasons about. They are
// matched by parent-chain membership, like the reference's is_* predicates.
const (
	nameStart         = "StartEvent"
	nameStop          = "StopEvent"
	nameException     = "ExceptionEvent"
	nameControl       = "ControlEvent"
	nameHITLRequest   = "HumanInTheLoopRequestEvent"
	nameHITLResponse  = "HumanInTheLoopResponseEvent"
	nameAITLRequest   = "AgentInTheLoopRequestEvent"
	nameAITLResponse  = "AgentInTheLoopResponseEvent"
	nameAITLException = "AgentInTheLoopExceptionEvent"
	nameBITLRequest   = "BotInTheLoopRequestEvent"
	nameBITLResponse  = "BotInTheLoopResponseEvent"
	nameTimeout       = "WaitTimeoutEvent"
	nameTimerRequest  = "TimerRequestEvent"
	nameTimerFired    = "TimerFiredEvent"

	nameProcessEvent     = "ProcessEvent"
	nameWork             = "WorkEvent"
	nameProcessStart     = "ProcessStartEvent"
	nameProcessStop      = "ProcessStopEvent"
	nameProcessException = "ProcessExceptionEvent"
)

// family is an in-the-loop protocol whose response comes from outside the
// agent once a request was emitted.
type family uint8

const (
	noFamily family = iota
	famHITL
	famAITL
	famBITL
	famAgentWork   // a process's AgentWorkRequestEvent → AgentWorkEvent
	famHumanWork   // HumanWorkRequestEvent → HumanWorkEvent
	famProgramWork // ProgramWorkRequestEvent → ProgramWorkEvent
	famTimer       // TimerRequestEvent → TimerFiredEvent
)

// lineage returns the registered parent list of name (self first), or just
// name if it is not registered.
func lineage(name string) []string {
	if t, ok := event.Lookup(name); ok && len(t.Parents) > 0 {
		return t.Parents
	}
	return []string{name}
}

// isA reports whether name is ancestor or one of its subclasses.
func isA(name, ancestor string) bool {
	return name == ancestor || slices.Contains(lineage(name), ancestor)
}

// rules are the lineage rules of one kind of workflow: an agent's steps
// take control events and end on a StopEvent; a process's steps take work
// events and end on a ProcessStopEvent.
type rules struct {
	process   bool
	start     string // what starts a run
	stop      string // what ends it
	exception string // what ends it with an error
	input     string // the base of every event a step may take
	flow      string // the base of every event drawn between steps
}

var (
	agentRules   = &rules{start: nameStart, stop: nameStop, exception: nameException, input: nameControl, flow: nameControl}
	processRules = &rules{process: true, start: nameProcessStart, stop: nameProcessStop,
		exception: nameProcessException, input: nameWork, flow: nameProcessEvent}
)

func (r *rules) isStart(name string) bool { return isA(name, r.start) }
func (r *rules) isStop(name string) bool  { return isA(name, r.stop) }

// registered reports whether name is in the event registry.
func registered(name string) bool {
	_, ok := event.Lookup(name)
	return ok
}

// requestFamily is the family of a request event, or noFamily.
func (r *rules) requestFamily(name string) family {
	if r.process {
		switch {
		case isA(name, "AgentWorkRequestEvent"):
			return famAgentWork
		case isA(name, "HumanWorkRequestEvent"):
			return famHumanWork
		case isA(name, "ProgramWorkRequestEvent"):
			return famProgramWork
		}
		return noFamily
	}
	switch {
	case isA(name, nameHITLRequest):
		return famHITL
	case isA(name, nameAITLRequest):
		return famAITL
	case isA(name, nameBITLRequest):
		return famBITL
	case isA(name, nameTimerRequest):
		return famTimer
	}
	return noFamily
}

// externalFamily says whether an event arrives from outside the agent:
// start events always (ok, noFamily); responses and timeouts once a request
// of their family was emitted (ok, family). A timeout whose family cannot be
// told from its name is answered by any request (ok, noFamily, timeout).
func (r *rules) externalFamily(name string) (ok bool, fam family, timeout bool) {
	if r.process {
		switch {
		case r.isStart(name):
			return true, noFamily, false
		case isA(name, "AgentWorkEvent"):
			return true, famAgentWork, false
		case isA(name, "HumanWorkEvent"):
			return true, famHumanWork, false
		case isA(name, "ProgramWorkEvent"):
			return true, famProgramWork, false
		}
		return false, noFamily, false
	}
	switch {
	case r.isStart(name):
		return true, noFamily, false
	case isA(name, nameHITLResponse):
		return true, famHITL, false
	case isA(name, nameAITLResponse), isA(name, nameAITLException):
		return true, famAITL, false
	case isA(name, nameBITLResponse):
		return true, famBITL, false
	case isA(name, nameTimerFired):
		return true, famTimer, false
	case isA(name, nameTimeout):
		for _, n := range lineage(name) {
			switch {
			case strings.HasPrefix(n, "HumanInTheLoop"):
				return true, famHITL, true
			case strings.HasPrefix(n, "AgentInTheLoop"):
				return true, famAITL, true
			case strings.HasPrefix(n, "BotInTheLoop"):
				return true, famBITL, true
			}
		}
		return true, noFamily, true
	}
	return false, noFamily, false
}
