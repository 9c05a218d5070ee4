package topic

import (
	"fmt"
	"strings"
)

// Parse parses a subject of any grammar, chosen by its root, and returns
// an Agent, Process, RPC or Discovery value, like the reference's
// Topic.from_subject. A subject with another root (pipeline subjects
// included) is an error wrapping ErrGrammar.
func Parse(subject string) (any, error) {
	root, _, _ := strings.Cut(subject, ".")
	var (
		v   any
		err error
	)
	switch root {
	case agentRoot:
		v, err = ParseAgent(subject)
	case processRoot:
		v, err = ParseProcess(subject)
	case "aihub":
		v, err = ParseRPC(subject)
	case discoveryRoot:
		v, err = ParseDiscovery(subject)
	default:
		return nil, &SubjectError{Subject: subject, Pos: 0,
			Err: fmt.Errorf("%w: unknown root %q", ErrGrammar, clip(root))}
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}
