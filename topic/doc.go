// Package topic builds, parses and validates the subjects of the Swiss AI
// Agent Protocol (spec/bus.md §1).
//
// There are four grammars, each a struct whose Subject method builds the
// subject and whose Parse function reads one back:
//
//	agent.<class>.<id>.<thread>.<display>.<run>.<control_event|display_event>.<name>.<event_id>  Agent
//	process.<class>.<id>.<walkthrough>.<work|work_request>.<name>.<event_id>                   Process
//	aihub.rpc.<service>.<entity_type>.<entity_class>.<entity_id>                               RPC
//	class_discovery.<agent|process>.<class|*>.*.<request|response>.<call_id>                  Discovery
//
// Building validates every token (D12): it must be non-empty and hold no
// '.', '*', '>', whitespace or control character, so a user id with a dot
// can never corrupt a subject. A rejected token is reported as a
// *TokenError that names the token by its grammar name ("thread_id") and
// the offending character and its position. A subject longer than
// MaxSubjectLen is refused with a *LengthError: NATS drops a connection that
// sends an over-long protocol line.
//
// Wildcards come only from the pattern builders: AgentPattern and
// ProcessPattern (empty fields become "*") and the named patterns of the
// reference's subscribers (ClassControl, ThreadDisplay, ...). Parsing is
// lenient about "*": a literal "*" token parses as "*", because the
// protocol publishes such subjects (discovery requests, process work
// without a process id).
//
// Stream names and their bound subjects (StreamName, StreamSubject and the
// process variants) are here too, so that every string the bus puts on the
// wire comes from one package.
package topic
