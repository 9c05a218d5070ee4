package topic

// AgentPattern is an agent subject with wildcards: every empty (or "*")
// field becomes "*", every other field must be a valid token. Convert an
// Agent with AgentPattern(a) to subscribe to "this, but any ...".
type AgentPattern Agent

// Subject returns the subscription pattern. The error is a *TokenError
// naming the first bad token, or a *LengthError.
func (p AgentPattern) Subject() (string, error) {
	t := Agent(p).tokens()
	for i, v := range t {
		var e *TokenError
		if i == 5 {
			if v == "" {
				v = Wildcard
			}
			e = checkOneOf(agentTokens[i], v, string(Control), string(Display), Wildcard)
		} else {
			v, e = checkPatternToken(agentTokens[i], v)
		}
		if e != nil {
			return "", e
		}
		t[i] = v
	}
	return build("agent", agentRoot, t[:]...)
}

// ClassControl is the agent runner's pattern: every control event of a
// class, agent.<Class>.*.*.*.*.control_event.*.*
func ClassControl(class string) (string, error) {
	if err := ValidateToken("agent_class", class); err != nil {
		return "", err
	}
	return AgentPattern{Class: class, Type: Control}.Subject()
}

// InstanceControl matches the control events of one agent instance:
// agent.<Class>.<id>.*.*.*.control_event.*.*
func InstanceControl(class, id string) (string, error) {
	if err := requireTokens("agent_class", class, "agent_id", id); err != nil {
		return "", err
	}
	return AgentPattern{Class: class, ID: id, Type: Control}.Subject()
}

// InstanceControlEvent matches one named control event of one agent
// instance (the process agent delegator's stop listener):
// agent.<Class>.<id>.*.*.*.control_event.<name>.*
func InstanceControlEvent(class, id, name string) (string, error) {
	if err := requireTokens("agent_class", class, "agent_id", id, "event_name", name); err != nil {
		return "", err
	}
	return AgentPattern{Class: class, ID: id, Type: Control, Name: name}.Subject()
}

// RunControl matches the control events of one run of a class:
// agent.<Class>.*.*.*.<run>.control_event.*.*
func RunControl(class, run string) (string, error) {
	if err := requireTokens("agent_class", class, "run_id", run); err != nil {
		return "", err
	}
	return AgentPattern{Class: class, Run: run, Type: Control}.Subject()
}

// ThreadDisplay matches the display events of a thread and display, from
// any agent and run, as the gateway's SSE and OpenAI endpoints subscribe:
// agent.*.*.<thread>.<display>.*.display_event.*.*
func ThreadDisplay(thread, display string) (string, error) {
	if err := requireTokens("thread_id", thread, "display_id", display); err != nil {
		return "", err
	}
	return AgentPattern{Thread: thread, Display: display, Type: Display}.Subject()
}

// ThreadEvents matches both event types of a thread, display and run:
// agent.<class>.<id>.<thread>.<display>.<run>.*.*.* (empty class, id or
// run become "*"). Events that are both control and display arrive twice.
func ThreadEvents(class, id, thread, display, run string) (string, error) {
	if err := requireTokens("thread_id", thread, "display_id", display); err != nil {
		return "", err
	}
	return AgentPattern{Class: class, ID: id, Thread: thread, Display: display, Run: run}.Subject()
}

// ThreadControl matches the control events of one run of one agent
// instance in a thread, as the AITL response listener subscribes:
// agent.<class>.<id>.<thread>.<display>.<run>.control_event.*.*
func ThreadControl(class, id, thread, display, run string) (string, error) {
	if err := requireTokens("agent_class", class, "agent_id", id, "thread_id", thread,
		"display_id", display, "run_id", run); err != nil {
		return "", err
	}
	return AgentPattern{Class: class, ID: id, Thread: thread, Display: display, Run: run, Type: Control}.Subject()
}

// AllAgentEvents matches every agent event (the API persister):
// agent.*.*.*.*.*.*.*.*
func AllAgentEvents() string { return "agent.*.*.*.*.*.*.*.*" }

// AllDisplayEvents matches every agent display event (the API WebSocket
// sender): agent.*.*.*.*.*.display_event.*.*
func AllDisplayEvents() string { return "agent.*.*.*.*.*.display_event.*.*" }

// StreamName is the JetStream stream of an agent class: agent_<Class>_stream.
// class is not validated; callers check it with ValidateToken.
func StreamName(class string) string { return "agent_" + class + "_stream" }

// StreamSubject is the one subject the stream of an agent class binds:
// agent.<Class>.*.*.*.*.*.*.* (nine tokens, never agent.<Class>.>). class is
// not validated; callers check it with ValidateToken.
func StreamSubject(class string) string { return "agent." + class + ".*.*.*.*.*.*.*" }

// requireTokens validates name/value pairs where a pattern builder needs a
// concrete token (an empty value would silently widen the pattern).
func requireTokens(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if e := checkToken(pairs[i], pairs[i+1]); e != nil {
			return e
		}
	}
	return nil
}
