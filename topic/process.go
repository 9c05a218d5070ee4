package topic

// ProcessEventType is the event_type token of a process subject.
type ProcessEventType string

// The two process event types.
const (
	Work        ProcessEventType = "work"         // a WorkEvent: something was done
	WorkRequest ProcessEventType = "work_request" // a WorkRequestEvent: delegate work
)

// AnyProcessID is the process id the reference publishes when it does not
// know the process (the agent delegator, class-level publishes): a literal
// "*" token that Process.Subject accepts in ID (spec/bus.md §1.3, §1.4).
const AnyProcessID = Wildcard

const processRoot = "process"

var processTokens = [6]string{"process_class", "process_id", "walkthrough_id", "event_type", "event_name", "event_id"}

// Process addresses one event of one process walkthrough:
//
//	process.<Class>.<ID>.<Walkthrough>.<Type>.<Name>.<EventID>
type Process struct {
	Class       string           // process_class
	ID          string           // process_id, or AnyProcessID
	Walkthrough string           // walkthrough_id: one execution of the process
	Type        ProcessEventType // event_type: Work or WorkRequest
	Name        string           // event_name
	EventID     string           // event_id
}

func (p Process) tokens() [6]string {
	return [6]string{p.Class, p.ID, p.Walkthrough, string(p.Type), p.Name, p.EventID}
}

// Subject returns the subject to publish p on. Every token is required and
// must be valid (D12), except that ID may be AnyProcessID; Type must be
// Work or WorkRequest. The error is a *TokenError, or a *LengthError for a
// subject longer than MaxSubjectLen.
func (p Process) Subject() (string, error) {
	t := p.tokens()
	for i, v := range t {
		var e *TokenError
		switch i {
		case 1:
			if v != AnyProcessID {
				e = checkToken(processTokens[i], v)
			}
		case 3:
			e = checkOneOf(processTokens[i], v, string(Work), string(WorkRequest))
		default:
			e = checkToken(processTokens[i], v)
		}
		if e != nil {
			return "", e
		}
	}
	return build("process", processRoot, t[:]...)
}

// String renders p like Subject but never fails; for logs only.
func (p Process) String() string {
	t := p.tokens()
	return join(processRoot, t[:]...)
}

// ParseProcess parses a 7-token process subject. A literal "*" token parses
// as "*"; event_type must be work, work_request or "*". The error is a
// *SubjectError wrapping ErrGrammar or a *TokenError.
func ParseProcess(subject string) (Process, error) {
	var t [7]string
	if n, ok := split(subject, t[:]); !ok {
		return Process{}, countError("process", subject, n, 7)
	}
	if t[0] != processRoot {
		return Process{}, rootError("process", subject, t[0], processRoot)
	}
	for i := 1; i < 7; i++ {
		var e *TokenError
		if i == 4 {
			e = checkOneOf(processTokens[i-1], t[i], string(Work), string(WorkRequest), Wildcard)
		} else {
			e = parseToken(processTokens[i-1], t[i])
		}
		if e != nil {
			return Process{}, parseError("process", subject, t[:], i, e)
		}
	}
	return Process{Class: t[1], ID: t[2], Walkthrough: t[3], Type: ProcessEventType(t[4]), Name: t[5], EventID: t[6]}, nil
}

// ProcessPattern is a process subject with wildcards: every empty (or "*")
// field becomes "*", every other field must be a valid token.
type ProcessPattern Process

// Subject returns the subscription pattern. The error is a *TokenError or
// a *LengthError.
func (p ProcessPattern) Subject() (string, error) {
	t := Process(p).tokens()
	for i, v := range t {
		var e *TokenError
		if i == 3 {
			if v == "" {
				v = Wildcard
			}
			e = checkOneOf(processTokens[i], v, string(Work), string(WorkRequest), Wildcard)
		} else {
			v, e = checkPatternToken(processTokens[i], v)
		}
		if e != nil {
			return "", e
		}
		t[i] = v
	}
	return build("process", processRoot, t[:]...)
}

// ProcessClassWork is the process runner's pattern: the work events of a
// process class, process.<Class>.*.*.work.*.*
func ProcessClassWork(class string) (string, error) {
	if err := ValidateToken("process_class", class); err != nil {
		return "", err
	}
	return ProcessPattern{Class: class, Type: Work}.Subject()
}

// ProcessClassWorkRequests is the delegators' pattern: the work requests
// of a process class, process.<Class>.*.*.work_request.*.*
func ProcessClassWorkRequests(class string) (string, error) {
	if err := ValidateToken("process_class", class); err != nil {
		return "", err
	}
	return ProcessPattern{Class: class, Type: WorkRequest}.Subject()
}

// AllProcessEvents matches every process event (the API persister):
// process.*.*.*.*.*.*
func AllProcessEvents() string { return "process.*.*.*.*.*.*" }

// ProcessStreamName is the JetStream stream of a process class:
// process_<Class>_stream. class is not validated; callers check it with
// ValidateToken.
func ProcessStreamName(class string) string { return "process_" + class + "_stream" }

// ProcessStreamSubject is the one subject the stream of a process class
// binds: process.<Class>.*.*.*.*.* . class is not validated.
func ProcessStreamSubject(class string) string { return "process." + class + ".*.*.*.*.*" }
