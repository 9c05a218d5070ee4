package topic

// RunsService is the RPC service of run status, an extension of this SDK
// (the Python reference has no such service): any replica of an agent
// class answers requests on
//
//	aihub.rpc.saap_runs.agent.<class>.<op>
//
// with op RunsStatus (one run's status) or RunsList (runs by thread and
// state, a page at a time). The requests and replies are JSON; package
// dispatch defines them.
const RunsService = "saap_runs"

// Operations of RunsService.
const (
	RunsStatus = "status"
	RunsList   = "list"
)

// Runs addresses a run-status request to the replicas of class:
// aihub.rpc.saap_runs.agent.<class>.<op>. Subject validates class and op.
func Runs(class, op string) RPC {
	return RPC{Service: RunsService, EntityType: KindAgent, EntityClass: class, EntityID: op}
}

// RunsRequests is the pattern a runner of class subscribes to for
// run-status requests: aihub.rpc.saap_runs.agent.<class>.* The error is a
// *TokenError for an invalid class.
func RunsRequests(class string) (string, error) {
	if e := checkToken("entity_class", class); e != nil {
		return "", e
	}
	return build("rpc", rpcRoot, RunsService, KindAgent, class, Wildcard)
}
