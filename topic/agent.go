package topic

import "strings"

// EventType is the event_type token of an agent subject: which tier an
// event travels on.
type EventType string

// The two agent event types.
const (
	Control EventType = "control_event" // JetStream, drives workflows
	Display EventType = "display_event" // core NATS, for user interfaces
)

// UserAgent is the pseudo-class under which the gateway echoes a user's own
// display events; no agent class backs it.
const UserAgent = "UserAgent"

const agentRoot = "agent"

// Grammar names of the agent subject tokens, as used in *TokenError.
var agentTokens = [8]string{"agent_class", "agent_id", "thread_id", "display_id", "run_id", "event_type", "event_name", "event_id"}

// Agent addresses one event of one run:
//
//	agent.<Class>.<ID>.<Thread>.<Display>.<Run>.<Type>.<Name>.<EventID>
type Agent struct {
	Class   string    // agent_class: the blueprint, e.g. "RAGAgent"
	ID      string    // agent_id: the instance ("profile") id; the user id for UserAgent
	Thread  string    // thread_id: the conversation or workflow
	Display string    // display_id: UI grouping, may span agents
	Run     string    // run_id: one execution, from StartEvent to Stop/Exception
	Type    EventType // event_type: Control or Display
	Name    string    // event_name: the event's wire name, e.g. "ChunkEvent"
	EventID string    // event_id: normally the payload's event_id
}

func (a Agent) tokens() [8]string {
	return [8]string{a.Class, a.ID, a.Thread, a.Display, a.Run, string(a.Type), a.Name, a.EventID}
}

// Subject returns the subject to publish a on. Every token is required and
// must be valid; Type must be Control or Display. The error is a
// *TokenError naming the first bad token, or a *LengthError for a subject
// longer than MaxSubjectLen.
func (a Agent) Subject() (string, error) {
	t := a.tokens()
	if err := checkAgent(&t); err != nil {
		return "", err
	}
	return build("agent", agentRoot, t[:]...)
}

// Check returns the error Subject would return, without building the
// subject.
func (a Agent) Check() error {
	t := a.tokens()
	if err := checkAgent(&t); err != nil {
		return err
	}
	if n := agentLen(&t); n > MaxSubjectLen {
		return &LengthError{Grammar: "agent", Len: n, Max: MaxSubjectLen}
	}
	return nil
}

func agentLen(t *[8]string) int {
	n := len(agentRoot) + len(t)
	for _, v := range t {
		n += len(v)
	}
	return n
}

func checkAgent(t *[8]string) error {
	for i, v := range t {
		var e *TokenError
		if i == 5 {
			e = checkOneOf(agentTokens[i], v, string(Control), string(Display))
		} else {
			e = checkToken(agentTokens[i], v)
		}
		if e != nil {
			return e
		}
	}
	return nil
}

// Subjects returns the control and the display subject of event name/id
// in a's run (a's own Type, Name and EventID are ignored): what Subject
// returns for each, built in one allocation for an event published on both
// tiers.
func (a Agent) Subjects(name, id string) (control, display string, err error) {
	a.Type, a.Name, a.EventID = Control, name, id
	t := a.tokens()
	if err := checkAgent(&t); err != nil {
		return "", "", err
	}
	n := agentLen(&t)
	if n > MaxSubjectLen {
		return "", "", &LengthError{Grammar: "agent", Len: n, Max: MaxSubjectLen}
	}
	// One string holds both.
	var b strings.Builder
	b.Grow(2 * n)
	for _, typ := range [2]EventType{Control, Display} {
		t[5] = string(typ)
		b.WriteString(agentRoot)
		for _, v := range t {
			b.WriteByte('.')
			b.WriteString(v)
		}
	}
	both := b.String()
	return both[:n], both[n:], nil
}

// String renders a like Subject but never fails: invalid or empty tokens
// are shown as they are. It is for logs, never for publishing.
func (a Agent) String() string {
	t := a.tokens()
	return join(agentRoot, t[:]...)
}

// Event returns a with the event part replaced: the same run, another
// event.
func (a Agent) Event(t EventType, name, id string) Agent {
	a.Type, a.Name, a.EventID = t, name, id
	return a
}

// ParseAgent parses a 9-token agent subject. A literal "*" token (a
// pattern, or a published literal) parses as "*"; every other token must be
// valid, and event_type must be control_event, display_event or "*". The
// error is a *SubjectError wrapping ErrGrammar or a *TokenError.
func ParseAgent(subject string) (Agent, error) {
	var t [9]string
	if n, ok := split(subject, t[:]); !ok {
		return Agent{}, countError("agent", subject, n, 9)
	}
	if t[0] != agentRoot {
		return Agent{}, rootError("agent", subject, t[0], agentRoot)
	}
	for i := 1; i < 9; i++ {
		var e *TokenError
		if i == 6 {
			e = checkOneOf(agentTokens[i-1], t[i], string(Control), string(Display), Wildcard)
		} else {
			e = parseToken(agentTokens[i-1], t[i])
		}
		if e != nil {
			return Agent{}, parseError("agent", subject, t[:], i, e)
		}
	}
	return Agent{
		Class: t[1], ID: t[2], Thread: t[3], Display: t[4], Run: t[5],
		Type: EventType(t[6]), Name: t[7], EventID: t[8],
	}, nil
}

// UserEcho addresses the gateway's echo of a user's own display event:
// class UserAgent, the user id as agent_id.
func UserEcho(userID, thread, display, run, name, eventID string) Agent {
	return Agent{Class: UserAgent, ID: userID, Thread: thread, Display: display, Run: run,
		Type: Display, Name: name, EventID: eventID}
}
