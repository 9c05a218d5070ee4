package topic

const discoveryRoot = "class_discovery"

// AnyClass is the class token of a discovery request addressed to every
// class: a literal "*" that Discovery.Subject accepts in Class.
const AnyClass = Wildcard

// Directions of a discovery subject.
const (
	DirRequest  = "request"
	DirResponse = "response"
)

// Discovery addresses one class-discovery request or response:
//
//	class_discovery.<Kind>.<Class>.*.<Dir>.<CallID>
//
// The fourth token is always a literal "*" (left over from per-instance
// discovery). Token errors name the tokens kind, class, instance,
// direction and call_id.
type Discovery struct {
	Kind   string // KindAgent or KindProcess
	Class  string // the class, or AnyClass for a request to every class
	Dir    string // DirRequest or DirResponse
	CallID string // call_id: correlates responses with a request
}

func (d Discovery) tokens() [5]string {
	return [5]string{d.Kind, d.Class, Wildcard, d.Dir, d.CallID}
}

// Subject returns the subject to publish d on. Kind and Dir must be one of
// their constants, Class a valid token or AnyClass, CallID a valid token.
// The error is a *TokenError, or a *LengthError for a subject longer than
// MaxSubjectLen.
func (d Discovery) Subject() (string, error) {
	if e := checkOneOf("kind", d.Kind, KindAgent, KindProcess); e != nil {
		return "", e
	}
	if d.Class != AnyClass {
		if e := checkToken("class", d.Class); e != nil {
			return "", e
		}
	}
	if e := checkOneOf("direction", d.Dir, DirRequest, DirResponse); e != nil {
		return "", e
	}
	if e := checkToken("call_id", d.CallID); e != nil {
		return "", e
	}
	t := d.tokens()
	return build("discovery", discoveryRoot, t[:]...)
}

// String renders d like Subject but never fails; for logs only.
func (d Discovery) String() string {
	t := d.tokens()
	return join(discoveryRoot, t[:]...)
}

// ParseDiscovery parses a 6-token class-discovery subject. Class and CallID
// may be a literal "*"; the fourth token must be "*". The error is a
// *SubjectError wrapping ErrGrammar or a *TokenError.
func ParseDiscovery(subject string) (Discovery, error) {
	var t [6]string
	if n, ok := split(subject, t[:]); !ok {
		return Discovery{}, countError("discovery", subject, n, 6)
	}
	if t[0] != discoveryRoot {
		return Discovery{}, rootError("discovery", subject, t[0], discoveryRoot)
	}
	checks := [5]*TokenError{
		checkOneOf("kind", t[1], KindAgent, KindProcess),
		parseToken("class", t[2]),
		checkOneOf("instance", t[3], Wildcard),
		checkOneOf("direction", t[4], DirRequest, DirResponse),
		parseToken("call_id", t[5]),
	}
	for i, e := range checks {
		if e != nil {
			return Discovery{}, parseError("discovery", subject, t[:], i+1, e)
		}
	}
	return Discovery{Kind: t[1], Class: t[2], Dir: t[4], CallID: t[5]}, nil
}

// DiscoveryRequests is the runners' pattern: every discovery request for
// kind (KindAgent or KindProcess), class_discovery.<kind>.*.*.request.*
// Runners filter in code: they answer when the class token is their own
// class or AnyClass. For any other kind it returns "", which every
// subscribe call rejects.
func DiscoveryRequests(kind string) string {
	switch kind {
	case KindAgent:
		return "class_discovery.agent.*.*.request.*"
	case KindProcess:
		return "class_discovery.process.*.*.request.*"
	}
	return ""
}

// DiscoveryResponses is the gateway's pattern for the answers to one
// request: class_discovery.<kind>.*.*.response.<call_id>
func DiscoveryResponses(kind, callID string) (string, error) {
	if e := checkOneOf("kind", kind, KindAgent, KindProcess); e != nil {
		return "", e
	}
	if e := checkToken("call_id", callID); e != nil {
		return "", e
	}
	return build("discovery", discoveryRoot, kind, Wildcard, Wildcard, DirResponse, callID)
}
