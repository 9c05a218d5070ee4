package topic

const rpcRoot = "aihub.rpc"

var rpcTokens = [4]string{"service", "entity_type", "entity_class", "entity_id"}

// Entity types of the config RPC and of discovery.
const (
	KindAgent   = "agent"
	KindProcess = "process"
)

// ConfigService is the RPC service that serves instance configurations.
const ConfigService = "config"

// RPC addresses a request/reply call:
//
//	aihub.rpc.<Service>.<EntityType>.<EntityClass>.<EntityID>
type RPC struct {
	Service     string // service, e.g. ConfigService
	EntityType  string // entity_type, e.g. KindAgent
	EntityClass string // entity_class, e.g. "RAGAgent"
	EntityID    string // entity_id, e.g. the agent id
}

func (r RPC) tokens() [4]string {
	return [4]string{r.Service, r.EntityType, r.EntityClass, r.EntityID}
}

// Subject returns the subject to send the request to. Every token is
// required and must be valid (D12). The error is a *TokenError, or a
// *LengthError for a subject longer than MaxSubjectLen.
func (r RPC) Subject() (string, error) {
	t := r.tokens()
	for i, v := range t {
		if e := checkToken(rpcTokens[i], v); e != nil {
			return "", e
		}
	}
	return build("rpc", rpcRoot, t[:]...)
}

// String renders r like Subject but never fails; for logs only.
func (r RPC) String() string {
	t := r.tokens()
	return join(rpcRoot, t[:]...)
}

// ParseRPC parses a 6-token RPC subject (root aihub.rpc). A literal "*"
// token parses as "*". The error is a *SubjectError wrapping ErrGrammar or
// a *TokenError.
func ParseRPC(subject string) (RPC, error) {
	var t [6]string
	if n, ok := split(subject, t[:]); !ok {
		return RPC{}, countError("rpc", subject, n, 6)
	}
	if t[0] != "aihub" || t[1] != "rpc" {
		got := t[0] + "." + t[1]
		return RPC{}, rootError("rpc", subject, got, rpcRoot)
	}
	for i := 2; i < 6; i++ {
		if e := parseToken(rpcTokens[i-2], t[i]); e != nil {
			return RPC{}, parseError("rpc", subject, t[:], i, e)
		}
	}
	return RPC{Service: t[2], EntityType: t[3], EntityClass: t[4], EntityID: t[5]}, nil
}

// AgentConfig addresses the configuration fetch of an agent instance:
// aihub.rpc.config.agent.<class>.<id>. Subject validates class and id.
func AgentConfig(class, id string) RPC {
	return RPC{Service: ConfigService, EntityType: KindAgent, EntityClass: class, EntityID: id}
}

// ProcessConfig addresses the configuration fetch of a process instance:
// aihub.rpc.config.process.<class>.<id>. Subject validates class and id.
func ProcessConfig(class, id string) RPC {
	return RPC{Service: ConfigService, EntityType: KindProcess, EntityClass: class, EntityID: id}
}

// ConfigRequests is the config responder's pattern for one kind
// (KindAgent or KindProcess): aihub.rpc.config.<kind>.*.* . For any other
// kind it returns "", which every subscribe call rejects.
func ConfigRequests(kind string) string {
	switch kind {
	case KindAgent:
		return "aihub.rpc.config.agent.*.*"
	case KindProcess:
		return "aihub.rpc.config.process.*.*"
	}
	return ""
}
